package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"
	"runtime/debug"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/httplog"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/lapis-dev/lapis/internal/aggregator"
	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/discovery"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/handlers/special"
	"github.com/lapis-dev/lapis/internal/openapi"
	"github.com/lapis-dev/lapis/internal/routing"
)

// Version is what /version reports: the Kubernetes API level lapis implements.
var Version = version.Info{
	Major: "1", Minor: "37", GitVersion: "v1.37.2-lapis", GitTreeState: "clean", BuildDate: "1970-01-01T00:00:00Z",
	GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
}

// identity is who may do what: kube's authenticator, API audiences, authorizer and rule
// resolver, as the request path and the review resources use them.
type identity struct {
	authn     authenticator.Request
	audiences authenticator.Audiences
	authz     authorizer.Authorizer
	rules     authorizer.RuleResolver
	tokens    special.TokenIssuer // TokenRequests
	issuer    tokenIssuer         // what ServiceAccount issuer discovery publishes
}

// chain builds the request path as kube-apiserver's handler chain orders it, with kube's own
// filters: request info → authentication → impersonation → authorization, then health, version,
// discovery, OpenAPI, profiling or resource verbs. Nothing is served before authorization.
func (s *Server) chain(id identity, cat *catalog.Catalog, disc *discovery.Handler, agg *aggregator.Aggregator) http.Handler {
	oapi := openapi.NewService(cat).WithAggregated(agg.OpenAPI())
	metrics := s.newMetrics()
	verbs := handlers.New(s.objects).WithAuthorizer(id.authz).WithWatchObserver(metrics).WithEndpoints(special.New(s.objects,
		special.Auth{Authenticator: id.authn, Audiences: id.audiences, Authorizer: id.authz, Rules: id.rules}, id.tokens))
	metricsHandler := metrics.Handler()
	health := newHealth(healthSources{store: s.objects.Store(), ready: s.ready.Load, informersSynced: informersSynced(id.authz),
		loopbackExpiry: s.loopbackExpiry, hooks: s.hooks.checks()})
	oidc := s.issuerDiscovery(id.issuer)
	profiling := http.NewServeMux()
	profiling.HandleFunc("/debug/pprof/", pprof.Index)
	profiling.HandleFunc("/debug/pprof/profile", pprof.Profile)
	profiling.HandleFunc("/debug/pprof/trace", pprof.Trace)

	serve := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h, ok := health.Handler(req.URL.Path); ok {
			h(w, req)
			return
		}
		if proxy, ok := agg.Route(req.URL.Path); ok {
			proxy.ServeHTTP(w, req) // an extension server's group version
			return
		}
		info := routing.Parse(req)
		switch {
		case req.URL.Path == "/version" || req.URL.Path == "/version/":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(Version)
		case info.IsResource:
			verbs.Serve(w, req, info)
		case oidc != nil && (req.URL.Path == serviceaccount.OpenIDConfigPath || req.URL.Path == serviceaccount.JWKSPath):
			oidc.ServeHTTP(w, req)
		case req.URL.Path == "/metrics":
			metricsHandler.ServeHTTP(w, req)
		case strings.HasPrefix(req.URL.Path, "/debug/pprof"):
			// Profiling, as kube-apiserver's --profiling (on by default), for whom RBAC lets in.
			profiling.ServeHTTP(w, req)
		case disc.Serves(req.URL.Path):
			disc.ServeHTTP(w, req)
		case req.URL.Path == "/openapi/v2" || strings.HasPrefix(req.URL.Path, "/openapi/v3"):
			oapi.ServeHTTP(w, req)
		case strings.HasPrefix(req.URL.Path, "/version/"):
			handlers.WriteError(w, req, handlers.ErrNoRoute)
		default:
			http.NotFound(w, req) // as kube-apiserver's last handler
		}
	})
	codecs := legacyscheme.Codecs
	// Requests are counted once authorized, as kube-apiserver counts them.
	handler := metrics.WithRequests(serve)
	handler = genericfilters.WithAuthorization(handler, id.authz, codecs)
	handler = withInflightLimit(handler, s.cfg) // --max-requests-inflight: kube's place for it
	handler = impersonation.WithConstrainedImpersonation(handler, id.authz, codecs)
	// As kube-apiserver's DefaultBuildHandlerChain: audit right inside authentication (401s
	// audited by the failed-authentication handler), then the request deadline, request logs
	// (-v=3) outside it (a 504 is logged), the audit ID (Audit-Id header) given first.
	handler = s.audit.WithAudit(handler)
	handler = genericfilters.WithAuthentication(handler, id.authn, s.audit.WithFailedAuthenticationAudit(genericfilters.Unauthorized(codecs)), id.audiences, nil)
	// Panics are answered inside the deadline's goroutine: withRequestTimeout passes on only
	// http.ErrAbortHandler.
	handler = s.recoverPanics(handler)
	handler = withRequestTimeout(handler, s.cfg.RequestTimeout)
	handler = httplog.WithLogging(handler, httplog.DefaultStacktracePred)
	handler = genericfilters.WithRequestInfo(handler, requestInfoResolver)
	handler = genericfilters.WithRequestReceivedTimestamp(handler)
	handler = audit.WithAuditInit(handler)
	return s.requests.track(s.recoverPanics(handler)) // a shutdown lets these finish
}

// recoverPanics answers a handler's panic with a 500 (http.ErrAbortHandler goes on: it ends
// the connection).
func (s *Server) recoverPanics(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("request panicked", "method", req.Method, "path", req.URL.Path, "panic", p, "stack", string(debug.Stack()))
				handlers.WriteError(w, req, apierrors.NewInternalError(fmt.Errorf("%v", p)))
			}
		}()
		handler.ServeHTTP(w, req)
	})
}

// requestInfoResolver is kube-apiserver's: the attributes every request is authorized with.
var requestInfoResolver = &genericapirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}
