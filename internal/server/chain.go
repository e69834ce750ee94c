package server

import (
	"encoding/json"
	"fmt"
	kubeuser "k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"net/http"
	"net/http/pprof"
	"runtime"
	"runtime/debug"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/lapis-dev/lapis/internal/auth"
	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/discovery"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/openapi"
	"github.com/lapis-dev/lapis/internal/routing"
)

// Version is what /version reports: the Kubernetes API level lapis implements.
var Version = version.Info{
	Major: "1", Minor: "37", GitVersion: "v1.37.2-lapis", GitTreeState: "clean", BuildDate: "1970-01-01T00:00:00Z",
	GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
}

// chain builds the request path: recover → health/version (open to all) → authenticate →
// authorize → discovery, OpenAPI or resource verbs.
func (s *Server) chain(creds *auth.Credentials, cat *catalog.Catalog) http.Handler {
	authn := auth.NewAuthenticator(creds.AdminToken)
	var authz auth.Authorizer = auth.AllowAuthenticated{}
	disc := discovery.NewHandler(cat)
	oapi := openapi.NewService(cat)
	verbs := handlers.New(s.objects).WithAuth(authn, authz)
	health := newHealth(s.objects.Store(), s.ready.Load)
	profiling := http.NewServeMux()
	profiling.HandleFunc("/debug/pprof/", pprof.Index)
	profiling.HandleFunc("/debug/pprof/profile", pprof.Profile)
	profiling.HandleFunc("/debug/pprof/trace", pprof.Trace)

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
		if h, ok := health.handler(req.URL.Path); ok {
			h(w, req)
			return
		}
		switch req.URL.Path {
		case "/version", "/version/":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(Version)
			return
		}
		user, ok := authn.Authenticate(req)
		if !ok {
			handlers.WriteError(w, req, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		ctx := auth.WithUser(req.Context(), user)
		// kube's strategies and admission plugins read the user where kube-apiserver keeps it.
		ctx = genericapirequest.WithUser(ctx, &kubeuser.DefaultInfo{Name: user.Name, Groups: user.Groups})
		req = req.WithContext(ctx)
		info := routing.Parse(req)
		attrs := auth.Attributes{User: user, Path: req.URL.Path, Verb: strings.ToLower(req.Method)}
		if info.IsResource {
			attrs = auth.Attributes{User: user, Verb: info.Verb, Group: info.Group, Version: info.Version,
				Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
		}
		if allowed, reason, err := authz.Authorize(ctx, attrs); err != nil || !allowed {
			handlers.WriteError(w, req, apierrors.NewForbidden(schema.GroupResource{Group: info.Group, Resource: info.Resource}, info.Name, fmt.Errorf("%s", reason)))
			return
		}
		switch {
		case info.IsResource:
			verbs.Serve(w, req, info)
		case strings.HasPrefix(req.URL.Path, "/debug/pprof"):
			// Profiling for authenticated users, as kube-apiserver's --profiling (on by default).
			profiling.ServeHTTP(w, req)
		case disc.Serves(req.URL.Path):
			disc.ServeHTTP(w, req)
		case req.URL.Path == "/openapi/v2" || strings.HasPrefix(req.URL.Path, "/openapi/v3"):
			oapi.ServeHTTP(w, req)
		default:
			handlers.WriteError(w, req, apierrors.NewNotFound(schema.GroupResource{}, ""))
		}
	})
}
