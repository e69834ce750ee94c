package handlers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lapis-dev/lapis/internal/objects"
)

// What an endpoint that reads and writes stored objects shares with the verbs: decoding
// updates and patches, patching, and the one write tail.

// CheckAcceptable refuses a request whose Accept header names nothing the resource is served as.
func (r *Request) CheckAcceptable() error { return checkAcceptable(r.rq) }

// RespondObject answers with a stored object and code, as the client asked.
func (r *Request) RespondObject(code int, obj *unstructured.Unstructured) {
	r.h.writeObject(r.rq, code, obj)
}

// DecodeUpdate reads an update: its options, then its body, an object of kind gvk.
func (r *Request) DecodeUpdate(gvk schema.GroupVersionKind) (*unstructured.Unstructured, metav1.UpdateOptions, error) {
	opts, err := updateOptions(r.rq.req)
	if err != nil {
		return nil, opts, err
	}
	body, _, err := r.h.readObject(r.rq.req, gvk)
	return body, opts, err
}

// CheckName refuses a body whose name or namespace differs from the request's.
func (r *Request) CheckName(obj *unstructured.Unstructured) error {
	return checkName(obj, r.rq.info.Name, r.rq.info.Namespace)
}

// DecodePatch reads a patch: its type (the Content-Type), its options, then its body.
func (r *Request) DecodePatch() (types.PatchType, metav1.PatchOptions, []byte, error) {
	pt := patchTypeOf(contentType(r.rq.req))
	opts, patch, err := readPatch(r.rq, pt)
	return pt, opts, patch, err
}

// Patch applies a patch of type pt (not an apply) to the JSON of an object of kind gvk, with
// kube's errors.
func (r *Request) Patch(pt types.PatchType, gvk schema.GroupVersionKind, current, patch []byte) ([]byte, error) {
	return r.h.applyPatchAs(r.rq, pt, gvk, current, patch)
}

// UpdateWriteOptions are the pipeline's options for an update's.
func (r *Request) UpdateWriteOptions(o metav1.UpdateOptions) objects.WriteOptions {
	return askedByUpdate(o).writeOptions(r.rq, nil)
}

// PatchWriteOptions are the pipeline's options for a patch's.
func (r *Request) PatchWriteOptions(o metav1.PatchOptions) objects.WriteOptions {
	return askedByPatch(o).writeOptions(r.rq, nil)
}

// RespondWrite is the tail every write shares: the pipeline's warnings, then its error or the
// written object with code.
func (r *Request) RespondWrite(code int, res objects.Result, err error) error {
	return r.h.answerWrite(r.rq, code, res, err)
}

// DecodeObject decodes the JSON of an object of kind.
func DecodeObject(data []byte, kind string) (*unstructured.Unstructured, error) {
	obj, _, err := decodeObject(data, kind)
	return obj, err
}

// DecodeYAMLObject decodes the YAML (or JSON) of an object of kind, as an apply's body.
func DecodeYAMLObject(data []byte, kind string) (*unstructured.Unstructured, error) {
	data, err := toJSON("application/yaml", data)
	if err != nil {
		return nil, err
	}
	return DecodeObject(data, kind)
}

// PatchSetsResourceVersion reports whether a patch names a resourceVersion, which makes it a
// precondition.
func PatchSetsResourceVersion(pt types.PatchType, patch []byte) bool {
	return patchSetsResourceVersion(pt, patch)
}
