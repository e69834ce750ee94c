package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/aggregator"
	"github.com/lapis-dev/lapis/internal/storage"
)

// TestHealthWhileEtcdIsGone: with an external etcd that stops, /readyz, /livez and /healthz
// answer failure within the etcd checks' timeout (never hang), and pass again by themselves
// once etcd is back. The etcd runs in this process (no etcd binary needed), reached over TCP.
func TestHealthWhileEtcdIsGone(t *testing.T) {
	ctx := context.Background()
	etcdDir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	etcdURL := fmt.Sprintf("http://%s", l.Addr())
	l.Close()
	etcd, err := storage.OpenEmbedded(ctx, etcdDir, etcdURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { etcd.Close() }()

	dir := filepath.Join(t.TempDir(), "data")
	srv, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", EtcdServers: []string{etcdURL}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	cfg, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		body string
		took time.Duration
	}
	get := func(path string) answer {
		start := time.Now()
		resp, err := client.Get(cfg.Host + path)
		if err != nil {
			return answer{body: err.Error(), took: time.Since(start)}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), time.Since(start)}
	}
	// All at once, as probes come: none may wait for another.
	check := func(when string, want map[string]answer) {
		t.Helper()
		got := make(map[string]answer, len(want))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for path := range want {
			wg.Go(func() {
				a := get(path)
				mu.Lock()
				got[path] = a
				mu.Unlock()
			})
		}
		wg.Wait()
		for path, w := range want {
			g := got[path]
			if g.code != w.code || strings.TrimSuffix(g.body, "\n") != w.body || g.took > 3*time.Second {
				t.Errorf("%s: GET %s: %d %q after %v, want %d %q within 3s", when, path, g.code, g.body, g.took.Round(time.Millisecond), w.code, w.body)
			}
		}
	}
	// Every post-start hook has finished once lapis is ready.
	var hooks string
	for _, name := range kubeHookOrder {
		if name == aggregator.CheckAutoregistered { // a check kube lists among its hooks
			hooks += "[+]" + name + " ok\n"
			continue
		}
		hooks += "[+]poststarthook/" + name + " ok\n"
	}
	healthy := map[string]answer{
		"/readyz?verbose": {code: 200, body: "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n" + hooks + "[+]shutdown ok\nreadyz check passed"},
		"/livez":          {code: 200, body: "ok"},
		"/healthz":        {code: 200, body: "ok"},
	}
	check("etcd up", healthy)

	if err := etcd.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // an etcd check probes at most once per half timeout
	check("etcd gone", map[string]answer{
		"/readyz": {code: 500, body: "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[+]informer-sync ok\n" +
			hooks + "[+]shutdown ok\nreadyz check failed"},
		"/livez":                {code: 500, body: "[+]ping ok\n[+]log ok\n[+]loopback-serving-certificate ok\n[-]etcd failed: reason withheld\n" + hooks + "livez check failed"},
		"/healthz?exclude=etcd": {code: 200, body: "ok"},
		"/readyz/shutdown":      {code: 200, body: "ok"},
	})

	etcd, err = storage.OpenEmbedded(ctx, etcdDir, etcdURL)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for a := get("/readyz"); a.code != 200; a = get("/readyz") {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after etcd came back: %d %q", a.code, a.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	check("etcd back", healthy)
}
