package serviceaccount

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/controllers/controllertest"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

func TestDefaultServiceAccount(t *testing.T) {
	// "before" exists, and "own" has its own default ServiceAccount, before the controller starts.
	svc, cat := objectstest.NewService(t, "before", "own")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sas, _ := cat.Lookup(catalog.ServiceAccountsGVR)
	mine := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "default", "labels": map[string]any{"made-by": "user"}}, "automountServiceAccountToken": false}}
	own, err := svc.Create(ctx, sas, "own", mine, objects.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go NewController(svc, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)

	get := func(ns string) (*unstructured.Unstructured, error) { return svc.Get(ctx, sas, ns, Name) }
	created := func(t *testing.T, ns string) *unstructured.Unstructured {
		t.Helper()
		var sa *unstructured.Unstructured
		controllertest.Eventually(t, "default ServiceAccount in "+ns, func() bool {
			var err error
			sa, err = get(ns)
			return err == nil
		})
		return sa
	}
	newNamespace := func(t *testing.T, name string) { controllertest.CreateNamespace(ctx, t, svc, name) }
	deleteSA := func(t *testing.T, ns string) {
		t.Helper()
		if _, err := svc.Delete(ctx, sas, ns, Name, objects.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a namespace that existed before the controller started gets one", func(t *testing.T) {
			created(t, "before")
		}},
		{"a new namespace gets one with only its name, as kube creates it", func(t *testing.T) {
			newNamespace(t, "fresh")
			sa := created(t, "fresh")
			// kube-controller-manager sends only metadata.name: no labels, no managedFields
			// (an empty field set is not recorded).
			wantKeys(t, "object", sa.Object, "apiVersion", "kind", "metadata")
			wantKeys(t, "metadata", sa.Object["metadata"].(map[string]any), "creationTimestamp", "name", "namespace", "resourceVersion", "uid")
		}},
		{"a deleted one is created again", func(t *testing.T) {
			newNamespace(t, "again")
			first := created(t, "again")
			deleteSA(t, "again")
			controllertest.Eventually(t, "a new default ServiceAccount", func() bool {
				sa, err := get("again")
				return err == nil && sa.GetUID() != first.GetUID()
			})
		}},
		{"an existing one is left as it is", func(t *testing.T) {
			created(t, "before") // the initial namespaces have been handled
			time.Sleep(200 * time.Millisecond)
			sa, err := get("own")
			if err != nil {
				t.Fatal(err)
			}
			if sa.GetResourceVersion() != own.Object.GetResourceVersion() || sa.GetLabels()["made-by"] != "user" {
				t.Errorf("the user's ServiceAccount was changed: %v", sa.Object)
			}
		}},
		{"a Terminating namespace gets none", func(t *testing.T) {
			controllertest.NoneInTerminatingNamespace(ctx, t, svc, sas, Name, created)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func wantKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
		t.Errorf("%s has %v, want %v", what, got, want)
	}
}
