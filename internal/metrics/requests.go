package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// requestLabels are the labels of apiserver_request_total but the code.
type requestLabels struct {
	verb, dryRun, group, version, resource, subresource, scope, component string
}

// validVerbs are the verbs kube reports; others are "other".
var validVerbs = sets.New(
	endpointsmetrics.MethodApply, endpointsmetrics.MethodConnect, endpointsmetrics.MethodCreate,
	endpointsmetrics.MethodDelete, endpointsmetrics.MethodDeleteCollection, endpointsmetrics.MethodGet,
	endpointsmetrics.MethodList, endpointsmetrics.MethodPatch, endpointsmetrics.MethodPost,
	endpointsmetrics.MethodProxy, endpointsmetrics.MethodPut, endpointsmetrics.MethodUpdate,
	endpointsmetrics.MethodWatch, endpointsmetrics.MethodWatchList)

// labelsOf returns a request's labels as kube-apiserver reports them, and whether kube reports
// the request at all: resource requests, /api and /apis discovery, the roots of the health
// endpoints and /openapi/v3 are; /version, /metrics, /openapi/v2, group discovery and paths
// that serve nothing are not (kube-apiserver instruments only those handlers).
func labelsOf(req *http.Request, info *genericapirequest.RequestInfo) (requestLabels, bool) {
	if info == nil {
		info = &genericapirequest.RequestInfo{Verb: strings.ToLower(req.Method), Path: req.URL.Path}
	}
	l := requestLabels{dryRun: dryRun(req)}
	if info.IsResourceRequest {
		l.group, l.version, l.resource, l.subresource = info.APIGroup, info.APIVersion, info.Resource, info.Subresource
		l.component = endpointsmetrics.APIServerComponent
	} else {
		switch p := req.URL.Path; {
		case p == "/api" || p == "/apis":
			l.subresource, l.component = strings.TrimPrefix(p, "/"), endpointsmetrics.APIServerComponent
		case p == "/healthz" || p == "/livez" || p == "/readyz":
			l.subresource = p
		case p == "/openapi/v3":
			l.subresource = "openapi/v3"
		case strings.HasPrefix(p, "/openapi/v3/"):
			l.subresource = "openapi/v3/"
		default:
			return l, false
		}
	}
	l.scope = endpointsmetrics.CleanScope(info)
	l.verb = reportedVerb(req, info, l.scope)
	return l, true
}

// reportedVerb is kube's reported verb: LIST for collection GETs, WATCH for watches (also the
// legacy /watch/ paths), APPLY for apply patches, CONNECT for connect subresources.
func reportedVerb(req *http.Request, info *genericapirequest.RequestInfo, scope string) string {
	if info.IsResourceRequest && (info.Verb == "watch" || info.Verb == "watchList") {
		return endpointsmetrics.MethodWatch
	}
	verb := endpointsmetrics.CleanVerb(endpointsmetrics.CanonicalVerb(strings.ToUpper(req.Method), scope), req, info)
	if !validVerbs.Has(verb) {
		return endpointsmetrics.OtherRequestMethod
	}
	return verb
}

// dryRun is kube's dry_run label: the request's dryRun values, sorted and deduplicated, or
// "invalid".
func dryRun(req *http.Request) string {
	if !strings.Contains(req.URL.RawQuery, "dryRun") {
		return ""
	}
	values := req.URL.Query()["dryRun"]
	if errs := validation.ValidateDryRun(nil, values); len(errs) > 0 {
		return "invalid"
	}
	return strings.Join(sets.List(sets.New(values...)), ",")
}

// longRunning is kube-apiserver's long-running request check: watches, proxies and the
// streaming subresources, which the in-flight counts leave out.
func longRunning(info *genericapirequest.RequestInfo) bool {
	if info == nil || !info.IsResourceRequest {
		return false
	}
	switch info.Verb {
	case "watch", "watchList", "proxy":
		return true
	}
	switch info.Subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// readOnlyVerbs are the request verbs kube's in-flight limit counts as read-only.
var readOnlyVerbs = sets.New("get", "list", "watch", "watchList")

// WithRequests records every request next serves: apiserver_request_total,
// apiserver_request_duration_seconds, apiserver_response_sizes, apiserver_longrunning_requests
// and the in-flight counts. It goes after authorization, as kube's instrumentation: requests
// refused there (401, 403) are not counted.
func (m *Metrics) WithRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start, ok := genericapirequest.ReceivedTimestampFrom(req.Context())
		if !ok {
			start = time.Now()
		}
		info, _ := genericapirequest.RequestInfoFrom(req.Context())
		if !longRunning(info) {
			mutating := info != nil && !readOnlyVerbs.Has(info.Verb)
			m.inflight.add(mutating, 1)
			defer m.inflight.add(mutating, -1)
		}
		l, report := labelsOf(req, info)
		if report && info != nil && info.IsResourceRequest && !m.served(info) {
			// kube instruments only the routes it serves: a client naming resources that do
			// not exist must not make series without bound.
			report = false
		}
		if !report {
			next.ServeHTTP(w, req)
			return
		}
		if l.verb == endpointsmetrics.MethodWatch || l.verb == endpointsmetrics.MethodConnect {
			g := m.longRunning.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component)
			g.Inc()
			defer g.Dec()
		}
		delegate := &endpointsmetrics.ResponseWriterDelegator{ResponseWriter: w}
		completed := false
		defer func() {
			code := delegate.Status()
			if !completed {
				code = http.StatusInternalServerError // next panicked; the chain answers 500
			} else if code == 0 {
				code = http.StatusOK // nothing written: net/http answers 200
			}
			m.observeRequest(l, code, delegate.ContentLength(), time.Since(start))
		}()
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(delegate), req)
		completed = true
	})
}

func (m *Metrics) observeRequest(l requestLabels, code, size int, elapsed time.Duration) {
	m.requests.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component, strconv.Itoa(code)).Inc()
	m.latencies.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component).Observe(elapsed.Seconds())
	// kube records response sizes of reads only.
	if l.verb == endpointsmetrics.MethodGet || l.verb == endpointsmetrics.MethodList {
		m.responseSizes.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component).Observe(float64(size))
	}
}

// ServedResources tells the request filter which resource requests kube-apiserver would have
// a route for (and so count): served(group, version, resource, subresource). Without it every
// resource request is counted.
func (m *Metrics) ServedResources(served func(group, version, resource, subresource string) bool) {
	m.servedResources.Store(&served)
}

func (m *Metrics) served(info *genericapirequest.RequestInfo) bool {
	served := m.servedResources.Load()
	return served == nil || (*served)(info.APIGroup, info.APIVersion, info.Resource, info.Subresource)
}
