package kubereference

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a started program whose output goes to a log file: kube-apiserver,
// kube-controller-manager, etcd, or another reference binary a test runs beside them.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // valid once exited is closed
}

// StartProcess runs bin with args, its output appended to logPath after a line naming the
// command.
func StartProcess(bin string, args []string, logPath string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "--- %s %q\n", bin, args)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{name: filepath.Base(bin), cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// Stop sends SIGTERM and waits StopTimeout for the process to exit, then kills it; the error
// says when it had to be killed.
func (p *Process) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(StopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("%s did not exit within %v of SIGTERM: killed", p.name, StopTimeout)
}

// Exited is closed once the process has exited; Err is then how.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process exited (nil before it has).
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// LogPath is the file its output goes to.
func (p *Process) LogPath() string { return p.logPath }

// LogTail is the last 4 KiB of the log.
func (p *Process) LogTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4096 {
		b = append([]byte("…"), b[len(b)-4096:]...)
	}
	return string(b)
}
