// Package acceptance drives a real lapis binary with the real kubectl, the way a user would.
//
// TestMain builds ./cmd/lapis once (or takes $LAPIS_BIN; see internal/testkit/lapisproc); startLapis runs it
// on a fresh data directory and returns a handle whose kubectl method runs /usr/bin/kubectl
// (whatever kubectl is on PATH) against it.
package acceptance

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

var (
	lapisBin    string // the binary TestMain built, or $LAPIS_BIN
	kubectlBin  string // kubectl on PATH
	skipMessage string // why every test is skipped, if one is
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if kubectlBin, err = exec.LookPath("kubectl"); err != nil {
		skipMessage = "kubectl is not on PATH; the acceptance tests need kubectl 1.32"
		return m.Run()
	}
	return lapisproc.Main(context.Background(), func(bin string) int {
		lapisBin = bin
		return m.Run()
	})
}

// lapisProc is one lapis server on its own data directory, with kubectl's cache beside it.
type lapisProc struct {
	proc     *lapisproc.Proc
	cacheDir string // kubectl's discovery cache, private to this server

	// The current run's facts, as the tests read them; start refreshes them.
	dataDir    string
	kubeconfig string
	server     string // https://host:port, from the kubeconfig
	token      string
	caData     []byte
	log        *lapisproc.Log // output of every run, printed when the test failed
}

// startLapis starts lapis on a fresh data directory with --listen 127.0.0.1:0 plus flags, and
// waits until it has written its kubeconfig. The server is stopped when the test ends.
func startLapis(t testing.TB, flags ...string) *lapisProc {
	t.Helper()
	return startLapisIn(t, t.TempDir(), flags...)
}

// startLapisIn is startLapis with the data directory at dataDir.
func startLapisIn(t testing.TB, dataDir string, flags ...string) *lapisProc {
	t.Helper()
	if skipMessage != "" {
		t.Skip(skipMessage)
	}
	l := &lapisProc{cacheDir: t.TempDir()}
	l.proc = lapisproc.StartTest(t, lapisproc.Options{Bin: lapisBin, DataDir: dataDir, Flags: flags})
	l.refresh()
	return l
}

// refresh copies the current run's facts into l's fields.
func (l *lapisProc) refresh() {
	l.dataDir, l.kubeconfig, l.log = l.proc.DataDir(), l.proc.Kubeconfig(), l.proc.Log()
	l.server, l.token, l.caData = l.proc.Server(), l.proc.Token(), l.proc.CAData()
}

func (l *lapisProc) running() bool { return l.proc.Running() }

// exitErr is how lapis exited, once it has.
func (l *lapisProc) exitErr() error { return l.proc.ExitErr() }

// start runs lapis again and waits for a kubeconfig newer than the last one.
func (l *lapisProc) start(t testing.TB) {
	t.Helper()
	if err := l.proc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.refresh()
}

// Stop sends SIGTERM and waits; lapis must exit with status 0.
func (l *lapisProc) Stop(t testing.TB) {
	t.Helper()
	if err := l.proc.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (l *lapisProc) Kill() { l.proc.Kill() }

// Restart stops lapis (SIGTERM) if it is running and starts it again on the same data dir.
func (l *lapisProc) Restart(t testing.TB) {
	t.Helper()
	if err := l.proc.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.refresh()
}

// kubectl runs kubectl against this server.
func (l *lapisProc) kubectl(args ...string) (stdout, stderr string, err error) {
	return l.kubectlIn("", args...)
}

// kubectlIn runs kubectl with stdin (for `-f -`).
func (l *lapisProc) kubectlIn(stdin string, args ...string) (stdout, stderr string, err error) {
	return runCmd(l.env(), stdin, kubectlBin, args...)
}

func (l *lapisProc) env() []string {
	env := []string{"KUBECONFIG=" + l.kubeconfig, "KUBECACHEDIR=" + l.cacheDir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "KUBECACHEDIR=") {
			env = append(env, kv)
		}
	}
	return env
}

func runCmd(env []string, stdin, bin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// must runs kubectl and fails the test unless it succeeds; it returns stdout.
func (l *lapisProc) must(t testing.TB, args ...string) string {
	t.Helper()
	return l.mustIn(t, "", args...)
}

func (l *lapisProc) mustIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := l.kubectlIn(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fails runs kubectl, reports an error if it succeeds, and returns stderr.
func (l *lapisProc) fails(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := l.kubectlIn(stdin, args...)
	if err == nil {
		t.Errorf("kubectl %s succeeded, want an error\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
	}
	return errOut
}

// do sends one HTTPS request to lapis, trusting its CA; with token it carries the admin token.
func (l *lapisProc) do(t testing.TB, method, path, contentType, body string, token bool) (int, string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(l.caData) {
		t.Fatalf("kubeconfig has no usable CA")
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(method, l.server+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+l.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// writeFile writes content to name in a fresh temp dir and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wantEqual fails unless got equals want (after trimming surrounding whitespace).
func wantEqual(t testing.TB, what, got, want string) {
	t.Helper()
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("%s:\n got: %q\nwant: %q", what, strings.TrimSpace(got), strings.TrimSpace(want))
	}
}

// wantContains fails unless got contains want.
func wantContains(t testing.TB, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s:\n got: %q\nwant it to contain: %q", what, got, want)
	}
}

// step is a named part of a test, run as a subtest against the test's lapis.
type step struct {
	name string
	run  func(*testing.T, *lapisProc)
}

// inOrder runs steps as subtests of t, one after another: each may build on what the ones
// before left.
func inOrder(t *testing.T, l *lapisProc, steps []step) {
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { s.run(t, l) })
	}
}

// inParallel runs steps as parallel subtests of t: each works in a namespace of its own.
func inParallel(t *testing.T, l *lapisProc, steps []step) {
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, l)
		})
	}
}
