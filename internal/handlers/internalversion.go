package handlers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/routing"
)

// decodeInternal reads a request body as b says into kube's internal version, as
// kube-apiserver's create handler decodes it: defaulted, unknown fields reported as
// fieldValidation asks.
func (h *Handler) decodeInternal(rq *request, b Body, fieldValidation string) (runtime.Object, []string, error) {
	kind, accepted := b.Kind, b.Versions
	body, issues, err := h.readObject(rq.req, accepted[0].WithKind(kind))
	if err != nil {
		return nil, nil, err
	}
	gvk, err := b.kindOf(body)
	if err != nil {
		return nil, nil, err
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
	if m, err := meta.Accessor(internal); err == nil && !b.KeepSystemFields {
		// kube's create handler clears what only the server sets, except for subresources
		// that take the uid and resourceVersion as preconditions.
		rest.WipeObjectMetaSystemFields(m)
	}
	return internal, warnings, nil
}

// kindOf is the kind body is of: as it says, at the default version if it says none, and at
// one of the versions b accepts.
func (b Body) kindOf(body *unstructured.Unstructured) (schema.GroupVersionKind, error) {
	gvk := body.GroupVersionKind()
	if body.GetAPIVersion() == "" {
		gvk.Group, gvk.Version = b.Versions[0].Group, b.Versions[0].Version
	}
	if gvk.Kind == "" {
		gvk.Kind = b.Kind
	}
	if !slices.Contains(b.Versions, gvk.GroupVersion()) {
		return gvk, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), b.Versions[0]))
	}
	return gvk, nil
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
	u, err := ToServed(obj, gv)
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

// ToServed converts an object of kube's internal version to gv as served content.
func ToServed(obj runtime.Object, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
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

// ToInternal converts served content of a built-in kind to kube's internal version, which
// kube's REST code reads.
func ToInternal(u *unstructured.Unstructured) (runtime.Object, error) {
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
