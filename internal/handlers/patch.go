package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/jsoncost"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/patch"
)

func patchTypeOf(contentType string) types.PatchType { return types.PatchType(contentType) }

func (h *Handler) patch(rq *request) error {
	if err := checkAcceptable(rq); err != nil {
		return err
	}
	pt := patchTypeOf(contentType(rq.req))
	if err := h.checkPatchType(rq, pt); err != nil {
		return err
	}
	opts, patch, err := readPatch(rq, pt)
	if err != nil {
		return err
	}
	if pt == types.ApplyYAMLPatchType || pt == types.ApplyCBORPatchType {
		return h.apply(rq, pt, patch, opts)
	}
	patchNesting := jsoncost.Measure(patch).NestedBytes
	if err := checkNesting("the patch", patchNesting); err != nil {
		return err
	}
	var patchContent any
	strictErrs, err := kjson.UnmarshalStrict(patch, &patchContent, kjson.DisallowDuplicateFields)
	if err != nil {
		return apierrors.NewBadRequest("invalid JSON patch")
	}
	var issues []string
	for _, e := range strictErrs {
		issues = append(issues, e.Error())
	}
	// A patch that names a resourceVersion makes it a precondition; otherwise the patch is
	// re-applied to the newest object if someone else wrote in between.
	pinned := patchSetsResourceVersion(pt, patch)
	var patchValue func() string // of the last attempt
	mutate := func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		currentJSON, err := current.MarshalJSON()
		if err != nil {
			return nil, err
		}
		// The patch libraries re-read every level of both documents.
		if err := checkNesting("the object and the patch", jsoncost.Measure(currentJSON).NestedBytes+patchNesting); err != nil {
			return nil, err
		}
		patchedJSON, err := h.applyPatch(rq, pt, currentJSON, patch)
		if err != nil {
			return nil, err
		}
		patchValue = func() string { return h.reportedPatch(rq, pt, current, patch, patchedJSON) }
		obj, _, err := decodeObject(patchedJSON, rq.resource.Kind)
		if err != nil {
			return nil, err
		}
		if !pinned {
			obj.SetResourceVersion("")
		}
		return obj, nil
	}
	a := askedByPatch(opts)
	wo := a.writeOptions(rq, issues)
	wo.PatchValue, wo.Subresource = func() string { return patchValue() }, rq.info.Subresource
	res, err := h.objects.Update(a.context(rq), rq.resource, rq.info.Namespace, rq.info.Name, mutate, wo)
	return h.answerWrite(rq, http.StatusOK, res, err)
}

// checkPatchType refuses the patch types the resource does not take: strategic merge patches
// need a Go type.
func (h *Handler) checkPatchType(rq *request, pt types.PatchType) error {
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
	case types.StrategicMergePatchType:
		if _, err := h.typed.New(rq.resource.GroupVersionKind()); err != nil {
			return unsupportedPatch(pt, false)
		}
	default:
		_, isBuiltin := h.typed.New(rq.resource.GroupVersionKind())
		return unsupportedPatch(pt, isBuiltin == nil)
	}
	return nil
}

func (h *Handler) applyPatch(rq *request, pt types.PatchType, current, patch []byte) ([]byte, error) {
	return h.applyPatchAs(rq, pt, rq.resource.GroupVersionKind(), current, patch)
}

// applyPatchAs applies a non-apply patch to the JSON of an object of kind gvk.
func (h *Handler) applyPatchAs(rq *request, pt types.PatchType, gvk schema.GroupVersionKind, current, patchBody []byte) ([]byte, error) {
	var out []byte
	var err error
	switch pt {
	case types.JSONPatchType:
		var ops []jsonPatchOp
		if err := json.Unmarshal(patchBody, &ops); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		out, err = patch.JSON(current, patchBody)
	case types.MergePatchType:
		out, err = patch.Merge(current, patchBody)
	case types.StrategicMergePatchType:
		typed, terr := h.typed.New(gvk)
		if terr != nil {
			return nil, unsupportedPatch(pt, false)
		}
		out, err = patch.Strategic(current, patchBody, typed)
		if err == nil {
			err = fitsType(out, patchBody, typed)
		}
	}
	if err != nil {
		return nil, patchError(pt, gvk, rq.info.Name, patchBody, err)
	}
	return out, nil
}

// reportedPatch is what kube-apiserver names as the invalid "patch" when the patched object
// does not decode or has unknown fields under Strict: for a strategic merge patch, the patch as
// a Go map; otherwise the patched object's JSON, which for a built-in kind kube makes by
// patching its own encoding of the object (fields in their Go order; lapis patched a copy
// with sorted keys, which is what kube reports for a custom resource).
func (h *Handler) reportedPatch(rq *request, pt types.PatchType, current *unstructured.Unstructured, patchBody, patched []byte) string {
	if pt == types.StrategicMergePatchType {
		return patchMapString(patchBody)
	}
	gvk := rq.resource.GroupVersionKind()
	typed, err := h.typed.New(gvk)
	if err != nil {
		return string(patched)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.UnstructuredContent(), typed); err != nil {
		return string(patched)
	}
	encoded, err := json.Marshal(typed)
	if err != nil {
		return string(patched)
	}
	out, err := h.applyPatchAs(rq, pt, gvk, encoded, patchBody)
	if err != nil {
		return string(patched)
	}
	return string(out)
}

// patchMapString is a patch as kube-apiserver prints it in its errors: the decoded map, %+v.
func patchMapString(patchBody []byte) string {
	var patchMap map[string]any
	_ = utiljson.Unmarshal(patchBody, &patchMap) // numbers as int64 where they can, as kube's
	return fmt.Sprintf("%+v", patchMap)
}

// fitsType is kube-apiserver's check of a strategic merge patch's result: it converts the
// patched object into its Go type, answering a value of the wrong type with 422 on the patch
// (unknown fields are left to fieldValidation).
func fitsType(patched, patchBody []byte, typed runtime.Object) error {
	var patchedMap map[string]any
	// Numbers decode as int64 where they can, as kube's maps hold them.
	if err := utiljson.Unmarshal(patched, &patchedMap); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patchedMap, typed.DeepCopyObject(), false)
	if err == nil {
		return nil
	}
	if _, strict := runtime.AsStrictDecodingError(err); strict {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
		field.Invalid(field.NewPath("patch"), patchMapString(patchBody), err.Error())})
}

// patchError is kube-apiserver's answer to a patch that cannot be applied.
func patchError(pt types.PatchType, gvk schema.GroupVersionKind, name string, patchBody []byte, err error) error {
	e, ok := patch.AsError(err)
	if !ok {
		return err
	}
	switch e.Kind {
	case patch.Malformed:
		return apierrors.NewBadRequest(e.Message)
	case patch.TooLarge:
		return apierrors.NewRequestEntityTooLargeError(e.Message)
	}
	if pt == types.JSONPatchType {
		// kube-apiserver wraps json-patch's errors so, losing their text: the copy limit's, and
		// those of incomplete operations (patch.Invalid, which json-patch finds as it applies).
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", e.Message, 0, false)
	}
	// kube-apiserver reports a patch that cannot be applied as an invalid request.
	return apierrors.NewInvalid(gvk.GroupKind(), name,
		field.ErrorList{field.Invalid(field.NewPath("patch"), string(patchBody), e.Message)})
}

func unsupportedPatch(pt types.PatchType, builtin bool) error {
	accepted := "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
	if builtin {
		accepted = "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", accepted),
	}}
}

func patchSetsResourceVersion(pt types.PatchType, patch []byte) bool {
	switch pt {
	case types.JSONPatchType:
		var ops []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}
		_ = json.Unmarshal(patch, &ops)
		for _, op := range ops {
			if op.Path == "/metadata/resourceVersion" && (op.Op == "add" || op.Op == "replace") {
				return true
			}
		}
		return false
	default:
		var p struct {
			Metadata struct {
				ResourceVersion *string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(patch, &p)
		return p.Metadata.ResourceVersion != nil && *p.Metadata.ResourceVersion != ""
	}
}

// apply serves server-side apply (application/apply-patch+yaml).
func (h *Handler) apply(rq *request, pt types.PatchType, body []byte, opts metav1.PatchOptions) error {
	if pt == types.ApplyCBORPatchType {
		return unsupportedPatch(pt, true)
	}
	config, issues, strictErr, err := decodeApplied(body, rq.resource.Kind, opts.FieldValidation)
	if err != nil {
		return err
	}
	a := askedByPatch(opts)
	wo := a.writeOptions(rq, issues) // the manager is the request's: apply must name one
	wo.Subresource, wo.AuthorizeCreate = rq.info.Subresource, h.authorizeAs(rq, "create")
	res, err := h.objects.Apply(a.context(rq), rq.resource, rq.info.Namespace, rq.info.Name, config, objects.ApplyOptions{
		WriteOptions: wo, Force: forced(opts), StrictDecodeError: strictErr,
	})
	code := http.StatusOK
	if res.Created {
		code = http.StatusCreated
	}
	return h.answerWrite(rq, code, res, err)
}

// forced is whether a server-side apply takes the fields other managers own.
func forced(opts metav1.PatchOptions) bool { return opts.Force != nil && *opts.Force }

// decodeApplied decodes an applied configuration as kube-apiserver does: YAML (JSON among it)
// read leniently, a repeated key's last value kept; then, unless fieldValidation is Ignore, read
// strictly, its problems the warnings (issues) or, under Strict, the refusal (strictErr).
func decodeApplied(body []byte, kind, fieldValidation string) (config *unstructured.Unstructured, issues []string, strictErr error, err error) {
	data := bytes.TrimSpace(body)
	jsonPrefixed := len(data) > 0 && data[0] == '{'
	isJSON := jsonPrefixed && json.Valid(data)
	if !isJSON {
		if data, err = yaml.YAMLToJSON(body); err != nil {
			// kube transcodes YAML for its audit log first, and takes what begins with "{" for
			// JSON there, to find it is not when it decodes the configuration.
			if jsonPrefixed {
				return nil, nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: error converting YAML to JSON: %v", err))
			}
			return nil, nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
	}
	config, jsonIssues, err := decodeObject(data, kind)
	if err != nil {
		// kube decodes the configuration into a map, and hands an empty one on to apply.
		var content map[string]any
		if uerr := yaml.Unmarshal(data, &content); uerr != nil {
			return nil, nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", uerr))
		} else if content == nil {
			return nil, nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", schema.GroupVersionKind{}))
		}
		return nil, nil, nil, err
	}
	if fieldValidation == "Ignore" || (isJSON && len(jsonIssues) == 0) {
		return config, nil, nil, nil // JSON without repeated keys reads the same strictly
	}
	strict := yaml.UnmarshalStrict(body, &map[string]any{})
	switch {
	case strict == nil:
		return config, nil, nil, nil
	case fieldValidation == "Strict":
		return config, nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", strict)), nil
	}
	return config, yamlWarnings(strict.Error()), nil, nil
}

// yamlWarnings splits a strict YAML decoding error into one warning per problem, as
// kube-apiserver does (its handlers' parseYAMLWarnings); any other error is one warning.
func yamlWarnings(message string) []string {
	rest, found := strings.CutPrefix(message, "yaml: unmarshal errors:\n")
	if !found {
		if rest, found = strings.CutPrefix(message, "error converting YAML to JSON: yaml: unmarshal errors:\n"); !found {
			return []string{message}
		}
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}

// managerOrUserAgent is kube-apiserver's default field manager: the fieldManager parameter, else
// the User-Agent's product token (before the first "/"), printable characters only, at most 128.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	product, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range product {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len() >= 128 {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jsonPatchOp is the shape every JSON patch operation has; its name shows in the decoding error
// kube-apiserver gives for a patch that is not a list of operations.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}
