package acceptance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// TestKubeconfigLifecycle: the admin kubeconfig exists exactly while lapis serves. SIGTERM
// removes it; one left by a killed lapis is removed by the next start before that is ready.
func TestKubeconfigLifecycle(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	if _, err := os.Stat(l.kubeconfig); err != nil {
		t.Fatalf("kubeconfig of a serving lapis: %v", err)
	}
	l.Stop(t)
	if _, err := os.Stat(l.kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig after SIGTERM: %v", err)
	}

	l.start(t)
	l.Kill()
	if _, err := os.Stat(l.kubeconfig); err != nil {
		t.Fatalf("a killed lapis cannot remove its kubeconfig, yet it is gone: %v", err)
	}
	// Restarted on an etcd that does not answer, lapis is never ready: the stale kubeconfig
	// goes at once and no new one comes.
	p := startRaw(t, l.dataDir, "--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	poll.Eventually(t, 5*time.Second, "the stale kubeconfig removed", func() (bool, string) {
		_, err := os.Stat(l.kubeconfig)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(l.kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig of a lapis that is not ready: %v", err)
	}
	p.terminate(t, 5*time.Second, false)
}

// TestSIGTERMWhileStarting: SIGTERM stops lapis at any moment of its start, promptly, leaving
// no kubeconfig: cleanly (status 0) once lapis runs, by the signal itself while the process is
// still initializing (before main: nothing started yet).
func TestSIGTERMWhileStarting(t *testing.T) {
	t.Parallel()
	if skipMessage != "" {
		t.Skip(skipMessage)
	}
	for _, c := range []struct {
		name  string
		after time.Duration
		flags []string
	}{
		{"at once", 0, nil},
		{"after 50ms", 50 * time.Millisecond, nil},
		{"after 150ms", 150 * time.Millisecond, nil},
		{"after 300ms", 300 * time.Millisecond, nil},
		// Connecting to an etcd that does not answer takes up to 10 s: SIGTERM ends the wait.
		{"waiting for etcd", -1, []string{"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startRaw(t, dir, c.flags...)
			if c.after >= 0 {
				time.Sleep(c.after)
				p.terminate(t, 5*time.Second, true)
			} else {
				// lapis is running: it has tried etcd and says so.
				poll.Eventually(t, 10*time.Second, "lapis trying etcd", func() (bool, string) {
					out := p.output()
					return strings.Contains(out, "connection refused"), out
				})
				p.terminate(t, 5*time.Second, false)
				wantContains(t, "lapis's log", p.output(), `msg="stopped while starting"`)
			}
			if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !os.IsNotExist(err) {
				t.Errorf("kubeconfig after SIGTERM: %v", err)
			}
		})
	}
}

// rawLapis is a lapis process started without waiting for anything.
type rawLapis struct {
	cmd    *exec.Cmd
	out    *lapisproc.Log
	exited chan error
}

func (p *rawLapis) output() string { return p.out.String() }

func startRaw(t *testing.T, dataDir string, flags ...string) *rawLapis {
	t.Helper()
	p := &rawLapis{out: &lapisproc.Log{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(lapisBin, append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0"}, flags...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// terminate sends SIGTERM and requires an exit within limit: with status 0, or, if early,
// by the signal.
func (p *rawLapis) terminate(t *testing.T, limit time.Duration, early bool) {
	t.Helper()
	sent := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		var exit *exec.ExitError
		if early && errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
			t.Logf("ended by SIGTERM %v after it, before lapis handled signals", time.Since(sent).Round(time.Millisecond))
			return
		}
		if err != nil {
			t.Errorf("lapis exited with %v after SIGTERM\n%s", err, p.out)
		}
		t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	case <-time.After(limit):
		t.Errorf("lapis still running %v after SIGTERM\n%s", limit, p.out)
	}
}
