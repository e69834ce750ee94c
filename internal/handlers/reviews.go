package handlers

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/registry/authentication/selfsubjectreview"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
	"k8s.io/kubernetes/pkg/registry/authorization/localsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectrulesreview"
	"k8s.io/kubernetes/pkg/registry/authorization/subjectaccessreview"
)

// reviews are kube's REST endpoints of the review resources, over the request path's
// authenticator and authorizer: kube's validation, its answers and its errors.
var reviews = map[schema.GroupResource]func(c *computed) rest.Creater{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}: func(*computed) rest.Creater { return selfsubjectreview.NewREST() },
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}: func(c *computed) rest.Creater {
		return tokenreview.NewREST(c.authn, c.audiences)
	},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}: func(c *computed) rest.Creater {
		return subjectaccessreview.NewREST(c.authz, legacyscheme.Scheme)
	},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}: func(c *computed) rest.Creater {
		return selfsubjectaccessreview.NewREST(c.authz, legacyscheme.Scheme)
	},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: func(c *computed) rest.Creater {
		return localsubjectaccessreview.NewREST(c.authz, legacyscheme.Scheme)
	},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}: func(c *computed) rest.Creater {
		return selfsubjectrulesreview.NewREST(c.rules)
	},
}

// review answers a create of a review resource with kube's REST endpoint: 201 and the review
// with its status. Dry-run changes nothing: a review stores nothing.
func (h *Handler) review(rq *request, creater func(c *computed) rest.Creater) error {
	opts, err := createOptions(rq.req)
	if err != nil {
		return err
	}
	obj, warnings, err := h.decodeInternal(rq, rq.resource.Kind, []schema.GroupVersion{rq.resource.GroupVersion}, opts.FieldValidation)
	if err != nil {
		return err
	}
	writeWarnings(rq.w, warnings)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(rq.info.Namespace, m); err != nil {
		return err
	}
	h.trackComputedFields(rq, obj, opts.FieldManager)
	out, err := creater(h.computed).Create(kubeContext(rq), obj, nil, &opts)
	if err != nil {
		return err
	}
	return h.writeComputed(rq, http.StatusCreated, out, rq.resource.GroupVersion)
}

// kubeContext is the request's context as kube's REST endpoints read it: the user (set by the
// request chain), the namespace and the RequestInfo.
func kubeContext(rq *request) context.Context {
	ctx := genericapirequest.WithNamespace(rq.req.Context(), rq.info.Namespace)
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: rq.info.Verb, APIPrefix: rq.info.APIPrefix, APIGroup: rq.info.Group,
		APIVersion: rq.info.Version, Namespace: rq.info.Namespace, Resource: rq.info.Resource,
		Subresource: rq.info.Subresource, Name: rq.info.Name,
	})
}

// authorizeAs authorizes the request's object as verb (the create of a server-side apply that
// finds nothing to merge into): kube's decision and kube's Forbidden answer.
func (h *Handler) authorizeAs(rq *request, verb string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		u, _ := genericapirequest.UserFrom(ctx)
		attrs := authorizer.AttributesRecord{User: u, Verb: verb, Namespace: rq.info.Namespace, APIGroup: rq.info.Group,
			APIVersion: rq.info.Version, Resource: rq.info.Resource, Subresource: rq.info.Subresource, Name: rq.info.Name,
			ResourceRequest: true, Path: rq.req.URL.Path}
		decision, reason, err := h.computed.authz.Authorize(ctx, attrs)
		switch {
		case decision == authorizer.DecisionAllow:
			return nil
		case err != nil:
			return apierrors.NewInternalError(err)
		}
		return responsewriters.ForbiddenStatusError(attrs, reason)
	}
}

// errNoUser is kube's answer when a request carries no user.
var errNoUser = apierrors.NewBadRequest("no user present on request")
