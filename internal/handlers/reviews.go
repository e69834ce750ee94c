package handlers

import (
	"context"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	kubeuser "k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/registry/authentication/selfsubjectreview"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
	"k8s.io/kubernetes/pkg/registry/authorization/localsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectrulesreview"
	"k8s.io/kubernetes/pkg/registry/authorization/subjectaccessreview"

	"github.com/lapis-dev/lapis/internal/auth"
)

// reviews are kube's REST endpoints of the review resources, over lapis's authenticator and
// authorizer: kube's validation, its answers and its errors.
var reviews = map[schema.GroupResource]func(c *computed) rest.Creater{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}: func(*computed) rest.Creater { return selfsubjectreview.NewREST() },
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}: func(c *computed) rest.Creater {
		if c.authn == nil {
			return tokenreview.NewREST(nil, nil)
		}
		return tokenreview.NewREST(tokenAuthenticator{c.authn}, nil)
	},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}: func(c *computed) rest.Creater {
		return subjectaccessreview.NewREST(kubeAuthorizer{c.authz}, legacyscheme.Scheme)
	},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}: func(c *computed) rest.Creater {
		return selfsubjectaccessreview.NewREST(kubeAuthorizer{c.authz}, legacyscheme.Scheme)
	},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: func(c *computed) rest.Creater {
		return localsubjectaccessreview.NewREST(kubeAuthorizer{c.authz}, legacyscheme.Scheme)
	},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}: func(c *computed) rest.Creater {
		return selfsubjectrulesreview.NewREST(kubeAuthorizer{c.authz})
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
	if _, ok := genericapirequest.UserFrom(ctx); !ok {
		if u, ok := auth.UserFrom(ctx); ok {
			ctx = genericapirequest.WithUser(ctx, &kubeuser.DefaultInfo{Name: u.Name, Groups: u.Groups})
		}
	}
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: rq.info.Verb, APIPrefix: rq.info.APIPrefix, APIGroup: rq.info.Group,
		APIVersion: rq.info.Version, Namespace: rq.info.Namespace, Resource: rq.info.Resource,
		Subresource: rq.info.Subresource, Name: rq.info.Name,
	})
}

// tokenAuthenticator is lapis's authenticator as kube's token authenticator: a bearer token
// nobody owns is kube's "invalid bearer token".
type tokenAuthenticator struct{ authn TokenAuthenticator }

var errInvalidToken = errors.New("invalid bearer token")

func (t tokenAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	u, ok := t.authn.Authenticate(req)
	if !ok {
		return nil, false, errInvalidToken
	}
	return &authenticator.Response{User: &kubeuser.DefaultInfo{Name: u.Name, Groups: u.Groups}}, true, nil
}

// kubeAuthorizer is lapis's Authorizer as kube's authorizer and rule resolver: what the access
// reviews ask. A refusal is kube's NoOpinion (as RBAC, which never denies outright).
type kubeAuthorizer struct{ authz auth.Authorizer }

func (k kubeAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	attrs := auth.Attributes{User: lapisUser(a.GetUser()), Verb: a.GetVerb()}
	if a.IsResourceRequest() {
		attrs.Group, attrs.Version, attrs.Resource, attrs.Subresource = a.GetAPIGroup(), a.GetAPIVersion(), a.GetResource(), a.GetSubresource()
		attrs.Namespace, attrs.Name = a.GetNamespace(), a.GetName()
	} else {
		attrs.Path = a.GetPath()
	}
	allowed, reason, err := k.authz.Authorize(ctx, attrs)
	if allowed {
		return authorizer.DecisionAllow, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

// RuleResolver is an Authorizer that can list what a user may do in a namespace (kube's
// authorizer.RuleResolver, as RBAC offers it): selfsubjectrulesreviews answer from it.
type RuleResolver interface {
	RulesFor(ctx context.Context, user auth.User, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error)
}

// errNoRules is the evaluation error of a rules review an authorizer cannot answer.
var errNoRules = errors.New("the authorizer does not list rules")

func (k kubeAuthorizer) RulesFor(ctx context.Context, u kubeuser.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	switch a := k.authz.(type) {
	case RuleResolver:
		return a.RulesFor(ctx, lapisUser(u), namespace)
	case auth.AllowAuthenticated:
		// Every authenticated user may do everything.
		return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			false, nil
	}
	return nil, nil, true, errNoRules
}

func lapisUser(u kubeuser.Info) auth.User {
	if u == nil {
		return auth.User{}
	}
	return auth.User{Name: u.GetName(), Groups: u.GetGroups()}
}

// errNoUser is kube's answer when a request carries no user.
var errNoUser = apierrors.NewBadRequest("no user present on request")
