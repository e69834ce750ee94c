package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics/testutil"
)

var requestInfos = &genericapirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

func newRequest(t *testing.T, method, target, contentType string) *http.Request {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	info, err := requestInfos.NewRequestInfo(req)
	if err != nil {
		t.Fatal(err)
	}
	return req.WithContext(genericapirequest.WithRequestInfo(req.Context(), info))
}

// The labels kube-apiserver 1.37 reports (as its /metrics shows them) for the same requests.
func TestLabelsAsKube(t *testing.T) {
	for _, c := range []struct {
		method, target, contentType string
		want                        requestLabels
		reported                    bool
	}{
		{"POST", "/api/v1/namespaces/ns/configmaps", "application/json",
			requestLabels{verb: "POST", version: "v1", resource: "configmaps", scope: "resource", component: "apiserver"}, true},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/a", "application/apply-patch+yaml",
			requestLabels{verb: "APPLY", version: "v1", resource: "configmaps", scope: "resource", component: "apiserver"}, true},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/a", "application/merge-patch+json",
			requestLabels{verb: "PATCH", version: "v1", resource: "configmaps", scope: "resource", component: "apiserver"}, true},
		{"GET", "/api/v1/namespaces/ns/configmaps", "",
			requestLabels{verb: "LIST", version: "v1", resource: "configmaps", scope: "namespace", component: "apiserver"}, true},
		{"GET", "/api/v1/configmaps", "",
			requestLabels{verb: "LIST", version: "v1", resource: "configmaps", scope: "cluster", component: "apiserver"}, true},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true", "",
			requestLabels{verb: "WATCH", version: "v1", resource: "configmaps", scope: "namespace", component: "apiserver"}, true},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", "",
			requestLabels{verb: "WATCH", version: "v1", resource: "configmaps", scope: "namespace", component: "apiserver"}, true},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "",
			requestLabels{verb: "WATCH", version: "v1", resource: "configmaps", scope: "namespace", component: "apiserver"}, true},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "",
			requestLabels{verb: "GET", group: "apps", version: "v1", resource: "deployments", subresource: "scale", scope: "resource", component: "apiserver"}, true},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", "",
			requestLabels{verb: "CONNECT", version: "v1", resource: "pods", subresource: "log", scope: "resource", component: "apiserver"}, true},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "",
			requestLabels{verb: "DELETE", version: "v1", resource: "configmaps", scope: "namespace", component: "apiserver"}, true},
		{"PUT", "/api/v1/namespaces/ns?dryRun=All&dryRun=All", "",
			requestLabels{verb: "PUT", dryRun: "All", version: "v1", resource: "namespaces", scope: "resource", component: "apiserver"}, true},
		{"POST", "/api/v1/namespaces?dryRun=Nope", "",
			requestLabels{verb: "POST", dryRun: "invalid", version: "v1", resource: "namespaces", scope: "resource", component: "apiserver"}, true},
		{"GET", "/api", "", requestLabels{verb: "GET", subresource: "api", component: "apiserver"}, true},
		{"GET", "/apis", "", requestLabels{verb: "GET", subresource: "apis", component: "apiserver"}, true},
		{"GET", "/readyz?verbose", "", requestLabels{verb: "GET", subresource: "/readyz"}, true},
		{"GET", "/livez", "", requestLabels{verb: "GET", subresource: "/livez"}, true},
		{"GET", "/openapi/v3", "", requestLabels{verb: "GET", subresource: "openapi/v3"}, true},
		{"GET", "/openapi/v3/apis/apps/v1", "", requestLabels{verb: "GET", subresource: "openapi/v3/"}, true},
		// Not instrumented by kube-apiserver.
		{"GET", "/readyz/etcd", "", requestLabels{}, false},
		{"GET", "/metrics", "", requestLabels{}, false},
		{"GET", "/version", "", requestLabels{}, false},
		{"GET", "/openapi/v2", "", requestLabels{}, false},
		{"GET", "/apis/apps/v1", "", requestLabels{}, false},
		{"GET", "/nope", "", requestLabels{}, false},
	} {
		req := newRequest(t, c.method, c.target, c.contentType)
		info, _ := genericapirequest.RequestInfoFrom(req.Context())
		got, reported := labelsOf(req, info)
		if reported != c.reported || (reported && got != c.want) {
			t.Errorf("%s %s: %+v reported %v, want %+v reported %v", c.method, c.target, got, reported, c.want, c.reported)
		}
	}
}

func TestWithRequestsRecords(t *testing.T) {
	m := New(testVersion)
	handler := m.WithRequests(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/api/v1/namespaces/ns/configmaps":
			if req.Method == "POST" {
				w.WriteHeader(http.StatusCreated)
			}
			_, _ = w.Write([]byte("{}"))
		case "/api/v1/namespaces/ns/configmaps/missing":
			http.Error(w, "not found", http.StatusNotFound)
		case "/api/v1/namespaces/ns/configmaps/panics":
			panic("boom")
		}
	}))
	serve := func(method, target, contentType string) {
		req := newRequest(t, method, target, contentType)
		func() {
			defer func() { _ = recover() }()
			handler.ServeHTTP(httptest.NewRecorder(), req)
		}()
	}
	serve("POST", "/api/v1/namespaces/ns/configmaps", "application/json")
	serve("POST", "/api/v1/namespaces/ns/configmaps", "application/json")
	serve("GET", "/api/v1/namespaces/ns/configmaps", "")
	serve("GET", "/api/v1/namespaces/ns/configmaps/missing", "")
	serve("PUT", "/api/v1/namespaces/ns/configmaps/panics", "application/json")
	serve("GET", "/metrics", "") // not counted

	want := `
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1
apiserver_request_total{code="500",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 1
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want), "apiserver_request_total"); err != nil {
		t.Error(err)
	}
	// Every request's latency, response sizes of the reads only.
	if n, err := testutil.GetHistogramMetricCount(m.latencies.WithLabelValues("POST", "", "", "v1", "configmaps", "", "resource", "apiserver")); err != nil || n != 2 {
		t.Errorf("POST latencies observed %d times (%v), want 2", n, err)
	}
	if n, err := testutil.GetHistogramMetricValue(m.responseSizes.WithLabelValues("LIST", "", "v1", "configmaps", "", "namespace", "apiserver")); err != nil || n != 2 {
		t.Errorf("LIST response sizes sum %v (%v), want 2 bytes", n, err)
	}
}

func TestLongRunningAndInflight(t *testing.T) {
	m := New(testVersion)
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	handler := m.WithRequests(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		started <- struct{}{}
		<-release
	}))
	done := make(chan struct{}, 2)
	for _, target := range []string{"/api/v1/namespaces/ns/configmaps?watch=1", "/api/v1/namespaces/ns/configmaps/x"} {
		method := "GET"
		if !strings.Contains(target, "watch") {
			method = "DELETE"
		}
		req := newRequest(t, method, target, "")
		go func() { handler.ServeHTTP(httptest.NewRecorder(), req); done <- struct{}{} }()
		<-started
	}
	watching := m.longRunning.WithLabelValues("WATCH", "", "v1", "configmaps", "", "namespace", "apiserver")
	if v, _ := testutil.GetGaugeMetricValue(watching); v != 1 {
		t.Errorf("long-running watches %v, want 1", v)
	}
	// The watch is long-running: not in flight; the delete is.
	if readOnly, mutating := m.inflight.highWater(); readOnly != 0 || mutating != 1 {
		t.Errorf("in flight: %d read-only, %d mutating; want 0, 1", readOnly, mutating)
	}
	close(release)
	<-done
	<-done
	if v, _ := testutil.GetGaugeMetricValue(watching); v != 0 {
		t.Errorf("long-running watches after the watch ended %v, want 0", v)
	}
}

func TestInflightHighWater(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newInflightCounts(func() time.Time { return now })
	c.add(false, 1)
	c.add(false, 1)
	c.add(false, -1)
	c.add(true, 1)
	c.add(true, -1)
	for _, step := range []struct {
		after              time.Duration
		readOnly, mutating int
	}{
		{0, 2, 1},                       // this second's high-water marks
		{1500 * time.Millisecond, 2, 1}, // the last second's
		{time.Second, 1, 0},             // two seconds on: what is in flight now
	} {
		now = now.Add(step.after)
		if r, m := c.highWater(); r != step.readOnly || m != step.mutating {
			t.Errorf("after %v: %d read-only, %d mutating; want %d, %d", step.after, r, m, step.readOnly, step.mutating)
		}
	}
}

// Requests for resources lapis does not serve are not counted: their names would make series
// without bound.
func TestUnservedResourcesNotCounted(t *testing.T) {
	m := New(testVersion)
	m.ServedResources(func(group, version, resource, subresource string) bool {
		return group == "" && version == "v1" && resource == "configmaps" && subresource == ""
	})
	handler := m.WithRequests(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {}))
	for _, target := range []string{
		"/api/v1/namespaces/ns/configmaps",
		"/api/v1/namespaces/ns/nonsense",
		"/api/v1/namespaces/ns/configmaps/a/nonsense",
		"/apis/example.com/v9/things",
		"/healthz",
	} {
		handler.ServeHTTP(httptest.NewRecorder(), newRequest(t, "GET", target, ""))
	}
	want := `
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/healthz",verb="GET",version=""} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1
`
	if err := testutil.GatherAndCompare(m.registry, strings.NewReader(want), "apiserver_request_total"); err != nil {
		t.Error(err)
	}
}
