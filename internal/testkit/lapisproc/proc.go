package lapisproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

const (
	// StartTimeout bounds each wait of Start: for the kubeconfig, then for /readyz.
	StartTimeout = 30 * time.Second
	// StopTimeout bounds how long Stop waits after SIGTERM.
	StopTimeout = 30 * time.Second
)

// Options say how to run lapis.
type Options struct {
	Bin     string   // the lapis binary (Build)
	DataDir string   // --data-dir; kept across restarts
	Flags   []string // `lapis serve` flags after --data-dir DIR --listen 127.0.0.1:0
	// WaitReady makes Start wait for /readyz to answer 200 after the kubeconfig is written.
	WaitReady bool
	// LogTail limits the log quoted in errors and failure reports to its last LogTail bytes
	// (0: all of it).
	LogTail int
}

// Proc is one lapis server on its own data directory; it may be stopped, killed and started
// again there. Its methods are safe for concurrent use.
type Proc struct {
	opts       Options
	kubeconfig string
	log        *Log

	mu     sync.Mutex
	run    *run // the latest run; nil before the first Start
	server string
	token  string
	caData []byte
}

// run is one lapis process.
type run struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	err    error         // cmd's exit error, valid once exited is closed
}

// New returns a Proc that is not started yet.
func New(opts Options) *Proc {
	return &Proc{opts: opts, kubeconfig: filepath.Join(opts.DataDir, "kubeconfig"), log: &Log{}}
}

// StartTest starts lapis for t, failing t if it cannot. When t ends lapis gets SIGTERM (SIGKILL
// after StopTimeout), and its log is printed if t failed.
func StartTest(t testing.TB, opts Options) *Proc {
	t.Helper()
	p := New(opts)
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			last := ""
			if opts.LogTail > 0 {
				last = fmt.Sprintf(", last %d KB", opts.LogTail>>10)
			}
			t.Logf("lapis log (%s)%s:\n%s", opts.DataDir, last, p.logText())
		}
	})
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return p
}

// Start runs lapis and waits (StartTimeout) for a kubeconfig newer than any an earlier run
// left, then, with WaitReady, for /readyz; it reads the server, token and CA from the
// kubeconfig.
func (p *Proc) Start(ctx context.Context) error {
	var old os.FileInfo
	if fi, err := os.Stat(p.kubeconfig); err == nil {
		old = fi
	}
	args := append([]string{"serve", "--data-dir", p.opts.DataDir, "--listen", "127.0.0.1:0"}, p.opts.Flags...)
	// Not CommandContext: lapis outlives this call.
	cmd := exec.Command(p.opts.Bin, args...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	fmt.Fprintf(p.log, "--- lapis %s\n", strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting lapis: %v", err)
	}
	r := &run{cmd: cmd, exited: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	p.mu.Lock()
	p.run = r
	p.mu.Unlock()

	deadline := time.Now().Add(StartTimeout)
	for {
		// The kubeconfig is written atomically (rename), so a new one is a different file; the
		// file system may give it the inode of the one it replaces (removed at start after a
		// SIGKILL), which its modification time then tells apart.
		if fi, err := os.Stat(p.kubeconfig); err == nil && (old == nil || !os.SameFile(old, fi) || !fi.ModTime().Equal(old.ModTime())) {
			break
		}
		select {
		case <-r.exited:
			return fmt.Errorf("lapis exited before writing %s: %v\n%s", p.kubeconfig, r.err, p.logText())
		case <-ctx.Done():
			return fmt.Errorf("waiting for lapis to write %s: %v\n%s", p.kubeconfig, ctx.Err(), p.logText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lapis wrote no kubeconfig within %v\n%s", StartTimeout, p.logText())
		}
	}
	cfg, err := clientcmd.LoadFromFile(p.kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %v", p.kubeconfig, err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil || cfg.AuthInfos[kctx.AuthInfo] == nil {
		return fmt.Errorf("kubeconfig %s has no usable current context", p.kubeconfig)
	}
	p.mu.Lock()
	p.server = cfg.Clusters[kctx.Cluster].Server
	p.caData = cfg.Clusters[kctx.Cluster].CertificateAuthorityData
	p.token = cfg.AuthInfos[kctx.AuthInfo].Token
	p.mu.Unlock()
	if p.opts.WaitReady {
		rctx, cancel := context.WithTimeout(ctx, StartTimeout)
		defer cancel()
		if !p.Ready(rctx) {
			return fmt.Errorf("lapis not ready within %v of writing its kubeconfig\n%s", StartTimeout, p.logText())
		}
	}
	return nil
}

// Stop sends SIGTERM and waits for lapis to exit, for StopTimeout at most. It reports lapis
// still running then (or when ctx ends) and an exit other than status 0.
func (p *Proc) Stop(ctx context.Context) error {
	r := p.current()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-ctx.Done():
		return fmt.Errorf("lapis did not exit after SIGTERM: %v", ctx.Err())
	case <-time.After(StopTimeout):
		return fmt.Errorf("lapis did not exit within %v of SIGTERM", StopTimeout)
	}
	if r.err != nil {
		return fmt.Errorf("lapis exited uncleanly after SIGTERM: %v\n%s", r.err, p.logText())
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	r := p.current()
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// Close ends lapis if it runs: SIGTERM, then SIGKILL if it is still running after
// StopTimeout.
func (p *Proc) Close() {
	if !p.Running() {
		return
	}
	_ = p.Stop(context.Background())
	if p.Running() {
		p.Kill()
	}
}

// Restart stops lapis (SIGTERM) if it is running and starts it again on the same data dir.
func (p *Proc) Restart(ctx context.Context) error {
	if p.Running() {
		if err := p.Stop(ctx); err != nil {
			return err
		}
	}
	return p.Start(ctx)
}

func (p *Proc) current() *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run
}

// Running reports whether the latest lapis process is still alive.
func (p *Proc) Running() bool {
	r := p.current()
	return r != nil && !r.over()
}

// ExitErr is how the latest process exited (nil while it runs or after status 0).
func (p *Proc) ExitErr() error {
	if r := p.current(); r != nil && r.over() {
		return r.err
	}
	return nil
}

// over reports whether r's process has exited.
func (r *run) over() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// Process is the latest lapis process (nil before the first Start).
func (p *Proc) Process() *os.Process {
	if r := p.current(); r != nil {
		return r.cmd.Process
	}
	return nil
}

// DataDir is lapis's --data-dir.
func (p *Proc) DataDir() string { return p.opts.DataDir }

// Kubeconfig is the path of the admin kubeconfig lapis writes in its data dir.
func (p *Proc) Kubeconfig() string { return p.kubeconfig }

// Server is lapis's https://host:port, which changes with each start.
func (p *Proc) Server() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.server
}

// Token is the admin bearer token from the kubeconfig.
func (p *Proc) Token() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.token
}

// CAData is the PEM of lapis's CA, from the kubeconfig.
func (p *Proc) CAData() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.caData
}

// Log is the output of every run so far.
func (p *Proc) Log() *Log { return p.log }

// logText is the log as errors and failure reports quote it.
func (p *Proc) logText() string { return Tail(p.log.String(), p.opts.LogTail) }

// RSSKiB reads the current (VmRSS) and peak (VmHWM) resident memory of the latest lapis
// process from /proc, in KiB.
func (p *Proc) RSSKiB() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Process().Pid))
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
