package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/server"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
)

// BenchmarkStartup restarts lapis on a data directory holding N ConfigMaps (written straight
// into etcd once, untimed, as lapis stores them) and reports the time from start to ready
// (ready-ms: Start returned, the kubeconfig is written, requests are served) and to the end of
// a first full list of the N objects as JSON bytes (first-list-ms: the watch cache warm-up
// included), then shuts it down untimed.
func BenchmarkStartup(b *testing.B) {
	if os.Getenv(targetEnv) != "" {
		b.Skip("BenchmarkStartup restarts an in-process lapis; it does not measure " + targetEnv)
	}
	n := 100_000
	if small() {
		n = 100
	}
	b.Run("objects-"+strconv.Itoa(n), func(b *testing.B) { benchStartup(b, n) })
}

// startupSeeds remembers, per size, a data directory seeded with that many ConfigMaps.
var startupSeeds sync.Map // int -> *startupSeed

type startupSeed struct {
	once sync.Once
	dir  string
	err  error
}

// startupNamespace holds the seeded ConfigMaps.
const startupNamespace = "bench-startup"

func benchStartup(b *testing.B, n int) {
	v, _ := startupSeeds.LoadOrStore(n, &startupSeed{})
	seed := v.(*startupSeed)
	seed.once.Do(func() { seed.dir, seed.err = seedStartup(b, n) })
	if seed.err != nil {
		b.Fatalf("seeding %d ConfigMaps: %v", n, seed.err)
	}
	var ready, listed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, l := restartOnce(b, seed.dir, n)
		ready += r
		listed += l
	}
	b.StopTimer()
	b.ReportMetric(float64(ready.Milliseconds())/float64(b.N), "ready-ms")
	b.ReportMetric(float64(listed.Milliseconds())/float64(b.N), "first-list-ms")
}

// restartOnce starts lapis on dir, lists the seeded namespace once and stops it; the stop is
// not timed.
func restartOnce(b *testing.B, dir string, want int) (ready, listed time.Duration) {
	ctx := context.Background()
	start := time.Now()
	srv, err := server.Start(ctx, server.Config{DataDir: dir, Listen: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatalf("starting lapis: %v", err)
	}
	ready = time.Since(start)
	defer func() {
		b.StopTimer()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		b.StartTimer()
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", server.KubeconfigPath(dir))
	if err != nil {
		b.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	body, err := getRaw(hc, cfg.Host+"/api/v1/namespaces/"+startupNamespace+"/configmaps", "application/json")
	if err != nil {
		b.Fatal(err)
	}
	listed = time.Since(start)
	if got := countItems(b, body); got != want+1 { // and kube-root-ca.crt
		b.Fatalf("listed %d ConfigMaps after a restart, want %d", got, want)
	}
	return ready, listed
}

// seedStartup makes a data directory: lapis starts on it once (its own objects, the namespace),
// then n ConfigMaps are written into its etcd in transactions of 128 puts (etcd's limit).
func seedStartup(b *testing.B, n int) (string, error) {
	root, err := os.MkdirTemp("", "lapis-bench-startup-")
	if err != nil {
		return "", err
	}
	removeAtExit(root) // not b.Cleanup: later runs of the benchmark reuse the seed
	dir := filepath.Join(root, "data")
	ctx := context.Background()
	srv, err := server.Start(ctx, server.Config{DataDir: dir, Listen: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return "", err
	}
	// The namespace is made through the API, and its kube-root-ca.crt ConfigMap published, before
	// the seeding: a restart then finds exactly the seeded objects and that one.
	if err := makeStartupNamespace(ctx, dir); err != nil {
		return "", err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return "", err
	}
	backend, err := storage.OpenEmbedded(ctx, dir, "")
	if err != nil {
		return "", err
	}
	defer backend.Close()
	started := time.Now()
	const batch = 128
	for i := 0; i < n; i += batch {
		ops := make([]clientv3.Op, 0, batch)
		for j := i; j < n && j < i+batch; j++ {
			name := fmt.Sprintf("cm-%06d", j)
			value, err := codec.Encode(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": startupNamespace, "uid": string(uuid.NewUUID()),
					"creationTimestamp": started.UTC().Format(time.RFC3339), "labels": map[string]any{"app": "startup", "shard": strconv.Itoa(j % 16)}},
				"data": map[string]any{"color": "blue", "size": strconv.Itoa(j), "settings": "log-level=info\nlisten=:8080\n"}})
			if err != nil {
				return "", err
			}
			ops = append(ops, clientv3.OpPut("/registry/configmaps/"+startupNamespace+"/"+name, string(value)))
		}
		if _, err := backend.Client.Txn(ctx).Then(ops...).Commit(); err != nil {
			return "", err
		}
	}
	b.Logf("seeded %d ConfigMaps in %v", n, time.Since(started).Round(time.Millisecond))
	return dir, nil
}

// makeStartupNamespace creates the seeded namespace on the lapis serving dir and waits for the
// root CA ConfigMap lapis publishes in every namespace.
func makeStartupNamespace(ctx context.Context, dir string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", server.KubeconfigPath(dir))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureNS(ctx, cs, startupNamespace); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps(startupNamespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// getRaw GETs url as accept and returns the body of a 200.
func getRaw(hc *http.Client, url, accept string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, body)
	}
	return body, err
}
