package special

import (
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/objects"
)

// Auth is what the request path knows about identity that the review resources answer from:
// kube's authenticator (tokenreviews), the API audiences (also those of TokenRequests that
// name none), and kube's authorizer and rule resolver (access and rules reviews; both allow
// everything when nil).
type Auth struct {
	Authenticator authenticator.Request
	Audiences     authenticator.Audiences
	Authorizer    authorizer.Authorizer
	Rules         authorizer.RuleResolver
}

// New returns kube's special endpoints over svc: the reviews answer from auth, and
// serviceaccounts/token issues tokens with tokens (nil: it refuses to) for auth's audiences
// when a request names none.
func New(svc *objects.Service, auth Auth, tokens TokenIssuer) handlers.Endpoints {
	if auth.Authorizer == nil {
		auth.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	}
	if auth.Rules == nil {
		auth.Rules = authorizerfactory.NewAlwaysAllowAuthorizer()
	}
	fields := &fieldmanager.Computed{}
	bind := &binder{objects: svc}
	e := handlers.Endpoints{
		{Resource: "bindings"}:                              bind,
		{Resource: "pods", Subresource: "binding"}:          bind,
		{Resource: "pods", Subresource: "eviction"}:         &evictions{objects: svc},
		{Resource: "serviceaccounts", Subresource: "token"}: newTokenRequests(svc, tokens, auth.Audiences, fields),
		{Resource: "componentstatuses"}:                     &componentStatuses{servers: kubeComponents(svc)},
		{Subresource: "scale"}:                              &scales{objects: svc},
	}
	for gr, creater := range reviewCreaters(auth) {
		e[handlers.Route{Group: gr.Group, Resource: gr.Resource}] = &review{creater: creater, fields: fields}
	}
	return e
}
