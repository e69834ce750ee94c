package special

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	authenticationvalidation "k8s.io/kubernetes/pkg/apis/authentication/validation"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/objects"
)

var (
	tokenRequestGVs = []schema.GroupVersion{authenticationv1.SchemeGroupVersion}
	tokenRequestGK  = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}
)

// TokenIssuer signs ServiceAccount tokens (authn.Authenticator): kube's TokenREST once it has
// looked up the ServiceAccount and the object the token is bound to (a *corev1.Pod, *corev1.Secret
// or *corev1.Node, or nil). Warnings go to ctx's warning recorder.
type TokenIssuer interface {
	IssueToken(ctx context.Context, sa *corev1.ServiceAccount, req *authenticationapi.TokenRequest, bound runtime.Object) (*authenticationapi.TokenRequest, error)
}

// tokenRequests is serviceaccounts/{name}/token (TokenRequest), kube's TokenREST over an
// issuer (nil: none).
type tokenRequests struct {
	objects *objects.Service
	issuer  TokenIssuer
	fields  *fieldmanager.Computed
	// audiences are those a request without any gets: kube defaults them before validating
	// the request.
	audiences authenticator.Audiences
	// answers is what it answers with, whose field manager records the requests.
	answers *catalog.Resource
}

func newTokenRequests(svc *objects.Service, issuer TokenIssuer, audiences authenticator.Audiences, fields *fieldmanager.Computed) *tokenRequests {
	answers := &catalog.Resource{GroupVersion: authenticationv1.SchemeGroupVersion, Kind: "TokenRequest", Name: "tokenrequests", Virtual: true}
	return &tokenRequests{objects: svc, issuer: issuer, audiences: audiences, fields: fields, answers: answers}
}

var _ handlers.Endpoint = (*tokenRequests)(nil)

// Serve checks the request (names, the ServiceAccount, kube's validation), looks up the
// object the token is bound to, and answers 201 with the TokenRequest and its token. Dry-run
// issues a token too, as kube's does. Without an issuer it refuses with a 400 that says so
// after the same checks.
func (t *tokenRequests) Serve(rq *handlers.Request) error {
	// A TokenRequest keeps its uid, which must be the ServiceAccount's.
	obj, opts, warnings, err := rq.DecodeCreate(handlers.Body{Kind: "TokenRequest", Versions: tokenRequestGVs, KeepSystemFields: true})
	if err != nil {
		return err
	}
	req := obj.(*authenticationapi.TokenRequest)
	// kube-apiserver's create handler records the fields as they were sent; TokenRequest
	// managedFields entries name the subresource.
	t.fields.Track(t.answers, "token", req, rq.Manager(opts.FieldManager))
	recorder := &tokenWarnings{texts: warnings}
	out, err := t.issueToken(warning.WithWarningRecorder(rq.Context(), recorder), rq, req)
	rq.Warn(recorder.texts)
	if err != nil {
		return err
	}
	return rq.Respond(http.StatusCreated, out, authenticationv1.SchemeGroupVersion)
}

// issueToken is the body of kube's TokenREST.Create, in its order, up to the issuer.
func (t *tokenRequests) issueToken(ctx context.Context, rq *handlers.Request, req *authenticationapi.TokenRequest) (*authenticationapi.TokenRequest, error) {
	name, namespace := rq.Info().Name, rq.Info().Namespace
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, req); err != nil {
		return nil, err
	}
	if len(req.Name) > 0 && req.Name != name {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{field.Invalid(field.NewPath("metadata").Child("name"), req.Name, "must match the service account name if specified")})
	}
	u, err := t.objects.Get(ctx, rq.Resource(), namespace, name)
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
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = slices.Clone(t.audiences)
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	req.Status = authenticationapi.TokenRequestStatus{}
	if errs := authenticationvalidation.ValidateTokenRequest(req); len(errs) != 0 {
		return nil, apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	if t.issuer == nil {
		return nil, errNoTokenIssuer(name)
	}
	bound, err := t.boundObject(ctx, namespace, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	return t.issuer.IssueToken(ctx, sa, req, bound)
}

// boundObject looks up the object a token is to be bound to, as kube's TokenREST does:
// Pods and Secrets of the namespace, Nodes, whatever the reference's version. It is nil for
// other kinds, which the issuer refuses.
func (t *tokenRequests) boundObject(ctx context.Context, namespace string, ref *authenticationapi.BoundObjectReference) (runtime.Object, error) {
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
		gvr, obj = catalog.PodsGVR, &corev1.Pod{}
	case gvk.Group == "" && gvk.Kind == "Secret":
		gvr, obj = catalog.SecretsGVR, &corev1.Secret{}
	case gvk.Group == "" && gvk.Kind == "Node":
		gvr, obj, namespace = catalog.NodesGVR, &corev1.Node{}, ""
	default:
		return nil, nil
	}
	r, ok := t.objects.Catalog().Lookup(gvr)
	if !ok {
		return nil, handlers.ErrNoRoute
	}
	u, err := t.objects.Get(ctx, r, namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj, nil
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
