package againstreference

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

const rangesCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ranges.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Range, plural: ranges, singular: range}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.min <= self.max", message: "min must not exceed max"}
            properties:
              min: {type: integer}
              max: {type: integer}
              id: {type: string, x-kubernetes-validations: [{rule: "self == oldSelf", message: "id is immutable"}]}
`

// TestValidationRules compares how both servers enforce a CRD's x-kubernetes-validations.
func TestValidationRules(t *testing.T) {
	lapisDyn, refDyn := both(t)
	gvr := schema.GroupVersionResource{Group: "diff.example.com", Version: "v1", Resource: "ranges"}
	for _, c := range []dynamic.Interface{lapisDyn, refDyn} {
		installCRD(t, c, rangesCRD, gvr)
	}
	const base = "/apis/diff.example.com/v1/namespaces/default/ranges"
	tests := []struct {
		name, method, path, contentType, body string
	}{
		{"valid", "POST", base, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Range","metadata":{"name":"r"},"spec":{"min":1,"max":2,"id":"a"}}`},
		{"rule broken on create", "POST", base, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Range","metadata":{"name":"bad"},"spec":{"min":3,"max":2,"id":"a"}}`},
		{"rule broken by a patch", "PATCH", base + "/r", "application/merge-patch+json", `{"spec":{"min":5}}`},
		{"transition rule", "PATCH", base + "/r", "application/merge-patch+json", `{"spec":{"id":"b"}}`},
		{"allowed change", "PATCH", base + "/r", "application/merge-patch+json", `{"spec":{"max":9}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			codeL, errL := raw(t, servers.lapis, tt.method, tt.path, tt.contentType, tt.body)
			codeR, errR := raw(t, servers.reference, tt.method, tt.path, tt.contentType, tt.body)
			if codeL != codeR {
				t.Errorf("status code: lapis %d, reference %d (lapis %v; reference %v)", codeL, codeR, errL, errR)
			}
			compareErrors(t, tt.name, errL, errR)
		})
	}
}

// installCRD creates one CRD and waits until its resource is served.
func installCRD(t *testing.T, c dynamic.Interface, doc string, gvr schema.GroupVersionResource) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s not served: %v", gvr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
