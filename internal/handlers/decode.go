package handlers

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/jsoncost"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/yaml"
)

// maxBodyBytes is kube-apiserver's limit on request bodies (3 MiB).
const maxBodyBytes = 3 * 1024 * 1024

// readBody reads a request body, refusing bodies over the limit with 413.
func readBody(req *http.Request) ([]byte, error) {
	if req.ContentLength > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// toJSON converts a body in the given media type to JSON.
func toJSON(mediaType string, data []byte) ([]byte, error) {
	return toJSONFor(mediaType, data, false)
}

// toJSONFor is toJSON for a resource that may also accept Protobuf (built-in types), which the
// 415 answer then lists.
func toJSONFor(mediaType string, data []byte, protobufToo bool) ([]byte, error) {
	switch mediaType {
	case "", "application/json":
		return data, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		// JSON is YAML too, and most clients send it: skip the (slow) YAML conversion for it.
		if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
			return trimmed, nil
		}
		out, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error converting YAML to JSON: %v", err))
		}
		return out, nil
	}
	accepted := "application/json, application/yaml"
	if protobufToo {
		accepted += ", " + protobufMediaType
	}
	return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + accepted,
	}}
}

// maxNestedBytes bounds what the nesting of a document may cost (jsoncost.NestedBytes): JSON
// patch and merge patch re-read every level of the documents they work on, and field tracking
// walks every path, so deep documents cost the square of their depth. 64 MiB lets a 3 MiB object
// nest 20 levels deep on average; a chain of objects may go about 4 500 levels deep.
const maxNestedBytes = 64 << 20

// checkNesting refuses a document whose nesting costs more than maxNestedBytes.
func checkNesting(what string, nested int64) error {
	if nested > maxNestedBytes {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"%s nests too deeply for its size: %d nested bytes (each byte counted once per level it is in), at most %d", what, nested, maxNestedBytes))
	}
	return nil
}

// decodeObject parses a JSON object body. Duplicate fields are returned as issues for
// fieldValidation; anything that is not a JSON object is a 400.
func decodeObject(data []byte, kind string) (*unstructured.Unstructured, []string, error) {
	if err := checkNesting("the object", jsoncost.Measure(data).NestedBytes); err != nil {
		return nil, nil, err
	}
	var content map[string]any
	strictErrs, err := kjson.UnmarshalStrict(data, &content, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)",
			kind, err, summarizeData(data, 30)))
	}
	if content == nil {
		return nil, nil, apierrors.NewBadRequest("the request body must be a JSON object")
	}
	var issues []string
	for _, e := range strictErrs {
		issues = append(issues, e.Error())
	}
	obj := &unstructured.Unstructured{Object: content}
	if _, ok := content["metadata"]; ok {
		if _, isMap := content["metadata"].(map[string]any); !isMap {
			return nil, nil, apierrors.NewBadRequest("metadata must be an object")
		}
	}
	return obj, issues, nil
}

// readObject reads and decodes an object request body (JSON, YAML, or Protobuf for built-in
// types).
func (h *Handler) readObject(req *http.Request, gvk schema.GroupVersionKind) (*unstructured.Unstructured, []string, error) {
	data, err := readBody(req)
	if err != nil {
		return nil, nil, err
	}
	if contentType(req) == protobufMediaType {
		obj, issues, err := h.decodeProtobuf(data)
		if err == nil {
			h.auditRequestBody(req, obj)
		}
		return obj, issues, err
	}
	typed, notBuiltin := h.typed.New(gvk)
	data, err = toJSONFor(contentType(req), data, notBuiltin == nil)
	if err != nil {
		return nil, nil, err
	}
	obj, issues, err := decodeObject(data, gvk.Kind)
	if err == nil {
		h.auditRequestBody(req, obj)
	}
	if err == nil && notBuiltin == nil {
		err = h.checkBodyKind(obj, gvk)
	}
	if err == nil && len(issues) > 0 && notBuiltin == nil {
		// kube decodes a built-in object into its Go type once, reporting unknown and
		// duplicate fields together in the order the body has them.
		issues = typedDecodeIssues(data, typed, issues)
	}
	return obj, issues, err
}

// checkBodyKind is kube-apiserver's answer to a built-in body naming an apiVersion and kind its
// schemes do not know: its decoder finds no Go type for it. (Known kinds that are not the URL's
// are refused later, as kube refuses them after decoding.)
func (h *Handler) checkBodyKind(obj *unstructured.Unstructured, want schema.GroupVersionKind) error {
	got := obj.GroupVersionKind()
	if obj.GetAPIVersion() == "" || got.Kind == "" || got == want || h.kubeDecodes(got) {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
		got.Kind, got.Version, want.Kind, runtime.NewNotRegisteredErrForKind(legacyscheme.Scheme.Name(), got)))
}

// kubeDecodes reports whether kube-apiserver's schemes hold a Go type for gvk.
func (h *Handler) kubeDecodes(gvk schema.GroupVersionKind) bool {
	return legacyscheme.Scheme.Recognizes(gvk) || h.decodes.Recognizes(gvk)
}

// typedDecodeIssues are the strict decoding errors of data decoded into the Go object into,
// or the given ones if that decoding fails outright.
func typedDecodeIssues(data []byte, into runtime.Object, given []string) []string {
	strictErrs, err := kjson.UnmarshalStrict(data, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil || len(strictErrs) == 0 {
		return given
	}
	issues := make([]string, 0, len(strictErrs))
	for _, e := range strictErrs {
		issues = append(issues, e.Error())
	}
	return issues
}

var optionsGroupKind = func(kind string) schema.GroupKind { return schema.GroupKind{Group: metav1.GroupName, Kind: kind} }

func createOptions(req *http.Request) (metav1.CreateOptions, error) {
	var o metav1.CreateOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidateCreateOptions(&o); len(errs) > 0 {
		return o, apierrors.NewInvalid(optionsGroupKind("CreateOptions"), "", errs)
	}
	return o, nil
}

func updateOptions(req *http.Request) (metav1.UpdateOptions, error) {
	var o metav1.UpdateOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidateUpdateOptions(&o); len(errs) > 0 {
		return o, apierrors.NewInvalid(optionsGroupKind("UpdateOptions"), "", errs)
	}
	return o, nil
}

func patchOptions(req *http.Request, patchType string) (metav1.PatchOptions, error) {
	var o metav1.PatchOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidatePatchOptions(&o, patchTypeOf(patchType)); len(errs) > 0 {
		return o, apierrors.NewInvalid(optionsGroupKind("PatchOptions"), "", errs)
	}
	return o, nil
}

// deleteOptions reads DeleteOptions from the query and, when present, the body (kubectl sends
// them as a body).
func deleteOptions(req *http.Request) (metav1.DeleteOptions, error) {
	var o metav1.DeleteOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	data, err := readBody(req)
	if err != nil {
		return o, err
	}
	if contentType(req) == protobufMediaType && len(data) > 0 {
		if err := decodeProtobufDeleteOptions(data, &o); err != nil {
			return o, err
		}
	} else if len(strings.TrimSpace(string(data))) > 0 {
		data, err = toJSON(contentType(req), data)
		if err != nil {
			return o, err
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &o); err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("invalid delete options: %v", err))
		}
	}
	if errs := metav1validation.ValidateDeleteOptions(&o); len(errs) > 0 {
		return o, apierrors.NewInvalid(optionsGroupKind("DeleteOptions"), "", errs)
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		auditDeleteOptions(req, o)
	}
	return o, nil
}

func isDryRun(dryRun []string) bool { return len(dryRun) > 0 }

// summarizeData quotes the start of a body in an error, as kube-apiserver does.
func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}
