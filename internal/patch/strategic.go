package patch

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The strategic merge patch directives (k8s.io/apimachinery/pkg/util/strategicpatch).
const (
	retainKeysDirective           = "$retainKeys"
	setElementOrderPrefix         = "$setElementOrder/"
	deleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/"
	mergeStrategy                 = "merge"
)

// Strategic applies a strategic merge patch to the JSON of a built-in object; typed is a value
// of the object's Go type, whose struct tags carry the patch metadata (merge keys, strategies).
func Strategic(doc, patch []byte, typed any) ([]byte, error) {
	schema, err := strategicpatch.NewPatchMetaFromStruct(typed)
	if err != nil {
		return nil, errorf(NotApplicable, "%v", err)
	}
	// Decoded as strategicpatch decodes it, so the checks see the values it will compare
	// (a JSON null is an empty patch, as in kube-apiserver).
	var patchMap map[string]any
	if err := json.Unmarshal(patch, &patchMap); err != nil {
		return nil, errorf(Malformed, "%v", err)
	}
	if err := validateStrategic(patchMap, schema, ""); err != nil {
		return nil, errorf(Malformed, "invalid strategic merge patch: %v", err)
	}
	out, err := strategicpatch.StrategicMergePatchUsingLookupPatchMeta(doc, patch, schema)
	if err != nil {
		return nil, interpretStrategicError(err)
	}
	return out, nil
}

// interpretStrategicError classifies strategicpatch's errors as kube-apiserver does
// (interpretStrategicMergePatchError in k8s.io/apiserver/pkg/endpoints/handlers/patch.go).
func interpretStrategicError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return errorf(Malformed, "%v", err)
	}
	return errorf(NotApplicable, "%v", err)
}

// validateStrategic checks the parts of a strategic merge patch that strategicpatch compares
// or uses as map keys without checking their types first: the merge-key values of lists
// merged by key, the elements of lists of scalars merged or reordered, and the directives
// listing those ($setElementOrder, $deleteFromPrimitiveList, $retainKeys). Comparing two
// objects or arrays there panics ("comparing uncomparable type", "hash of unhashable type").
// A field strategicpatch cannot find in the schema is left to it: it fails on it before
// merging anything below. path locates the patch map in errors.
func validateStrategic(patch map[string]any, schema strategicpatch.LookupPatchMeta, path string) error {
	// In order, so that the same patch always gets the same answer.
	for _, key := range slices.Sorted(maps.Keys(patch)) {
		value := patch[key]
		switch {
		case key == retainKeysDirective:
			list, ok := value.([]any)
			if !ok {
				continue // strategicpatch rejects it
			}
			for i, v := range list {
				if _, ok := v.(string); !ok {
					return fmt.Errorf("%s[%d]: %s lists field names: want a string, got %s", join(path, key), i, retainKeysDirective, describe(v))
				}
			}
		case strings.HasPrefix(key, setElementOrderPrefix):
			field := strings.TrimPrefix(key, setElementOrderPrefix)
			elem, meta, err := schema.LookupPatchMetadataForSlice(field)
			if err != nil {
				continue
			}
			if meta.GetPatchMergeKey() == "" && !holdsScalars(elem) {
				// strategicpatch would order the live objects by value, as map keys.
				return fmt.Errorf("%s: %s is a list of objects without a merge key: it cannot be ordered", join(path, key), field)
			}
			// The order list and the list it orders are compared element by element.
			if list, ok := value.([]any); ok {
				if err := validateListElements(list, meta.GetPatchMergeKey(), join(path, key)); err != nil {
					return err
				}
			}
			if list, ok := patch[field].([]any); ok {
				if err := validateListElements(list, meta.GetPatchMergeKey(), join(path, field)); err != nil {
					return err
				}
			}
		case strings.HasPrefix(key, deleteFromPrimitiveListPrefix):
			field := strings.TrimPrefix(key, deleteFromPrimitiveListPrefix)
			if elem, _, err := schema.LookupPatchMetadataForSlice(field); err == nil && !holdsScalars(elem) {
				// strategicpatch would compare the live objects by value.
				return fmt.Errorf("%s: %s is not a list of scalars", join(path, key), field)
			}
			list, ok := value.([]any)
			if !ok {
				continue
			}
			if err := validateListElements(list, "", join(path, key)); err != nil {
				return err
			}
		default:
			switch v := value.(type) {
			case map[string]any:
				sub, _, err := schema.LookupPatchMetadataForStruct(key)
				if err != nil {
					continue
				}
				if err := validateStrategic(v, sub, join(path, key)); err != nil {
					return err
				}
			case []any:
				sub, meta, err := schema.LookupPatchMetadataForSlice(key)
				if err != nil {
					continue
				}
				if slices.Contains(meta.GetPatchStrategies(), mergeStrategy) {
					if err := validateListElements(v, meta.GetPatchMergeKey(), join(path, key)); err != nil {
						return err
					}
				}
				// Elements that are objects may be merged into the live ones, field by field.
				for i, e := range v {
					if m, ok := e.(map[string]any); ok {
						if err := validateStrategic(m, sub, fmt.Sprintf("%s[%d]", join(path, key), i)); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// validateListElements checks a list merged (or ordered) by strategicpatch: with a merge key,
// objects whose merge-key value is a scalar; without one, scalars.
func validateListElements(list []any, mergeKey, path string) error {
	for i, e := range list {
		if mergeKey == "" {
			if !isScalar(e) || e == nil {
				return fmt.Errorf("%s[%d]: want a string, number or boolean, got %s", path, i, describe(e))
			}
			continue
		}
		m, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("%s[%d]: want an object (merged by its %q), got %s", path, i, mergeKey, describe(e))
		}
		if k, ok := m[mergeKey]; ok && !isScalar(k) {
			return fmt.Errorf("%s[%d].%s: the merge key must be a string, number, boolean or null, got %s", path, i, mergeKey, describe(k))
		}
	}
	return nil
}

// holdsScalars tells whether a list's elements, as the schema describes them, are scalars.
func holdsScalars(elem strategicpatch.LookupPatchMeta) bool {
	typed, ok := elem.(strategicpatch.PatchMetaFromStruct)
	if !ok {
		return true // not a Go-typed schema: leave it to strategicpatch
	}
	t := typed.T
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return false
	}
	return true
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
