package kube

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// managedFieldsJSON is what a field manager records: raw fieldsV1 that converting to a Go
// object and back must leave exactly as they are.
const managedFieldsJSON = `[{"manager":"chart","operation":"Apply","apiVersion":"apps/v1","time":"2026-11-27T09:00:00Z","fieldsType":"FieldsV1",
"fieldsV1":{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}},
{"manager":"scaler","operation":"Update","apiVersion":"apps/v1","time":"2026-11-27T09:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]`

func deploymentWithManagedFields(t *testing.T) (*unstructured.Unstructured, []any) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(testdata(t, "deployment.json"), &u.Object); err != nil {
		t.Fatal(err)
	}
	var managed []any
	if err := json.Unmarshal([]byte(managedFieldsJSON), &managed); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace("default")
	u.Object["metadata"].(map[string]any)["managedFields"] = managed
	return u, managed
}

// Defaulting and the strategies set managedFields aside and put them back unchanged; the
// caller's maps are not modified on the way.
func TestManagedFieldsSetAside(t *testing.T) {
	d := deployments(t)
	u, managed := deploymentWithManagedFields(t)
	original := u.Object["metadata"].(map[string]any)

	d.Behavior.Default(u)
	if got := u.Object["metadata"].(map[string]any)["managedFields"]; !reflect.DeepEqual(got, managed) {
		t.Errorf("managedFields after Default: %v", got)
	}
	if strategy, _, _ := unstructured.NestedString(u.Object, "spec", "strategy", "type"); strategy != "RollingUpdate" {
		t.Errorf("not defaulted: strategy %q", strategy)
	}
	if _, has := original["managedFields"]; !has {
		t.Error("Default took managedFields out of the caller's metadata map")
	}

	old := u.DeepCopy()
	old.SetResourceVersion("7")
	old.SetGeneration(1)
	next := u.DeepCopy()
	next.SetResourceVersion("7")
	_ = unstructured.SetNestedField(next.Object, int64(5), "spec", "replicas")
	if _, err := d.Behavior.BeforeUpdate(context.Background(), next, old, ""); err != nil {
		t.Fatal(err)
	}
	if got := next.Object["metadata"].(map[string]any)["managedFields"]; !reflect.DeepEqual(got, managed) {
		t.Errorf("managedFields after BeforeUpdate: %v", got)
	}
	if next.GetGeneration() != 2 {
		t.Errorf("generation %d after a spec change, want 2", next.GetGeneration())
	}

	// managedFields the strategy must refuse still reach it: an entry without a manager's
	// operation is invalid, as kube-apiserver says.
	bad := u.DeepCopy()
	bad.SetResourceVersion("7")
	bad.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "x", "operation": "Bogus"}}
	if _, err := d.Behavior.BeforeUpdate(context.Background(), bad, old, ""); err == nil {
		t.Error("an invalid managedFields operation was accepted")
	}
}
