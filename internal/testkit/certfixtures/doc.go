// Package certfixtures makes certificate material for tests: what differential tests put in
// their certificates.k8s.io fixtures, the same on every run (a fixed ed25519 seed), so that both
// servers are sent byte-identical requests (Placeholders); and a CA with one certificate it
// signs, for the servers tests run (Sign).
package certfixtures
