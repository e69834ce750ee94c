package controllertest

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// NoneInTerminatingNamespace checks that a controller keeping the object name of resource r in
// every active namespace (created waits for it) makes none in a Terminating one: with the
// namespace "doomed" deleted (no namespace controller runs, so it stays Terminating) and the
// objects of doomed and "control" deleted, control's comes back and doomed's does not.
func NoneInTerminatingNamespace(ctx context.Context, t *testing.T, svc *objects.Service, r *catalog.Resource, name string, created func(t *testing.T, namespace string) *unstructured.Unstructured) {
	t.Helper()
	namespaces, _ := svc.Catalog().Lookup(catalog.NamespacesGVR)
	CreateNamespace(ctx, t, svc, "doomed")
	CreateNamespace(ctx, t, svc, "control")
	created(t, "doomed")
	first := created(t, "control")
	if _, err := svc.Delete(ctx, namespaces, "", "doomed", objects.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"doomed", "control"} {
		if _, err := svc.Delete(ctx, r, ns, name, objects.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	Eventually(t, "the active namespace's "+name+" back", func() bool {
		obj, err := svc.Get(ctx, r, "control", name)
		return err == nil && obj.GetUID() != first.GetUID()
	})
	time.Sleep(300 * time.Millisecond)
	if obj, err := svc.Get(ctx, r, "doomed", name); !apierrors.IsNotFound(err) {
		t.Errorf("in a Terminating namespace: %v, %v; want NotFound", obj, err)
	}
}
