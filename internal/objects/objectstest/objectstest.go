// Package objectstest builds, for tests, an objects.Service on a fresh embedded etcd that serves
// the built-in resources and has the given namespaces.
package objectstest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/storage"
)

// NewService returns a Service whose storage goes away with the test.
func NewService(t testing.TB, namespaces ...string) (*objects.Service, *catalog.Catalog) {
	t.Helper()
	b, err := storage.OpenEmbedded(context.Background(), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{})...)
	svc := objects.NewService(storage.NewStore(b.Client), objects.NewKeys(objects.DefaultPrefix), cat)
	nss, _ := cat.Lookup(catalog.NamespacesGVR)
	for _, name := range namespaces {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
		if _, err := svc.Create(context.Background(), nss, "", ns, objects.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return svc, cat
}
