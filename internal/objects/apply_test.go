package objects

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An applied configuration's metadata with empty values is not stored as it is: a custom
// resource's write passes it through kube's ObjectMeta, which drops them.
func TestCanonicalMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta map[string]any
		want bool
	}{
		{"name and labels", map[string]any{"name": "a", "labels": map[string]any{"a": "b"}}, true},
		{"empty labels", map[string]any{"name": "a", "labels": map[string]any{}}, false},
		{"empty annotations", map[string]any{"name": "a", "annotations": map[string]any{}}, false},
		{"empty finalizers", map[string]any{"name": "a", "finalizers": []any{}}, false},
		{"empty namespace", map[string]any{"name": "a", "namespace": ""}, false},
		{"null labels", map[string]any{"name": "a", "labels": nil}, false},
		{"no metadata", nil, true},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"kind": "T"}}
		if tc.meta != nil {
			obj.Object["metadata"] = tc.meta
		}
		if got := canonicalMetadata(obj); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
