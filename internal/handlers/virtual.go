package handlers

import (
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/routing"
)

// computed is what the resources and subresources kube-apiserver answers without storing them
// need beyond the objects pipeline: who is asking and what they may do.
type computed struct {
	authn     authenticator.Request
	audiences authenticator.Audiences
	authz     authorizer.Authorizer
	rules     authorizer.RuleResolver
	// components are the servers componentstatuses reports on (kube's serversToValidate).
	components componentServers
	fields     fieldManagers
	tokens     TokenIssuer // serviceaccounts/token issues tokens with it (token.go)
}

// Auth is what the request path knows about identity that the review resources answer from:
// kube's authenticator (tokenreviews), the API audiences, and kube's authorizer and rule
// resolver (access and rules reviews).
type Auth struct {
	Authenticator authenticator.Request
	Audiences     authenticator.Audiences
	Authorizer    authorizer.Authorizer
	Rules         authorizer.RuleResolver
}

// WithAuth gives the handler the request path's authenticator and authorizer.
func (h *Handler) WithAuth(a Auth) *Handler {
	h.computed.authn, h.computed.audiences, h.computed.authz, h.computed.rules = a.Authenticator, a.Audiences, a.Authorizer, a.Rules
	return h
}

func newComputed(h *Handler) *computed {
	return &computed{authz: authorizerfactory.NewAlwaysAllowAuthorizer(), rules: authorizerfactory.NewAlwaysAllowAuthorizer(),
		components: h.kubeComponents}
}

// virtual answers the resources kube-apiserver computes rather than stores (reviews, bindings,
// component statuses).
func (h *Handler) virtual(rq *request) error {
	switch qualified(rq.resource) {
	case schema.GroupResource{Resource: "bindings"}:
		return h.binding(rq)
	case schema.GroupResource{Resource: "componentstatuses"}:
		return h.componentStatuses(rq)
	}
	if rq.info.Verb == "create" {
		if review, ok := reviews[qualified(rq.resource)]; ok {
			return h.review(rq, review)
		}
	}
	return apierrors.NewMethodNotSupported(qualified(rq.resource), rq.info.Verb)
}

// subresource answers the subresources of stored objects that kube-apiserver computes: it
// reports false for those it does not serve.
func (h *Handler) subresource(rq *request) (bool, error) {
	switch rq.info.Subresource {
	case "binding":
		return true, h.binding(rq)
	case "eviction":
		return true, h.eviction(rq)
	case "log", "exec", "attach", "portforward", "proxy":
		return true, h.connect(rq)
	case "token":
		return true, h.token(rq)
	}
	return false, nil
}

// decodeInternal reads a request body of the given kind (at one of the accepted versions; the
// first is the default) into kube's internal version, as kube-apiserver's create handler
// decodes it: defaulted, unknown fields reported as fieldValidation asks.
func (h *Handler) decodeInternal(rq *request, kind string, accepted []schema.GroupVersion, fieldValidation string) (runtime.Object, []string, error) {
	body, issues, err := h.readObject(rq.req, accepted[0].WithKind(kind))
	if err != nil {
		return nil, nil, err
	}
	gvk := body.GroupVersionKind()
	if body.GetAPIVersion() == "" {
		gvk.Group, gvk.Version = accepted[0].Group, accepted[0].Version
	}
	if gvk.Kind == "" {
		gvk.Kind = kind
	}
	acceptable := false
	for _, gv := range accepted {
		acceptable = acceptable || gv == gvk.GroupVersion()
	}
	if !acceptable {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), accepted[0]))
	}
	scheme := legacyscheme.Scheme
	cannot := func(err error) error {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, kind, err))
	}
	versioned, err := scheme.New(gvk)
	if err != nil {
		return nil, nil, cannot(err)
	}
	internal, err := scheme.New(schema.GroupVersionKind{Group: gvk.Group, Version: runtime.APIVersionInternal, Kind: kind})
	if err != nil {
		return nil, nil, cannot(err)
	}
	raw, err := json.Marshal(body.Object)
	if err != nil {
		return nil, nil, cannot(err)
	}
	strictErrs, err := kjson.UnmarshalStrict(raw, versioned, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, cannot(err)
	}
	for _, e := range strictErrs {
		issues = append(issues, e.Error())
	}
	var warnings []string
	switch fieldValidation {
	case metav1.FieldValidationStrict:
		if len(issues) > 0 {
			return nil, nil, cannot(fmt.Errorf("strict decoding error: %s", strings.Join(issues, ", ")))
		}
	case metav1.FieldValidationIgnore:
	default:
		warnings = issues
	}
	scheme.Default(versioned)
	if err := scheme.Convert(versioned, internal, nil); err != nil {
		return nil, nil, cannot(err)
	}
	if m, err := meta.Accessor(internal); err == nil && !preserveSystemFields(rq) {
		// kube's create handler clears what only the server sets, except for subresources
		// that take the uid and resourceVersion as preconditions (pods/binding).
		rest.WipeObjectMetaSystemFields(m)
	}
	return internal, warnings, nil
}

// preserveSystemFields: pods/binding keeps the Binding's uid and resourceVersion, a
// TokenRequest its uid (kube's BindingREST and TokenREST are SubresourceObjectMetaPreservers).
func preserveSystemFields(rq *request) bool {
	return rq.info.Subresource == "binding" || rq.info.Subresource == "token"
}

// writeComputed answers with an internal object converted to gv, with code, as the client
// asked (JSON, YAML, Protobuf or PartialObjectMetadata; a Status as a Status).
func (h *Handler) writeComputed(rq *request, code int, obj runtime.Object, gv schema.GroupVersion) error {
	if status, ok := obj.(*metav1.Status); ok {
		status.Kind, status.APIVersion = "Status", "v1"
		status.Code = int32(code)
		writeStatus(rq.w, rq.req, code, status, true)
		return nil
	}
	u, err := toServed(obj, gv)
	if err != nil {
		return err
	}
	target, ok := routing.NegotiateRead(rq.req.Header.Get("Accept"), false, true)
	if !ok || target.As == "Table" {
		// kube-apiserver has no Table of what it computes on a create.
		return notAcceptable()
	}
	if target.As == "PartialObjectMetadata" {
		if target.MediaType == routing.Protobuf {
			writeProtobuf(rq.w, rq.req, code, partialMetadata(target, []*unstructured.Unstructured{u}, metav1.ListMeta{}))
			return nil
		}
		body, err := converted(rq, target, []*unstructured.Unstructured{u}, metav1.ListMeta{}, false)
		if err != nil {
			return err
		}
		writeBodyAs(rq.w, rq.req, code, body, target.MediaType)
		return nil
	}
	if target.MediaType == routing.Protobuf {
		typed, err := h.typedFromUnstructured(u)
		if err != nil {
			return err
		}
		writeProtobuf(rq.w, rq.req, code, typed)
		return nil
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	writeBodyAs(rq.w, rq.req, code, body, target.MediaType)
	return nil
}

// toServed converts an internal object to gv as unstructured content.
func toServed(obj runtime.Object, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
	out, err := legacyscheme.Scheme.ConvertToVersion(obj, gv)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	gvks, _, err := legacyscheme.Scheme.ObjectKinds(out)
	if err == nil && len(gvks) > 0 {
		u.SetGroupVersionKind(gvks[0])
	}
	return u, nil
}

// toInternal converts unstructured content of a built-in kind to kube's internal version.
func toInternal(u *unstructured.Unstructured) (runtime.Object, error) {
	gvk := u.GroupVersionKind()
	versioned, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, versioned); err != nil {
		return nil, err
	}
	internal, err := legacyscheme.Scheme.New(schema.GroupVersionKind{Group: gvk.Group, Version: runtime.APIVersionInternal, Kind: gvk.Kind})
	if err != nil {
		return nil, err
	}
	return internal, legacyscheme.Scheme.Convert(versioned, internal, nil)
}
