// Package lapisproc runs the real lapis binary for the tests that drive it from outside
// (test/acceptance, test/hardening): it owns building ./cmd/lapis once per test binary, starting
// `lapis serve --data-dir DIR --listen 127.0.0.1:0 [flags]`, waiting until it is ready, and
// stopping (SIGTERM), killing (SIGKILL) and restarting it on the same data dir. A Proc also
// keeps what a test needs to talk to lapis (the kubeconfig's server, token and CA), the output
// of every run, and its memory use.
//
// What to send lapis, and with which client (kubectl, raw HTTP), stays with the tests.
//
// The binary to test: Build returns $LAPIS_BIN (or another variable the caller names first)
// when set, e.g. one built from an older commit, else builds ./cmd/lapis into a temporary
// directory. TestMain gets it once (Main) and passes the path to every Proc in Options.Bin;
// the package has no state of its own.
package lapisproc
