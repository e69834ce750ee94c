package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/server"
)

// targetEnv names a kubeconfig: when set, every benchmark but BenchmarkStartup runs against
// that server (a lapis binary, kube-apiserver) instead of an in-process lapis, so that
// compare.sh can put the same workload to both.
const targetEnv = "LAPIS_BENCH_KUBECONFIG"

// The benchmarks share one lapis, started on first use (embedded etcd, fsync on, on a temporary
// data directory) and shut down by TestMain.
var lapis struct {
	once     sync.Once
	err      error
	dir      string
	srv      *server.Server
	cfg      *rest.Config
	dyn      dynamic.Interface
	shutdown func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if lapis.shutdown != nil {
		lapis.shutdown()
	}
	for _, dir := range atExit.dirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// atExit holds the directories seeded once for benchmarks that run several times; TestMain
// removes them.
var atExit struct {
	mu   sync.Mutex
	dirs []string
}

func removeAtExit(dir string) {
	atExit.mu.Lock()
	defer atExit.mu.Unlock()
	atExit.dirs = append(atExit.dirs, dir)
}

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	nsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	widgetGVR = schema.GroupVersionResource{Group: "bench.lapis.dev", Version: "v1", Resource: "widgets"}
)

// widgetCRD is a small namespaced custom resource: a few scalars, a string map and a list-map
// of containers, so server-side apply has structure to merge.
const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.bench.lapis.dev"},
"spec":{"group":"bench.lapis.dev","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,
  "schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{
     "size":{"type":"integer"},
     "color":{"type":"string"},
     "labels":{"type":"object","additionalProperties":{"type":"string"}},
     "containers":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
       "items":{"type":"object","required":["name"],"properties":{
         "name":{"type":"string"},"image":{"type":"string"},
         "args":{"type":"array","items":{"type":"string"}}}}}}}}}}}]}}`

// setup returns a client of the shared lapis, starting it (and installing the CRD) on first use.
func setup(b testing.TB) dynamic.Interface {
	b.Helper()
	lapis.once.Do(func() { lapis.err = start() })
	if lapis.err != nil {
		b.Fatalf("starting lapis: %v", lapis.err)
	}
	return lapis.dyn
}

func start() error {
	if kc := os.Getenv(targetEnv); kc != "" {
		// Another server is measured: the same workload, its CRD installed there.
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			return err
		}
		return connect(cfg)
	}
	dir, err := os.MkdirTemp("", "lapis-bench-")
	if err != nil {
		return err
	}
	lapis.dir = dir
	ctx := context.Background()
	srv, err := server.Start(ctx, server.Config{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0"},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	lapis.srv = srv
	lapis.shutdown = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		os.RemoveAll(dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", server.KubeconfigPath(filepath.Join(dir, "data")))
	if err != nil {
		return err
	}
	return connect(cfg)
}

// connect makes the benchmarks' clients of the server cfg names and installs the widget CRD
// there (once: an existing one is kept).
func connect(cfg *rest.Config) error {
	ctx := context.Background()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: measure the server
	cfg.UserAgent = "lapis-bench"
	lapis.cfg = cfg
	var err error
	if lapis.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(widgetCRD), &crd.Object); err != nil {
		return err
	}
	if _, err := lapis.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := lapis.dyn.Resource(widgetGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("widgets not served: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ensureNamespace creates namespace name unless it exists.
func ensureNamespace(ctx context.Context, dyn dynamic.Interface, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	if _, err := dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// widget is a Widget named name in namespace ns; gen varies its content.
func widget(ns, name string, gen int) *unstructured.Unstructured {
	containers := []any{}
	for c := 0; c < 3; c++ {
		containers = append(containers, map[string]any{
			"name":  fmt.Sprintf("c%d", c),
			"image": fmt.Sprintf("registry.example.com/app:%d.%d", gen, c),
			"args":  []any{"--flag-a", "--flag-b", fmt.Sprintf("--gen=%d", gen)},
		})
	}
	labels := map[string]any{}
	for l := 0; l < 4; l++ {
		labels[fmt.Sprintf("label-%d", l)] = fmt.Sprintf("value-%d", l)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.lapis.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "bench"}},
		"spec":     map[string]any{"size": int64(gen%5 + 1), "color": "blue", "labels": labels, "containers": containers},
	}}
}

// parallel runs f(0..n-1) on conc goroutines and returns the first error.
func parallel(n, conc int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				failed := first != nil
				mu.Unlock()
				if i >= n || failed {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}
