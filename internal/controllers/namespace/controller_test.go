package namespace

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/controllers/controllertest"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

func TestNamespaceDeletion(t *testing.T) {
	svc, cat := objectstest.NewService(t, "doomed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewController(svc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.grace = 100 * time.Millisecond
	go c.Run(ctx)

	nss, _ := cat.Lookup(catalog.NamespacesGVR)
	cms, _ := cat.Lookup(catalog.ConfigMapsGVR)
	for _, name := range []string{"plain", "held"} {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}
		if name == "held" {
			cm.SetFinalizers([]string{"example.com/hold"})
		}
		if _, err := svc.Create(ctx, cms, "doomed", cm, objects.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Delete(ctx, nss, "", "doomed", objects.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The content without finalizers goes; the held object keeps the namespace, which says so.
	controllertest.Eventually(t, "the content without finalizers gone", func() bool {
		_, err := svc.Get(ctx, cms, "doomed", "plain")
		return apierrors.IsNotFound(err)
	})
	controllertest.Eventually(t, "the namespace reporting the finalizer left", func() bool {
		ns, err := svc.Get(ctx, nss, "", "doomed")
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(ns.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "NamespaceFinalizersRemaining" && m["status"] == "True" &&
				m["message"] == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances" {
				return true
			}
		}
		return false
	})

	// Once the finalizer is gone, the object and then the namespace go.
	if _, err := svc.Update(ctx, cms, "doomed", "held", func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(nil)
		return cur, nil
	}, objects.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the namespace gone", func() bool {
		_, err := svc.Get(ctx, nss, "", "doomed")
		return apierrors.IsNotFound(err)
	})
}
