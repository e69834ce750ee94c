package handlers

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
)

// Handler serves the verbs of every catalogued resource.
type Handler struct {
	objects *objects.Service
	// typed knows the Go types of built-in kinds, which strategic merge patch needs.
	typed    *runtime.Scheme
	protobuf runtime.Serializer
	// decodes holds, with legacyscheme.Scheme, the kinds kube-apiserver decodes (kubeDecodes).
	decodes *runtime.Scheme
	// authz decides what kube's connect endpoints and server-side apply's creates may do.
	authz authorizer.Authorizer
	// endpoints are kube's special endpoints (package special).
	endpoints Endpoints
	// watches is told of watches and their events (observe.go).
	watches WatchObserver
	// verbs serve the generic verbs, by RequestInfo verb.
	verbs map[string]func(*request) error
}

// New returns a Handler over svc.
func New(svc *objects.Service) *Handler {
	typed := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(typed)
	_ = apiextensionsv1.AddToScheme(typed)
	_ = apiregistrationv1.AddToScheme(typed)
	// kube-apiserver decodes built-in bodies with its own schemes: the legacy scheme and, for
	// its own groups, apiextensions-apiserver's and kube-aggregator's.
	decodes := runtime.NewScheme()
	apiextensionsinstall.Install(decodes)
	apiregistrationinstall.Install(decodes)
	h := &Handler{objects: svc, typed: typed, decodes: decodes, protobuf: newProtobufSerializer(typed), watches: noWatchObserver{}}
	h.authz = authorizerfactory.NewAlwaysAllowAuthorizer()
	h.verbs = map[string]func(*request) error{
		"get": h.get, "list": h.list, "watch": h.watch, "create": h.create, "update": h.update, "patch": h.patch,
		"delete": h.delete, "deletecollection": h.deleteCollection,
	}
	return h
}

// Serve answers a resource request described by info.
func (h *Handler) Serve(w http.ResponseWriter, req *http.Request, info routing.RequestInfo) {
	gvr := schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}
	r, ok := h.objects.Catalog().Lookup(gvr)
	if !ok {
		if !h.objects.Catalog().ServesGroup(info.Group) {
			// kube-apiserver has no handler at all for a group it does not serve.
			http.NotFound(w, req)
			return
		}
		writeError(w, req, ErrNoRoute)
		return
	}
	if r.SubresourceVerbs(info.Subresource) == nil {
		// As kube-apiserver: no route for built-in types; the apiextensions handler names the object.
		err := error(ErrNoRoute)
		if r.ServedByAPIExtensions {
			err = apierrors.NewNotFound(qualified(r), info.Name)
		}
		writeError(w, req, err)
		return
	}
	if !r.Serves(info.Subresource, info.Verb) || (req.Method == http.MethodHead && !r.ServedByAPIExtensions) {
		// Built-in routes have no HEAD; the apiextensions handler serves it as a GET.
		writeError(w, req, methodNotAllowed(r, info.Verb))
		return
	}
	if !r.Namespaced {
		info.Namespace = ""
	} else if info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		writeError(w, req, apierrors.NewNotFound(schema.GroupResource{Group: info.Group, Resource: info.Resource}, info.Name))
		return
	}
	if r.DeprecationWarning != "" {
		// kube-apiserver warns of a deprecated kind on every request for it.
		writeWarnings(w, []string{r.DeprecationWarning})
	}
	rq := &request{w: w, req: req, info: info, resource: r, protobuf: h.typed.Recognizes(r.GroupVersionKind())}
	if err := h.verb(rq); err != nil {
		writeError(w, req, err)
	}
}

// verb runs the handler of the request's verb; what it returns is the error to answer with.
func (h *Handler) verb(rq *request) error {
	if e, ok := h.endpoint(rq); ok {
		return e.Serve(&Request{h: h, rq: rq})
	}
	if rq.resource.Virtual {
		// What kube-apiserver computes is served by the special endpoints only.
		return apierrors.NewMethodNotSupported(qualified(rq.resource), rq.info.Verb)
	}
	switch rq.info.Subresource {
	case "log", "exec", "attach", "portforward", "proxy":
		return h.connect(rq)
	}
	if serve, ok := h.verbs[rq.info.Verb]; ok {
		return serve(rq)
	}
	return apierrors.NewMethodNotSupported(qualified(rq.resource), rq.info.Verb)
}

// methodNotAllowed is kube-apiserver's 405 for a verb a resource or subresource does not serve:
// the apiextensions handler names the verb for custom resources; built-in routes answer with
// the generic method-not-allowed status.
func methodNotAllowed(r *catalog.Resource, verb string) error {
	if r.ServedByAPIExtensions {
		return apierrors.NewMethodNotSupported(qualified(r), verb)
	}
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
}

func qualified(r *catalog.Resource) schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name}
}

// request bundles what every verb handler needs.
type request struct {
	w        http.ResponseWriter
	req      *http.Request
	info     routing.RequestInfo
	resource *catalog.Resource
	// protobuf is true when the resource's objects have a Protobuf form (a Go type).
	protobuf bool
}

// ErrNoRoute is kube-apiserver's answer for a path that names no served resource of a served
// API group (a group it does not serve has no handler: a plain 404).
var ErrNoRoute = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
	Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
}}
