package patch

import (
	"errors"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

const (
	// MaxJSONPatchOperations is kube-apiserver's limit on the operations of one JSON patch
	// (maxJSONPatchOperations in k8s.io/apiserver/pkg/endpoints/handlers/patch.go).
	MaxJSONPatchOperations = 10000
	// MaxCopyBytes bounds the bytes "copy" operations may add to a document in one JSON patch:
	// kube-apiserver's default JSONPatchMaxCopyBytes (k8s.io/apiserver/pkg/server/config.go).
	MaxCopyBytes = 3 * 1024 * 1024
)

// json-patch v4 offers the copy limit only as a package variable (v5's ApplyOptions is not
// the library kube-apiserver uses). kube-apiserver sets it once at start-up
// (k8s.io/apiserver/pkg/server/config.go); this is lapis's one place. Without it a patch of a
// few dozen chained copies doubles the document each time. Like kube, only ever lower it.
// This runs before any request can, so it needs no synchronisation.
func init() {
	if l := jsonpatch.AccumulatedCopySizeLimit; l <= 0 || l > MaxCopyBytes {
		jsonpatch.AccumulatedCopySizeLimit = MaxCopyBytes
	}
}

// Kind says what is wrong with a patch.
type Kind int

const (
	// Malformed: the patch cannot be read as a patch of its type (HTTP 400).
	Malformed Kind = iota
	// TooLarge: the patch exceeds a limit (HTTP 413).
	TooLarge
	// Invalid: the patch's operations are incomplete (HTTP 422).
	Invalid
	// NotApplicable: the patch is well-formed but does not apply to this document (HTTP 422).
	NotApplicable
)

// Error is a patch refused, and why.
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// JSON applies an RFC 6902 JSON patch to a JSON document.
func JSON(doc, patch []byte) ([]byte, error) {
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, errorf(Malformed, "%v", err)
	}
	if len(ops) > MaxJSONPatchOperations {
		// kube-apiserver's message.
		return nil, errorf(TooLarge, "The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(ops))
	}
	for i, op := range ops {
		if err := validateOperation(op); err != nil {
			return nil, errorf(Invalid, "invalid JSON patch operation %d: %v", i, err)
		}
	}
	out, err := ops.Apply(doc)
	if err != nil {
		return nil, errorf(NotApplicable, "%v", err)
	}
	return out, nil
}

// validateOperation checks that an operation has the members RFC 6902 requires of its kind:
// json-patch dereferences a missing "value" of a root "replace" or "test".
func validateOperation(op jsonpatch.Operation) error {
	if op == nil {
		return errors.New("an operation must be an object")
	}
	kind := op.Kind()
	switch kind {
	case "add", "remove", "replace", "move", "copy", "test":
	default:
		if raw, ok := op["op"]; ok && raw != nil {
			return fmt.Errorf("unknown op %s", *raw)
		}
		return errors.New(`missing "op"`)
	}
	if _, err := op.Path(); err != nil {
		return fmt.Errorf(`%s: "path" must be a string`, kind)
	}
	switch kind {
	case "add", "replace", "test":
		// A JSON null value decodes to a nil RawMessage but is present.
		if _, ok := op["value"]; !ok {
			return fmt.Errorf(`%s: missing "value"`, kind)
		}
	case "move", "copy":
		if _, err := op.From(); err != nil {
			return fmt.Errorf(`%s: "from" must be a string`, kind)
		}
	}
	return nil
}

// Merge applies an RFC 7386 JSON merge patch to a JSON document.
func Merge(doc, patch []byte) ([]byte, error) {
	out, err := jsonpatch.MergePatch(doc, patch)
	switch {
	case errors.Is(err, jsonpatch.ErrBadJSONPatch):
		// kube-apiserver answers this one with 400.
		return nil, errorf(Malformed, "%v", err)
	case err != nil:
		return nil, errorf(NotApplicable, "%v", err)
	}
	return out, nil
}
