package againstreference

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/testkit/inprocess"
)

// servers are the two servers under comparison, set up once by TestMain.
var servers struct {
	lapis, reference *rest.Config
	skipReason       string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lapis, err := inprocess.Start(ctx, "lapis-differential-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer lapis.Stop()
	dir := lapis.Dir()
	if servers.lapis, err = clientcmd.BuildConfigFromFlags("", lapis.Kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	refDir := filepath.Join(dir, "reference")
	script := referenceScript()
	kubeconfig, err := startReference(script, refDir)
	if err != nil {
		servers.skipReason = fmt.Sprintf("reference server not available (%s): %v", script, err)
	} else {
		defer stopReference(script, refDir)
		if servers.reference, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			servers.skipReason = err.Error()
		}
	}
	return m.Run()
}

// referenceScript is shared/reference/reference-server beside the repository.
func referenceScript() string {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	return filepath.Join(repo, "..", "shared", "reference", "reference-server")
}

// startReference starts the reference server and waits until it answers.
func startReference(script, dir string) (string, error) {
	if _, err := os.Stat(script); err != nil {
		return "", err
	}
	cmd := exec.Command("bash", script, "start", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, lastLines(string(out), 5))
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(cfg.Host + "/healthz") // its /readyz waits for core informers it never has
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return kubeconfig, nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return "", fmt.Errorf("reference server did not become ready; see %s/apiserver.log", dir)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// both returns dynamic clients for lapis and the reference, or skips.
func both(t *testing.T) (lapis, reference dynamic.Interface) {
	t.Helper()
	if servers.reference == nil {
		t.Skip(servers.skipReason)
	}
	l, err := dynamic.NewForConfig(servers.lapis)
	if err != nil {
		t.Fatal(err)
	}
	r, err := dynamic.NewForConfig(servers.reference)
	if err != nil {
		t.Fatal(err)
	}
	return l, r
}

// stopReference stops the reference server and its etcd, killing what does not exit in time (an
// apiserver whose etcd went first can hang in its shutdown).
func stopReference(script, dir string) {
	var pids []int
	for _, name := range []string{"apiserver.pid", "etcd.pid"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	_ = exec.Command("bash", script, "stop", dir).Run()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
