package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/metrics/testutil"
)

var testVersion = version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2-lapis"}

func TestEtcdAndObjectMetrics(t *testing.T) {
	m := New(testVersion)
	if got := m.keys.of("/registry/configmaps/ns/a"); got != (schema.GroupResource{}) {
		t.Errorf("without a resolver, a key is %v's", got)
	}
	resolveTestKeys(m)
	start := time.Now()
	m.ObserveEtcd("create", "/registry/configmaps/ns/a", start, nil)
	m.ObserveEtcd("get", "/registry/deployments/ns/d", start, errors.New("etcd is unavailable"))
	m.CountObjects(func() map[string]int {
		return map[string]int{"/registry/configmaps/": 3, "/registry/deployments/": 1}
	})
	want := `
# HELP apiserver_resource_objects [ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.
# TYPE apiserver_resource_objects gauge
apiserver_resource_objects{group="",resource="configmaps"} 3
apiserver_resource_objects{group="apps",resource="deployments"} 1
# HELP apiserver_storage_objects [STABLE] (Deprecated since 1.34.0) [DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="configmaps"} 3
apiserver_storage_objects{resource="deployments.apps"} 1
# HELP etcd_requests_total [ALPHA] Etcd request counts for each operation and object type.
# TYPE etcd_requests_total counter
etcd_requests_total{group="",operation="create",resource="configmaps"} 1
etcd_requests_total{group="apps",operation="get",resource="deployments"} 1
# HELP etcd_request_errors_total [ALPHA] Etcd failed request counts for each operation and object type.
# TYPE etcd_request_errors_total counter
etcd_request_errors_total{group="apps",operation="get",resource="deployments"} 1
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want),
		"apiserver_resource_objects", "apiserver_storage_objects", "etcd_requests_total", "etcd_request_errors_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GetHistogramMetricCount(m.etcdLatency.WithLabelValues("create", "", "configmaps")); err != nil || n != 1 {
		t.Errorf("etcd latency observed %d times (%v), want 1", n, err)
	}
}

func TestWatchMetrics(t *testing.T) {
	m := New(testVersion)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	done1 := m.WatchStarted(gvr, gvk)
	done2 := m.WatchStarted(gvr, gvk)
	m.WatchEventSent(gvr, 100)
	m.WatchEventSent(gvr, 3000)
	done1()
	want := `
# HELP apiserver_registered_watchers [ALPHA] Number of currently registered watchers for a given resources
# TYPE apiserver_registered_watchers gauge
apiserver_registered_watchers{group="",kind="ConfigMap",version="v1"} 1
# HELP apiserver_watch_events_total [BETA] Number of events sent in watch clients
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="",resource="configmaps",version="v1"} 2
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want), "apiserver_registered_watchers", "apiserver_watch_events_total"); err != nil {
		t.Error(err)
	}
	done2()
}

// resolveTestKeys has m know the keys of configmaps and deployments: built-in resources' keys
// carry no group, the resolver knows it.
func resolveTestKeys(m *Metrics) {
	m.ResolveKeys(func(key string) schema.GroupResource {
		switch {
		case strings.HasPrefix(key, "/registry/deployments/"):
			return schema.GroupResource{Group: "apps", Resource: "deployments"}
		case strings.HasPrefix(key, "/registry/configmaps/"):
			return schema.GroupResource{Resource: "configmaps"}
		}
		return schema.GroupResource{}
	})
}

// /metrics serves the server's families, kube's process-wide ones (Go, process), and DELETE
// resets the server's.
func TestHandler(t *testing.T) {
	m := New(testVersion)
	resolveTestKeys(m)
	m.ObserveEtcd("list", "/registry/configmaps/", time.Now(), nil)
	get := func() string {
		w := httptest.NewRecorder()
		m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 200 {
			t.Fatalf("GET /metrics: %d", w.Code)
		}
		b, _ := io.ReadAll(w.Body)
		return string(b)
	}
	body := get()
	for _, want := range []string{
		"\nprocess_start_time_seconds ", "\ngo_goroutines ", "\nprocess_resident_memory_bytes ",
		`etcd_requests_total{group="",operation="list",resource="configmaps"} 1`,
		`apiserver_current_inflight_requests{request_kind="mutating"} 0`,
		`apiserver_current_inflight_requests{request_kind="readOnly"} 0`,
		`kubernetes_build_info{build_date="",compiler="",git_commit="",git_tree_state="",git_version="v1.37.2-lapis",go_version="",major="1",minor="37",platform=""} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("DELETE", "/metrics", nil))
	if w.Body.String() != "metrics reset\n" {
		t.Errorf("DELETE /metrics: %q", w.Body.String())
	}
	if body := get(); strings.Contains(body, "etcd_requests_total{") {
		t.Errorf("etcd_requests_total kept after the reset")
	}
}

// Two servers in one process keep their own counts.
func TestServersDoNotShare(t *testing.T) {
	a, b := New(testVersion), New(testVersion)
	resolveTestKeys(a)
	resolveTestKeys(b)
	a.ObserveEtcd("get", "/registry/configmaps/ns/x", time.Now(), nil)
	if v, _ := testutil.GetCounterMetricValue(b.etcdRequests.WithLabelValues("get", "", "configmaps")); v != 0 {
		t.Errorf("the second server counted %v etcd requests", v)
	}
}

func TestStorageSize(t *testing.T) {
	m := New(testVersion)
	m.MeasureStorage(func(ctx context.Context) (int64, error) {
		if _, ok := ctx.Deadline(); !ok {
			return 0, errors.New("no deadline")
		}
		return 4096, nil
	})
	want := `
# HELP apiserver_storage_size_bytes [STABLE] Size of the storage database file physically allocated in bytes.
# TYPE apiserver_storage_size_bytes gauge
apiserver_storage_size_bytes{storage_cluster_id="etcd-0"} 4096
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want), "apiserver_storage_size_bytes"); err != nil {
		t.Error(err)
	}
	// etcd not answering: no sample, as kube's.
	m.MeasureStorage(func(context.Context) (int64, error) { return 0, errors.New("etcd is unavailable") })
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(""), "apiserver_storage_size_bytes"); err != nil {
		t.Error(err)
	}
}
