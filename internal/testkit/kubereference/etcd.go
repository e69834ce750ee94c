package kubereference

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Etcd is an etcd server the kube-reference script would start: the etcd binary on PATH
// (Debian's etcd-server), on loopback, without fsync.
type Etcd struct {
	URL  string // its client URL, for --etcd-servers
	proc *Process
}

// EtcdInstalled returns "" when the etcd binary is on PATH, else why a test that needs it
// skips.
func EtcdInstalled() string {
	if _, err := exec.LookPath("etcd"); err != nil {
		return fmt.Sprintf("etcd is not installed (%v); the kube-reference script installs Debian's etcd-server", err)
	}
	return ""
}

// StartEtcd starts etcd on dir/etcd-data (removed first: every start is a new cluster), its log
// dir/etcd.log, and waits until it is healthy.
func StartEtcd(ctx context.Context, dir string) (*Etcd, error) {
	if why := EtcdInstalled(); why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	data := filepath.Join(dir, "etcd-data")
	if err := os.RemoveAll(data); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	client, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	peer, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	clientURL, peerURL := "http://127.0.0.1:"+strconv.Itoa(client), "http://127.0.0.1:"+strconv.Itoa(peer)
	args := []string{"--data-dir", data, "--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default=" + peerURL, "--unsafe-no-fsync"}
	e := &Etcd{URL: clientURL}
	if e.proc, err = StartProcess("etcd", args, filepath.Join(dir, "etcd.log")); err != nil {
		return nil, err
	}
	if err := e.waitHealthy(ctx); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// waitHealthy polls /health until etcd says it is, it exits, or ReadyTimeout passes.
func (e *Etcd) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(ReadyTimeout)
	for {
		if resp, err := get(ctx, client, e.URL+"/health"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"health":"true"`) {
				return nil
			}
		}
		select {
		case <-e.proc.Exited():
			return fmt.Errorf("etcd exited before it was healthy: %v\n%s", e.proc.Err(), e.proc.LogTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not healthy within %v\n%s", ReadyTimeout, e.proc.LogTail())
		}
	}
}

// Stop stops etcd (SIGTERM, then SIGKILL after StopTimeout).
func (e *Etcd) Stop() error { return e.proc.Stop() }

// get is client.Get bound to ctx.
func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}
