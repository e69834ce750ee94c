package handlers

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	authenticationvalidation "k8s.io/kubernetes/pkg/apis/authentication/validation"
)

var (
	tokenRequestGVs = []schema.GroupVersion{{Group: "authentication.k8s.io", Version: "v1"}}
	tokenRequestGK  = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}
)

// token is serviceaccounts/{name}/token (TokenRequest). kube-apiserver cannot run without a
// token issuer (--service-account-issuer is required); lapis has none yet, since the tokens
// would authenticate nobody. It checks the request as kube's TokenREST does (the ServiceAccount,
// names, kube's validation), then refuses with a 400 that says why, never issuing a token.
func (h *Handler) token(rq *request) error {
	if rq.info.Verb != "create" {
		return methodNotAllowed(rq.resource, rq.info.Verb)
	}
	opts, err := createOptions(rq.req)
	if err != nil {
		return err
	}
	obj, warnings, err := h.decodeInternal(rq, "TokenRequest", tokenRequestGVs, opts.FieldValidation)
	if err != nil {
		return err
	}
	writeWarnings(rq.w, warnings)
	req := obj.(*authenticationapi.TokenRequest)
	name, namespace := rq.info.Name, rq.info.Namespace
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, req); err != nil {
		return err
	}
	if len(req.Name) > 0 && req.Name != name {
		return apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("name"), req.Name, "must match the service account name if specified")})
	}
	sa, err := h.objects.Get(kubeContext(rq), rq.resource, namespace, name)
	if err != nil {
		return err
	}
	if len(req.UID) > 0 && req.UID != sa.GetUID() {
		return apierrors.NewConflict(schema.GroupResource{Group: tokenRequestGK.Group, Resource: tokenRequestGK.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.GetUID()))
	}
	req.Name, req.Namespace, req.UID = sa.GetName(), sa.GetNamespace(), sa.GetUID()
	req.Status = authenticationapi.TokenRequestStatus{}
	if errs := authenticationvalidation.ValidateTokenRequest(req); len(errs) != 0 {
		return apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	return errNoTokenIssuer(name)
}

func errNoTokenIssuer(name string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("cannot issue a token for serviceaccount %q: lapis has no service account token issuer", name))
}
