package handlers

import (
	"context"
	"net/http"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/routing"
)

// Endpoint serves one of kube's special endpoints: a resource or subresource kube-apiserver
// answers with its own REST code rather than with the generic verbs (package special).
type Endpoint interface {
	Serve(rq *Request) error
}

// Route names what an Endpoint serves: a resource, or one subresource of it; a route with a
// subresource alone serves that subresource of every resource that has it.
type Route struct {
	Group, Resource, Subresource string
}

// Endpoints are the special endpoints by what they serve.
type Endpoints map[Route]Endpoint

// WithEndpoints lets the handler answer the routes of e with their endpoints.
func (h *Handler) WithEndpoints(e Endpoints) *Handler {
	h.endpoints = e
	return h
}

// endpoint is the special endpoint serving rq, if any.
func (h *Handler) endpoint(rq *request) (Endpoint, bool) {
	gr := qualified(rq.resource)
	if e, ok := h.endpoints[Route{Group: gr.Group, Resource: gr.Resource, Subresource: rq.info.Subresource}]; ok {
		return e, true
	}
	if rq.info.Subresource == "" {
		return nil, false
	}
	e, ok := h.endpoints[Route{Subresource: rq.info.Subresource}]
	return e, ok
}

// Request is a request to a special endpoint, with what the verbs and the endpoints share:
// reading its options and body as kube's create handler does, and answering.
type Request struct {
	h  *Handler
	rq *request
}

// Info describes the request.
func (r *Request) Info() routing.RequestInfo { return r.rq.info }

// Resource is the catalogued resource the request is for.
func (r *Request) Resource() *catalog.Resource { return r.rq.resource }

// Manager is the field manager a write is recorded as: fieldManager, else the User-Agent's
// product, as kube-apiserver defaults it.
func (r *Request) Manager(fieldManager string) string {
	return managerOrUserAgent(fieldManager, r.rq.req.UserAgent())
}

// Context is the request's context as kube's REST endpoints read it: the user (set by the
// request chain), the namespace and the RequestInfo.
func (r *Request) Context() context.Context { return kubeContext(r.rq) }

// MethodNotAllowed is kube-apiserver's answer to a verb the endpoint does not serve.
func (r *Request) MethodNotAllowed() error { return methodNotAllowed(r.rq.resource, r.rq.info.Verb) }

// Body is how kube's create handler decodes an endpoint's body.
type Body struct {
	Kind string
	// Versions are those the body may be at; the first is the default.
	Versions []schema.GroupVersion
	// KeepSystemFields keeps the uid and resourceVersion, which the endpoint takes as
	// preconditions (kube's SubresourceObjectMetaPreserver).
	KeepSystemFields bool
}

// DecodeCreate reads a create: its options, then its body into kube's internal version,
// defaulted, with the warnings fieldValidation asks for about unknown fields. Only create is
// served.
func (r *Request) DecodeCreate(b Body) (runtime.Object, metav1.CreateOptions, []string, error) {
	if r.rq.info.Verb != "create" {
		return nil, metav1.CreateOptions{}, nil, r.MethodNotAllowed()
	}
	opts, err := createOptions(r.rq.req)
	if err != nil {
		return nil, opts, nil, err
	}
	obj, warnings, err := r.h.decodeInternal(r.rq, b, opts.FieldValidation)
	return obj, opts, warnings, err
}

// Warn answers with warnings (Warning headers).
func (r *Request) Warn(warnings []string) { writeWarnings(r.rq.w, warnings) }

// Respond answers with an internal object converted to gv, with code, as the client asked.
func (r *Request) Respond(code int, obj runtime.Object, gv schema.GroupVersion) error {
	return r.h.writeComputed(r.rq, code, obj, gv)
}

// RespondSuccess answers with a success Status and code.
func (r *Request) RespondSuccess(code int) error {
	return r.Respond(code, &metav1.Status{Status: metav1.StatusSuccess}, schema.GroupVersion{Version: "v1"})
}

// ListOptions are the request's list options.
func (r *Request) ListOptions() (metainternalversion.ListOptions, error) {
	return listOptions(r.rq.req, false)
}

// ReadTarget is what a read asks to be answered with (an object, a list, a Table...).
func (r *Request) ReadTarget(list bool) (routing.Target, error) { return readTarget(r.rq, list) }

// RespondRead answers a read with items as target asks, a list when list; a Table with the
// columns of printed's printer.
func (r *Request) RespondRead(target routing.Target, printed *catalog.Resource, items []*unstructured.Unstructured, list bool) error {
	if target.As != "" {
		at := *r.rq
		at.resource = printed
		writeConverted(&at, target, items, metav1.ListMeta{})
		return nil
	}
	if !list {
		r.h.writeObject(r.rq, http.StatusOK, items[0])
		return nil
	}
	raws, err := marshalled(items)
	if err != nil {
		return err
	}
	r.h.writeList(r.rq, http.StatusOK, target.MediaType, metav1.ListMeta{}, raws, nil)
	return nil
}

// kubeContext is the request's context as kube's REST endpoints read it.
func kubeContext(rq *request) context.Context {
	ctx := genericapirequest.WithNamespace(rq.req.Context(), rq.info.Namespace)
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: rq.info.Verb, APIPrefix: rq.info.APIPrefix, APIGroup: rq.info.Group,
		APIVersion: rq.info.Version, Namespace: rq.info.Namespace, Resource: rq.info.Resource,
		Subresource: rq.info.Subresource, Name: rq.info.Name,
	})
}
