package kubereference

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Version is the kube-apiserver the differential tests compare with.
const Version = "v1.37.2"

// Built returns "" when kube-apiserver is built, else why a test that needs it skips.
func Built() string {
	bin := BinDir()
	if _, err := os.Stat(filepath.Join(bin, "kube-apiserver")); err != nil {
		return fmt.Sprintf("kube-apiserver %s is not built (%v); `%s start DIR` builds it once (about 15 minutes)", Version, err, Script())
	}
	return ""
}

// Script is shared/reference/kube-reference beside the repository.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "reference", "kube-reference")
}

// Start runs kube-apiserver (and what env asks for: KCM, KCM_CONTROLLERS,
// KUBE_APISERVER_ARGS) in dir and returns its admin kubeconfig's path.
func Start(dir string, env ...string) (string, error) {
	cmd := exec.Command("bash", Script(), "start", dir)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Stop stops what Start started in dir, killing what has not exited after 5 s.
func Stop(dir string) {
	var pids []int
	for _, name := range []string{"kube-controller-manager.pid", "kube-apiserver.pid", "etcd.pid"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	_ = exec.Command("bash", Script(), "stop", dir).Run()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
