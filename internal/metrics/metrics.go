package metrics

import (
	"net/http"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/version"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// client-go's rest_client_* metrics, as kube-apiserver records them for its loopback
	// client: registered process-wide in legacyregistry, where kube keeps them.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
)

// kube's latency buckets (endpoints/metrics' request_duration_seconds, etcd3/metrics'
// etcd_request_duration_seconds): its SLO dashboards read these.
var latencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// Metrics is one server's metrics: its registry and the families lapis records itself.
type Metrics struct {
	registry compbasemetrics.KubeRegistry

	requests      *compbasemetrics.CounterVec
	latencies     *compbasemetrics.HistogramVec
	responseSizes *compbasemetrics.HistogramVec
	longRunning   *compbasemetrics.GaugeVec
	inflight      *inflightCounts
	// servedResources tells the resources whose requests are counted (ServedResources).
	servedResources atomic.Pointer[func(group, version, resource, subresource string) bool]

	watchEvents        *compbasemetrics.CounterVec
	watchEventSizes    *compbasemetrics.HistogramVec
	registeredWatchers *compbasemetrics.GaugeVec

	etcdLatency  *compbasemetrics.HistogramVec
	etcdRequests *compbasemetrics.CounterVec
	etcdErrors   *compbasemetrics.CounterVec

	keys        keyResolver // shared by the etcd and object-count metrics
	objects     *objectCounts
	storageSize *storageSize
}

// New returns a server's metrics, registered in a registry of their own; build is the
// version kubernetes_build_info reports.
func New(build version.Info) *Metrics {
	m := &Metrics{
		registry: compbasemetrics.NewKubeRegistry(),
		requests: compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
			Subsystem:      "apiserver",
			Name:           "request_total",
			Help:           "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
			StabilityLevel: compbasemetrics.STABLE,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		latencies: compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
			Subsystem:      "apiserver",
			Name:           "request_duration_seconds",
			Help:           "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets:        latencyBuckets,
			StabilityLevel: compbasemetrics.STABLE,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		responseSizes: compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
			Subsystem:      "apiserver",
			Name:           "response_sizes",
			Help:           "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
			Buckets:        compbasemetrics.ExponentialBuckets(1000, 10.0, 7),
			StabilityLevel: compbasemetrics.STABLE,
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		longRunning: compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
			Subsystem:      "apiserver",
			Name:           "longrunning_requests",
			Help:           "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
			StabilityLevel: compbasemetrics.STABLE,
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		inflight: newInflightCounts(time.Now),
		watchEvents: compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
			Subsystem:      "apiserver",
			Name:           "watch_events_total",
			Help:           "Number of events sent in watch clients",
			StabilityLevel: compbasemetrics.BETA,
		}, []string{"group", "version", "resource"}),
		watchEventSizes: compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
			Subsystem:      "apiserver",
			Name:           "watch_events_sizes",
			Help:           "Watch event size distribution in bytes",
			Buckets:        compbasemetrics.ExponentialBuckets(1024, 2.0, 8),
			StabilityLevel: compbasemetrics.BETA,
		}, []string{"group", "version", "resource"}),
		// Gone from kube-apiserver since 1.2x (apiserver_longrunning_requests{verb="WATCH"}
		// replaced it), kept with its old name, labels and help because dashboards still ask.
		registeredWatchers: compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
			Subsystem:      "apiserver",
			Name:           "registered_watchers",
			Help:           "Number of currently registered watchers for a given resources",
			StabilityLevel: compbasemetrics.ALPHA,
		}, []string{"group", "version", "kind"}),
		etcdLatency: compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
			Name:           "etcd_request_duration_seconds",
			Help:           "Etcd request latency in seconds for each operation and object type.",
			Buckets:        latencyBuckets,
			StabilityLevel: compbasemetrics.ALPHA,
		}, []string{"operation", "group", "resource"}),
		etcdRequests: compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
			Name:           "etcd_requests_total",
			Help:           "Etcd request counts for each operation and object type.",
			StabilityLevel: compbasemetrics.ALPHA,
		}, []string{"operation", "group", "resource"}),
		etcdErrors: compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
			Name:           "etcd_request_errors_total",
			Help:           "Etcd failed request counts for each operation and object type.",
			StabilityLevel: compbasemetrics.ALPHA,
		}, []string{"operation", "group", "resource"}),
		storageSize: newStorageSize(),
	}
	m.objects = newObjectCounts(&m.keys)
	m.registry.MustRegister(m.requests, m.latencies, m.responseSizes, m.longRunning,
		m.watchEvents, m.watchEventSizes, m.registeredWatchers, m.etcdLatency, m.etcdRequests, m.etcdErrors)
	m.registry.CustomMustRegister(m.objects, m.inflight, m.storageSize)
	// kube registers it in legacyregistry with its own build's version: lapis's is its own.
	buildInfo := compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
		Name:           "kubernetes_build_info",
		Help:           "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
		StabilityLevel: compbasemetrics.BETA,
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	m.registry.MustRegister(buildInfo)
	buildInfo.WithLabelValues(build.Major, build.Minor, build.GitVersion, build.GitCommit, build.GitTreeState,
		build.BuildDate, build.GoVersion, build.Compiler, build.Platform).Set(1)
	return m
}

// Handler serves the metrics in Prometheus' text format (or what the scraper negotiates);
// DELETE resets this server's metrics, as kube-apiserver's /metrics does with profiling on.
func (m *Metrics) Handler() http.Handler {
	get := compbasemetrics.HandlerFor(gatherer{m.registry}, compbasemetrics.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodDelete {
			m.registry.Reset()
			_, _ = w.Write([]byte("metrics reset\n"))
			return
		}
		get.ServeHTTP(w, req)
	})
}

// gatherer serves a server's registry and, after it, kube's process-wide legacyregistry (Go
// and process metrics, and what kube's authentication, authorization and admission libraries
// record there), leaving out any family the server's registry has.
type gatherer struct{ own compbasemetrics.Gatherer }

func (g gatherer) Gather() ([]*dto.MetricFamily, error) {
	own, err := g.own.Gather()
	if err != nil {
		return nil, err
	}
	shared, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(own))
	for _, f := range own {
		names[f.GetName()] = true
	}
	out := own
	for _, f := range shared {
		if !names[f.GetName()] {
			out = append(out, f)
		}
	}
	return out, nil
}
