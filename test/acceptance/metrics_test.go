package acceptance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/testutil"
)

// metricsOf reads lapis's /metrics as the admin.
func metricsOf(t *testing.T, l *lapisProc) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := l.do(t, "GET", "/metrics", "", "", true)
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	families, err := testutil.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	return families
}

// sample sums the samples of family name whose labels include labels (a histogram's count).
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	sum := 0.0
	for _, m := range f.Metric {
		if !testutil.LabelsMatch(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestMetrics: /metrics has kube-apiserver's families and labels, its values move with the
// requests lapis serves, and it is authorized as kube's (non-resource get on /metrics).
func TestMetrics(t *testing.T) {
	l := startLapis(t)
	l.must(t, "create", "namespace", "metrics")
	// The namespace's kube-root-ca.crt is written once, before the counts are compared.
	poll.Eventually(t, 10*time.Second, "kube-root-ca.crt in the namespace", func() (bool, string) {
		_, stderr, err := l.kubectl("-n", "metrics", "get", "configmap", "kube-root-ca.crt")
		return err == nil, stderr
	})

	// The steps run in order: the counts compare what the requests in between added.
	t.Run("only the admin and system:monitoring may read /metrics", func(t *testing.T) { metricsAuthorization(t, l) })
	before := metricsOf(t, l)
	t.Run("kube's families are served", func(t *testing.T) { metricsFamilies(t, before) })
	t.Run("requests are counted by verb, scope, code and dry run", func(t *testing.T) { metricsRequestCounts(t, l, before) })
	t.Run("stored objects are counted per resource", func(t *testing.T) { metricsStoredObjects(t, l) })
	t.Run("a watch is registered while it runs and counts its events", func(t *testing.T) { metricsWatch(t, l) })
}

// metricsAuthorization: the admin (system:masters) and kube's system:monitoring group may read
// /metrics, anonymous and other users may not.
func metricsAuthorization(t *testing.T, l *lapisProc) {
	if code, body := l.do(t, "GET", "/metrics", "", "", false); code != http.StatusForbidden {
		t.Errorf("anonymous GET /metrics: %d %s, want 403", code, body)
	}
	if _, stderr, err := l.kubectl("get", "--raw", "/metrics", "--as=someone"); err == nil || !strings.Contains(stderr, "Forbidden") {
		t.Errorf("someone's GET /metrics: %v %s, want forbidden", err, stderr)
	}
	if out := l.must(t, "get", "--raw", "/metrics", "--as=someone", "--as-group=system:monitoring"); !strings.Contains(out, "apiserver_request_total") {
		t.Errorf("system:monitoring's GET /metrics lacks apiserver_request_total")
	}
}

func metricsFamilies(t *testing.T, before map[string]*dto.MetricFamily) {
	for _, name := range []string{
		"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_response_sizes",
		"apiserver_current_inflight_requests", "apiserver_storage_objects", "apiserver_resource_objects",
		"apiserver_longrunning_requests", "etcd_request_duration_seconds", "etcd_requests_total",
		"kubernetes_build_info", "go_goroutines", "go_memstats_alloc_bytes", "process_resident_memory_bytes",
		"process_start_time_seconds", "process_cpu_seconds_total", "authentication_attempts",
	} {
		if before[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	for _, kind := range []string{"readOnly", "mutating"} {
		if f := before["apiserver_current_inflight_requests"]; f != nil && !hasSeries(f, map[string]string{"request_kind": kind}) {
			t.Errorf("apiserver_current_inflight_requests has no request_kind=%q", kind)
		}
	}
}

// withLabels is base with the label pairs of more added.
func withLabels(base map[string]string, more ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

// configMapRequests is the labels of apiserver_request_total for a request on configmaps, with more.
func configMapRequests(more ...string) map[string]string {
	base := map[string]string{"group": "", "version": "v1", "resource": "configmaps", "subresource": "", "component": "apiserver", "dry_run": ""}
	return withLabels(base, more...)
}

// metricsRequestCounts makes one request of each kind and checks what each counter gained since before.
func metricsRequestCounts(t *testing.T, l *lapisProc, before map[string]*dto.MetricFamily) {
	posted := configMapRequests("verb", "POST", "scope", "resource", "code", "201")
	applied := configMapRequests("verb", "APPLY", "scope", "resource", "code", "201")
	listed := configMapRequests("verb", "LIST", "scope", "namespace", "code", "200")
	missing := configMapRequests("verb", "GET", "scope", "resource", "code", "404")
	dryRun := configMapRequests("verb", "POST", "scope", "resource", "code", "201", "dry_run", "All")
	readyz := map[string]string{"verb": "GET", "subresource": "/readyz", "component": "", "resource": "", "code": "200"}
	etcdCreates := map[string]string{"operation": "create", "group": "", "resource": "configmaps"}

	l.must(t, "-n", "metrics", "create", "configmap", "posted", "--from-literal=k=v")
	l.mustIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied, namespace: metrics}\ndata: {k: v}\n",
		"apply", "--server-side", "-f", "-")
	l.must(t, "-n", "metrics", "get", "configmaps")
	l.fails(t, "", "-n", "metrics", "get", "configmap", "missing")
	l.must(t, "-n", "metrics", "create", "configmap", "dry", "--dry-run=server")
	if code, _ := l.do(t, "GET", "/readyz", "", "", false); code != 200 {
		t.Fatalf("GET /readyz: %d", code)
	}
	if code, _ := l.do(t, "GET", "/api/v1/namespaces/metrics/nonsense", "", "", true); code != 404 {
		t.Fatalf("GET of a resource that does not exist: %d", code)
	}

	after := metricsOf(t, l)
	if sample(after, "apiserver_request_total", map[string]string{"resource": "nonsense"}) != 0 {
		t.Errorf("requests for a resource that does not exist are counted")
	}
	for _, c := range []struct {
		what   string
		family string
		labels map[string]string
		delta  float64
	}{
		{"a create", "apiserver_request_total", posted, 1},
		{"a server-side apply", "apiserver_request_total", applied, 1},
		{"a list", "apiserver_request_total", listed, 1},
		{"a get of nothing", "apiserver_request_total", missing, 1},
		{"a dry run", "apiserver_request_total", dryRun, 1},
		{"an anonymous /readyz", "apiserver_request_total", readyz, 1},
		{"a create's latency", "apiserver_request_duration_seconds", withLabels(posted), 1},
		{"a list's response size", "apiserver_response_sizes", map[string]string{"verb": "LIST", "resource": "configmaps", "scope": "namespace"}, 1},
		{"two stored creates", "etcd_request_duration_seconds", etcdCreates, 2},
		{"two stored creates", "etcd_requests_total", etcdCreates, 2},
	} {
		labels := c.labels
		if c.family == "apiserver_request_duration_seconds" {
			delete(labels, "code")
		}
		if got := sample(after, c.family, labels) - sample(before, c.family, labels); got != c.delta {
			t.Errorf("%s: %s%v went up by %v, want %v", c.what, c.family, labels, got, c.delta)
		}
	}
}

func metricsStoredObjects(t *testing.T, l *lapisProc) {
	// Stored objects are counted per resource: every ConfigMap (each namespace has its
	// kube-root-ca.crt).
	poll.Eventually(t, 5*time.Second, "apiserver_storage_objects counting ConfigMaps", func() (bool, string) {
		want := len(strings.Fields(l.must(t, "get", "configmaps", "-A", "--no-headers", "-o", "name")))
		m := metricsOf(t, l)
		got := sample(m, "apiserver_storage_objects", map[string]string{"resource": "configmaps"})
		byResource := sample(m, "apiserver_resource_objects", map[string]string{"group": "", "resource": "configmaps"})
		return got == float64(want) && byResource == got, fmt.Sprintf("%v and %v, want %d", got, byResource, want)
	})
}

func metricsWatch(t *testing.T, l *lapisProc) {
	// A watch is registered while it runs, and counts the events it is sent.
	watchers := map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"}
	longRunning := map[string]string{"verb": "WATCH", "group": "", "version": "v1", "resource": "configmaps", "scope": "namespace", "component": "apiserver"}
	events := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	before := metricsOf(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchDone := startWatch(t, ctx, l, "/api/v1/namespaces/metrics/configmaps?watch=true&resourceVersion=0")
	poll.Eventually(t, 5*time.Second, "the watch registered", func() (bool, string) {
		m := metricsOf(t, l)
		w, lr := sample(m, "apiserver_registered_watchers", watchers), sample(m, "apiserver_longrunning_requests", longRunning)
		return w == sample(before, "apiserver_registered_watchers", watchers)+1 && lr == sample(before, "apiserver_longrunning_requests", longRunning)+1,
			fmt.Sprintf("%v registered watchers, %v long-running watches", w, lr)
	})
	l.must(t, "-n", "metrics", "create", "configmap", "watched")
	poll.Eventually(t, 5*time.Second, "watch events counted", func() (bool, string) {
		// The two ConfigMaps, kube-root-ca.crt and the new one: at least 4 events.
		got := sample(metricsOf(t, l), "apiserver_watch_events_total", events) - sample(before, "apiserver_watch_events_total", events)
		return got >= 4, fmt.Sprintf("%v events", got)
	})
	cancel()
	<-watchDone
	poll.Eventually(t, 5*time.Second, "the watch unregistered", func() (bool, string) {
		m := metricsOf(t, l)
		w, lr := sample(m, "apiserver_registered_watchers", watchers), sample(m, "apiserver_longrunning_requests", longRunning)
		return w == sample(before, "apiserver_registered_watchers", watchers) && lr == sample(before, "apiserver_longrunning_requests", longRunning),
			fmt.Sprintf("%v registered watchers, %v long-running watches", w, lr)
	})
	watched := configMapRequests("verb", "WATCH", "scope", "namespace", "code", "200")
	if got := sample(metricsOf(t, l), "apiserver_request_total", watched) - sample(before, "apiserver_request_total", watched); got != 1 {
		t.Errorf("the ended watch: apiserver_request_total%v went up by %v, want 1", watched, got)
	}
}

func hasSeries(f *dto.MetricFamily, labels map[string]string) bool {
	for _, m := range f.Metric {
		if testutil.LabelsMatch(m, labels) {
			return true
		}
	}
	return false
}

// startWatch opens a watch as the admin and reads it until ctx ends; the channel closes then.
func startWatch(t *testing.T, ctx context.Context, l *lapisProc, path string) <-chan struct{} {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(l.caData)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(ctx, "GET", l.server+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("watch %s: %d", path, resp.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return done
}
