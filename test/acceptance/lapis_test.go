// Package acceptance drives a real lapis binary with the real kubectl, the way a user would.
//
// TestMain builds ./cmd/lapis once; startLapis runs it on a fresh data directory and returns a
// handle whose kubectl method runs /usr/bin/kubectl (whatever kubectl is on PATH) against it.
package acceptance

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

var (
	lapisBin    string // the binary TestMain built
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
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	tmp, err := os.MkdirTemp("", "lapis-acceptance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	lapisBin = filepath.Join(tmp, "lapis")
	build := exec.Command("go", "build", "-o", lapisBin, "./cmd/lapis")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lapis:", err)
		return 1
	}
	return m.Run()
}

// lapisProc is one lapis server on its own data directory.
type lapisProc struct {
	dataDir    string
	flags      []string
	cacheDir   string // kubectl's discovery cache, private to this server
	kubeconfig string
	server     string // https://host:port, from the kubeconfig
	token      string
	caData     []byte

	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	err    error         // cmd's exit error, valid after exited is closed
	log    *syncBuffer   // stderr of every run, kept for failure reports
}

// startLapis starts lapis on a fresh data directory with --listen 127.0.0.1:0 plus flags, and
// waits until it has written its kubeconfig. The server is stopped when the test ends.
func startLapis(t testing.TB, flags ...string) *lapisProc {
	t.Helper()
	if skipMessage != "" {
		t.Skip(skipMessage)
	}
	l := &lapisProc{dataDir: t.TempDir(), cacheDir: t.TempDir(), flags: flags, log: &syncBuffer{}}
	l.kubeconfig = filepath.Join(l.dataDir, "kubeconfig")
	t.Cleanup(func() {
		if l.running() {
			_ = l.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-l.exited:
			case <-time.After(30 * time.Second):
				_ = l.cmd.Process.Kill()
				<-l.exited
			}
		}
		if t.Failed() {
			t.Logf("lapis log (%s):\n%s", l.dataDir, l.log.String())
		}
	})
	l.start(t)
	return l
}

func (l *lapisProc) running() bool {
	if l.cmd == nil {
		return false
	}
	select {
	case <-l.exited:
		return false
	default:
		return true
	}
}

// start runs lapis and waits for a kubeconfig newer than any left by an earlier run.
func (l *lapisProc) start(t testing.TB) {
	t.Helper()
	var old os.FileInfo
	if fi, err := os.Stat(l.kubeconfig); err == nil {
		old = fi
	}
	args := append([]string{"serve", "--data-dir", l.dataDir, "--listen", "127.0.0.1:0"}, l.flags...)
	l.cmd = exec.Command(lapisBin, args...)
	l.cmd.Stdout, l.cmd.Stderr = l.log, l.log
	fmt.Fprintf(l.log, "--- lapis %s\n", strings.Join(args, " "))
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("starting lapis: %v", err)
	}
	l.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		l.err = cmd.Wait()
		close(exited)
	}(l.cmd, l.exited)

	deadline := time.Now().Add(30 * time.Second)
	for {
		// The kubeconfig is written atomically (rename), so a new one is a different file.
		if fi, err := os.Stat(l.kubeconfig); err == nil && (old == nil || !os.SameFile(old, fi)) {
			break
		}
		select {
		case <-l.exited:
			t.Fatalf("lapis exited before writing %s: %v\n%s", l.kubeconfig, l.err, l.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("lapis wrote no kubeconfig within 30s\n%s", l.log.String())
		}
	}
	cfg, err := clientcmd.LoadFromFile(l.kubeconfig)
	if err != nil {
		t.Fatalf("reading %s: %v", l.kubeconfig, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kubeconfig %s has no usable current context", l.kubeconfig)
	}
	l.server = cfg.Clusters[ctx.Cluster].Server
	l.caData = cfg.Clusters[ctx.Cluster].CertificateAuthorityData
	l.token = cfg.AuthInfos[ctx.AuthInfo].Token
}

// Stop sends SIGTERM and waits; lapis must exit with status 0.
func (l *lapisProc) Stop(t testing.TB) {
	t.Helper()
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("lapis did not exit within 30s of SIGTERM")
	}
	if l.err != nil {
		t.Fatalf("lapis exited uncleanly after SIGTERM: %v\n%s", l.err, l.log.String())
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (l *lapisProc) Kill() {
	_ = l.cmd.Process.Kill()
	<-l.exited
}

// Restart stops lapis (SIGTERM) if it is running and starts it again on the same data dir.
func (l *lapisProc) Restart(t testing.TB) {
	t.Helper()
	if l.running() {
		l.Stop(t)
	}
	l.start(t)
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

// eventually polls cond until it reports true, failing the test if the deadline passes first;
// cond's message says what was last seen.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, last := poll(timeout, cond); !ok {
		t.Fatalf("%s: not true after %v; last seen: %s", what, timeout, last)
	}
}

// poll calls cond until it reports true or timeout passes, and returns its last answer.
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok || time.Now().After(deadline) {
			return ok, last
		}
		time.Sleep(50 * time.Millisecond)
	}
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

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
