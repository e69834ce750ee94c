package lapistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// BinEnv is the environment variable naming a lapis binary to use.
const BinEnv = "LAPIS_BIN"

// Defaults for Options' zero values.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStopTimeout  = 30 * time.Second
)

// Options say which lapis to run and how.
type Options struct {
	// Bin is the lapis binary; empty: $LAPIS_BIN, else `lapis` on PATH, else built from
	// SourceDir.
	Bin string
	// SourceDir is a lapis source tree (the directory holding its go.mod) to build the binary
	// from when none is found; built once per test process.
	SourceDir string
	// Flags are more `lapis serve` flags (e.g. "--authorization-mode=AlwaysAllow").
	Flags []string
	// StartTimeout bounds the wait for lapis to be ready; StopTimeout the wait after SIGTERM
	// before SIGKILL. Zero: the defaults.
	StartTimeout, StopTimeout time.Duration
}

// Server is a running lapis.
type Server struct {
	// Config reaches lapis as its admin (group system:masters).
	Config *rest.Config
	// DataDir is lapis's data directory; Kubeconfig the admin kubeconfig in it (for kubectl).
	DataDir, Kubeconfig string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit error, once exited is closed
	log    *syncBuffer
	stop   time.Duration
	once   sync.Once
}

// Start runs lapis for t on a fresh data directory and returns once it is ready; it fails t if
// lapis cannot start. lapis is stopped when t ends, and its output logged if t failed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := StartContext(t.Context(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("lapis output:\n%s", s.Output())
		}
	})
	return s
}

// StartContext runs lapis on dataDir and returns once it is ready (it has written its
// kubeconfig). The caller stops it with Stop.
func StartContext(ctx context.Context, dataDir string, opts Options) (*Server, error) {
	bin, err := FindBinary(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	s := &Server{DataDir: dataDir, Kubeconfig: filepath.Join(dataDir, "kubeconfig"), exited: make(chan struct{}), log: &syncBuffer{}, stop: opts.StopTimeout}
	// Not CommandContext: lapis outlives this call.
	s.cmd = exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0"}, opts.Flags...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting lapis: %w", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	timeout := time.NewTimer(opts.StartTimeout)
	defer timeout.Stop()
	// lapis writes its kubeconfig (atomically) once it is ready, and removes it when it stops.
	for {
		if _, err := os.Stat(s.Kubeconfig); err == nil {
			break
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("lapis exited before it was ready: %v\n%s", s.err, s.Output())
		case <-ctx.Done():
			_ = s.Stop()
			return nil, fmt.Errorf("waiting for lapis: %w", ctx.Err())
		case <-timeout.C:
			_ = s.Stop()
			return nil, fmt.Errorf("lapis was not ready within %v\n%s", opts.StartTimeout, s.Output())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("reading lapis's kubeconfig: %w", err)
	}
	s.Config = cfg
	return s, nil
}

// Stop sends lapis SIGTERM and waits for it to exit (SIGKILL after the stop timeout). It
// reports an unclean exit. Stopping again does nothing.
func (s *Server) Stop() error {
	var err error
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
			if s.err != nil {
				err = fmt.Errorf("lapis exited uncleanly: %w", s.err)
			}
		case <-time.After(s.stop):
			_ = s.cmd.Process.Kill()
			<-s.exited
			err = fmt.Errorf("lapis did not stop within %v of SIGTERM; killed", s.stop)
		}
	})
	return err
}

// Output is what lapis has written to stdout and stderr so far.
func (s *Server) Output() string { return s.log.String() }

// builds remembers binaries built from source directories in this process: building lapis
// takes seconds even when cached.
var builds = struct {
	sync.Mutex
	bins map[string]string
}{bins: map[string]string{}}

// FindBinary returns the lapis binary opts selects: opts.Bin, $LAPIS_BIN, `lapis` on PATH,
// else one built from opts.SourceDir.
func FindBinary(ctx context.Context, opts Options) (string, error) {
	if opts.Bin != "" {
		return opts.Bin, nil
	}
	if bin := os.Getenv(BinEnv); bin != "" {
		return bin, nil
	}
	if bin, err := exec.LookPath("lapis"); err == nil {
		return bin, nil
	}
	if opts.SourceDir == "" {
		return "", errors.New("no lapis binary: set Options.Bin or $LAPIS_BIN, put lapis on PATH, or set Options.SourceDir to a lapis clone to build it")
	}
	src, err := filepath.Abs(opts.SourceDir)
	if err != nil {
		return "", err
	}
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[src]; ok {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "lapistest-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "lapis")
	var out bytes.Buffer
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lapis")
	build.Dir, build.Stdout, build.Stderr = src, &out, &out
	build.Env = append(os.Environ(), "GOWORK=off")
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("building lapis in %s: %w\n%s", src, err, out.String())
	}
	builds.bins[src] = bin
	return bin, nil
}

// syncBuffer is a bytes.Buffer safe for the process's writers and the test's reader.
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
