package hardening

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

var lapisBin string // the binary TestMain built

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if lapisBin = os.Getenv("LAPIS_HARDENING_BIN"); lapisBin != "" {
		return m.Run() // a binary built elsewhere, e.g. from an older commit
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	tmp, err := os.MkdirTemp("", "lapis-hardening-")
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

// lapisProc is one lapis server on its own data directory; it may be killed and restarted.
type lapisProc struct {
	dataDir    string
	kubeconfig string
	server     string // https://host:port, from the kubeconfig
	token      string
	caData     []byte

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	err    error         // cmd's exit error, valid after exited is closed
	log    *syncBuffer   // stderr of every run
}

// startLapis starts lapis on a fresh data directory and waits until it is ready. It is stopped
// when the test ends; its log is printed if the test failed.
func startLapis(t testing.TB) *lapisProc {
	t.Helper()
	l := &lapisProc{dataDir: t.TempDir(), log: &syncBuffer{}}
	l.kubeconfig = filepath.Join(l.dataDir, "kubeconfig")
	t.Cleanup(func() {
		l.mu.Lock()
		cmd, exited := l.cmd, l.exited
		l.mu.Unlock()
		select {
		case <-exited:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		if t.Failed() {
			t.Logf("lapis log (%s), last 20 KB:\n%s", l.dataDir, tail(l.log.String(), 20<<10))
		}
	})
	if err := l.start(); err != nil {
		t.Fatal(err)
	}
	return l
}

// start runs lapis and waits for a kubeconfig newer than any left by an earlier run, then for
// /readyz.
func (l *lapisProc) start() error {
	var old os.FileInfo
	if fi, err := os.Stat(l.kubeconfig); err == nil {
		old = fi
	}
	args := []string{"serve", "--data-dir", l.dataDir, "--listen", "127.0.0.1:0"}
	cmd := exec.Command(lapisBin, args...)
	cmd.Stdout, cmd.Stderr = l.log, l.log
	fmt.Fprintf(l.log, "--- lapis %s\n", strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting lapis: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(exited)
	}()
	l.mu.Lock()
	l.cmd, l.exited = cmd, exited
	l.mu.Unlock()

	deadline := time.Now().Add(30 * time.Second)
	for {
		// The kubeconfig is written atomically (rename), so a new one is a different file.
		if fi, err := os.Stat(l.kubeconfig); err == nil && (old == nil || !os.SameFile(old, fi)) {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("lapis exited before writing %s: %v\n%s", l.kubeconfig, l.exitErr(), tail(l.log.String(), 20<<10))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lapis wrote no kubeconfig within 30s\n%s", tail(l.log.String(), 20<<10))
		}
	}
	cfg, err := clientcmd.LoadFromFile(l.kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %v", l.kubeconfig, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return fmt.Errorf("kubeconfig %s has no usable current context", l.kubeconfig)
	}
	l.mu.Lock()
	l.server = cfg.Clusters[ctx.Cluster].Server
	l.caData = cfg.Clusters[ctx.Cluster].CertificateAuthorityData
	l.token = cfg.AuthInfos[ctx.AuthInfo].Token
	l.mu.Unlock()
	if !l.ready(30 * time.Second) {
		return fmt.Errorf("lapis not ready within 30s of writing its kubeconfig\n%s", tail(l.log.String(), 20<<10))
	}
	return nil
}

// url is lapis's address, which changes with each start.
func (l *lapisProc) url() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.server
}

func (l *lapisProc) exitErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// pid is the process id of the running lapis.
func (l *lapisProc) pid() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmd.Process.Pid
}

// running reports whether the current lapis process is still alive.
func (l *lapisProc) running() bool {
	l.mu.Lock()
	exited := l.exited
	l.mu.Unlock()
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (l *lapisProc) kill() {
	l.mu.Lock()
	cmd, exited := l.cmd, l.exited
	l.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
}

// ready polls /readyz until it answers 200 or timeout passes.
func (l *lapisProc) ready(timeout time.Duration) bool {
	c := l.client(5 * time.Second)
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.Get(l.url() + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client returns an HTTP/2 client trusting lapis's CA, as kubectl and client-go talk to it.
func (l *lapisProc) client(timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(l.caData)
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
		MaxIdleConns:      64, MaxIdleConnsPerHost: 64,
	}}
}

// request builds an authenticated request to lapis.
func (l *lapisProc) request(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, l.url()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	return req, nil
}

// rssKiB reads VmRSS (current) and VmHWM (peak) of pid from /proc, in KiB.
func rssKiB(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %v", k, v, err)
		}
		if k == "VmRSS" {
			rss = n
		} else {
			hwm = n
		}
	}
	return rss, hwm, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
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

// Len is how many bytes were logged so far: an offset to read new lines from.
func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
