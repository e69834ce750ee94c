package objects

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An update whose only change is a managedFields entry's time keeps the stored time, as kube's
// registry store does; any other change keeps the new times.
func TestKeepTimesOfNoOp(t *testing.T) {
	entry := func(manager, time string) map[string]any {
		e := map[string]any{"manager": manager, "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:data": map[string]any{"f:a": map[string]any{}}}}
		if time != "" {
			e["time"] = time
		}
		return e
	}
	object := func(data string, entries ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "resourceVersion": "5", "managedFields": entries},
			"data":     map[string]any{"a": data}}}
	}
	old := object("x", entry("m", "2026-01-01T00:00:00Z"))
	for _, tc := range []struct {
		name     string
		obj      *unstructured.Unstructured
		kept     bool
		wantTime any
	}{
		{"only a time changed", object("x", entry("m", "2026-01-01T00:00:09Z")), true, "2026-01-01T00:00:00Z"},
		{"a time dropped", object("x", entry("m", "")), true, "2026-01-01T00:00:00Z"},
		{"the data changed too", object("y", entry("m", "2026-01-01T00:00:09Z")), false, "2026-01-01T00:00:09Z"},
		{"an entry more", object("x", entry("m", "2026-01-01T00:00:09Z"), entry("n", "2026-01-01T00:00:09Z")), false, "2026-01-01T00:00:09Z"},
	} {
		got := keepTimesOfNoOp(context.Background(), tc.obj, old)
		time := timeOf(tc.obj.Object["metadata"].(map[string]any)["managedFields"].([]any)[0])
		if got != tc.kept || time != tc.wantTime {
			t.Errorf("%s: kept %v, time %v; want %v, %v", tc.name, got, time, tc.kept, tc.wantTime)
		}
	}
}
