package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	authenticationvalidation "k8s.io/kubernetes/pkg/apis/authentication/validation"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/openapi"
)

var (
	tokenRequestGVs = []schema.GroupVersion{authenticationv1.SchemeGroupVersion}
	tokenRequestGK  = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}

	secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// TokenIssuer signs ServiceAccount tokens (authn.Authenticator): kube's TokenREST once it has
// looked up the ServiceAccount and the object the token is bound to (a *corev1.Pod, *corev1.Secret
// or *corev1.Node, or nil). Warnings go to ctx's warning recorder.
type TokenIssuer interface {
	IssueToken(ctx context.Context, sa *corev1.ServiceAccount, req *authenticationapi.TokenRequest, bound runtime.Object) (*authenticationapi.TokenRequest, error)
}

// audiencesProvider is a TokenIssuer that says which audiences a request without any gets:
// kube defaults them before validating the request.
type audiencesProvider interface {
	APIAudiences() authenticator.Audiences
}

// WithTokenIssuer lets serviceaccounts/token issue tokens with i.
func (h *Handler) WithTokenIssuer(i TokenIssuer) *Handler {
	h.computed.tokens = &tokenEndpoint{TokenIssuer: i}
	return h
}

// tokenEndpoint is the issuer and the field manager of the TokenRequests it answers with.
type tokenEndpoint struct {
	TokenIssuer
	once   sync.Once
	fields *managedfields.FieldManager // nil when it cannot be built: answers go without managedFields
}

// issuer is the endpoint's issuer; nil for none.
func (t *tokenEndpoint) issuer() TokenIssuer {
	if t == nil {
		return nil
	}
	return t.TokenIssuer
}

// fieldManager is kube's for serviceaccounts/token: TokenRequest managedFields entries name the
// subresource.
func (t *tokenEndpoint) fieldManager() *managedfields.FieldManager {
	t.once.Do(func() {
		r := &catalog.Resource{GroupVersion: authenticationv1.SchemeGroupVersion, Kind: "TokenRequest", Name: "tokenrequests", Virtual: true}
		types, err := managedfields.NewTypeConverter(openapi.Models([]*catalog.Resource{r}), false)
		if err != nil {
			return
		}
		s := legacyscheme.Scheme
		t.fields, _ = managedfields.NewDefaultFieldManager(types, s, s, s, r.GroupVersionKind(), r.GroupVersion, "token", nil)
	})
	return t.fields
}

// token is serviceaccounts/{name}/token (TokenRequest), kube's TokenREST: it checks the request
// (names, the ServiceAccount, kube's validation), looks up the object the token is bound to,
// and answers 201 with the TokenRequest and its token. Dry-run issues a token too, as kube's
// does. Without an issuer it refuses with a 400 that says so after the same checks.
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
	recorder := &tokenWarnings{texts: warnings}
	out, err := h.issueToken(warning.WithWarningRecorder(kubeContext(rq), recorder), rq, obj.(*authenticationapi.TokenRequest), opts.FieldManager)
	writeWarnings(rq.w, recorder.texts)
	if err != nil {
		return err
	}
	return h.writeComputed(rq, http.StatusCreated, out, authenticationv1.SchemeGroupVersion)
}

// issueToken is the body of kube's TokenREST.Create, in its order, up to the issuer.
func (h *Handler) issueToken(ctx context.Context, rq *request, req *authenticationapi.TokenRequest, manager string) (*authenticationapi.TokenRequest, error) {
	endpoint, _ := h.computed.tokens.(*tokenEndpoint)
	if endpoint != nil {
		// kube-apiserver's create handler records the fields as they were sent.
		h.trackTokenFields(rq, endpoint, req, manager)
	}
	name, namespace := rq.info.Name, rq.info.Namespace
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, req); err != nil {
		return nil, err
	}
	if len(req.Name) > 0 && req.Name != name {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("name"), req.Name, "must match the service account name if specified")})
	}
	u, err := h.objects.Get(ctx, rq.resource, namespace, name)
	if err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sa); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if len(req.UID) > 0 && req.UID != sa.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: tokenRequestGK.Group, Resource: tokenRequestGK.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	if p, ok := endpoint.issuer().(audiencesProvider); ok && len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = p.APIAudiences()
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	req.Status = authenticationapi.TokenRequestStatus{}
	if errs := authenticationvalidation.ValidateTokenRequest(req); len(errs) != 0 {
		return nil, apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	if endpoint == nil {
		return nil, errNoTokenIssuer(name)
	}
	bound, err := h.tokenBoundObject(ctx, namespace, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	return endpoint.IssueToken(ctx, sa, req, bound)
}

// tokenBoundObject looks up the object a token is to be bound to, as kube's TokenREST does:
// Pods and Secrets of the namespace, Nodes, whatever the reference's version. It is nil for
// other kinds, which the issuer refuses.
func (h *Handler) tokenBoundObject(ctx context.Context, namespace string, ref *authenticationapi.BoundObjectReference) (runtime.Object, error) {
	if ref == nil {
		return nil, nil
	}
	var (
		gvr schema.GroupVersionResource
		obj runtime.Object
	)
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		gvr, obj = podsResource, &corev1.Pod{}
	case gvk.Group == "" && gvk.Kind == "Secret":
		gvr, obj = secretsResource, &corev1.Secret{}
	case gvk.Group == "" && gvk.Kind == "Node":
		gvr, obj, namespace = nodesResource, &corev1.Node{}, ""
	default:
		return nil, nil
	}
	r, ok := h.objects.Catalog().Lookup(gvr)
	if !ok {
		return nil, ErrNoRoute
	}
	u, err := h.objects.Get(ctx, r, namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj, nil
}

// trackTokenFields records the request's fields in its managedFields, as kube-apiserver's
// create handler does before TokenREST sees the request. Failures leave it as it was.
func (h *Handler) trackTokenFields(rq *request, endpoint *tokenEndpoint, req *authenticationapi.TokenRequest, manager string) {
	fm := endpoint.fieldManager()
	if fm == nil {
		return
	}
	s := legacyscheme.Scheme
	versioned, err := s.ConvertToVersion(req.DeepCopy(), authenticationv1.SchemeGroupVersion)
	if err != nil {
		return
	}
	tracked := fm.UpdateNoErrors(&authenticationv1.TokenRequest{}, versioned, managerOrUserAgent(manager, rq.req.UserAgent()))
	_ = s.Convert(tracked, req, nil)
}

// tokenWarnings collects the warnings of a token request, each once, as kube's recorder.
type tokenWarnings struct{ texts []string }

func (w *tokenWarnings) AddWarning(_, text string) {
	if !slices.Contains(w.texts, text) {
		w.texts = append(w.texts, text)
	}
}

func errNoTokenIssuer(name string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("cannot issue a token for serviceaccount %q: lapis has no service account token issuer", name))
}
