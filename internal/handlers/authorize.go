package handlers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// WithAuthorizer gives the handler the request path's authorizer, which kube's connect
// endpoints and server-side apply's creates ask (it allows everything until then).
func (h *Handler) WithAuthorizer(a authorizer.Authorizer) *Handler {
	h.authz = a
	return h
}

// authorizeAs authorizes the request's object as verb (the create of a server-side apply that
// finds nothing to merge into): kube's decision and kube's Forbidden answer.
func (h *Handler) authorizeAs(rq *request, verb string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		u, _ := genericapirequest.UserFrom(ctx)
		attrs := authorizer.AttributesRecord{User: u, Verb: verb, Namespace: rq.info.Namespace, APIGroup: rq.info.Group,
			APIVersion: rq.info.Version, Resource: rq.info.Resource, Subresource: rq.info.Subresource, Name: rq.info.Name,
			ResourceRequest: true, Path: rq.req.URL.Path}
		decision, reason, err := h.authz.Authorize(ctx, attrs)
		switch {
		case decision == authorizer.DecisionAllow:
			return nil
		case err != nil:
			return apierrors.NewInternalError(err)
		}
		return responsewriters.ForbiddenStatusError(attrs, reason)
	}
}
