package controllertest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// Eventually waits up to 10 s for cond, which a controller makes true; the test fails otherwise,
// naming what it waited for.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CreateNamespace creates the namespace name through svc.
func CreateNamespace(ctx context.Context, t testing.TB, svc *objects.Service, name string) {
	t.Helper()
	namespaces, ok := svc.Catalog().Lookup(catalog.NamespacesGVR)
	if !ok {
		t.Fatal("namespaces are not served")
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := svc.Create(ctx, namespaces, "", ns, objects.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}
