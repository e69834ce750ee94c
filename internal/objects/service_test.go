package objects

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/storage"
)

func newTestService(t testing.TB) *Service {
	t.Helper()
	b, err := storage.OpenEmbedded(context.Background(), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{})...)
	s := NewService(storage.NewStore(b.Client), NewKeys(DefaultPrefix), cat)
	for _, ns := range []string{"default", "other"} {
		if _, err := s.Create(context.Background(), s.mustResource(t, "", "v1", "namespaces"), "", object("v1", "Namespace", "", ns, nil), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *Service) mustResource(t testing.TB, group, version, resource string) *catalog.Resource {
	r, ok := s.cat.Lookup(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
	if !ok {
		t.Fatalf("no resource %s/%s/%s", group, version, resource)
	}
	return r
}

func object(apiVersion, kind, namespace, name string, extra map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name}}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	for k, v := range extra {
		u.Object[k] = v
	}
	return u
}

func configMap(name string, data map[string]any) *unstructured.Unstructured {
	return object("v1", "ConfigMap", "", name, map[string]any{"data": data})
}

func TestCreate(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	cms := s.mustResource(t, "", "v1", "configmaps")
	tests := []struct {
		name      string
		namespace string
		obj       *unstructured.Unstructured
		opts      WriteOptions
		check     func(t *testing.T, res Result, err error)
	}{
		{"sets server metadata", "default", configMap("a", map[string]any{"k": "v"}), WriteOptions{}, func(t *testing.T, res Result, err error) {
			if err != nil {
				t.Fatal(err)
			}
			o := res.Object
			if o.GetUID() == "" || o.GetResourceVersion() == "" || o.GetCreationTimestamp().Time.IsZero() || o.GetNamespace() != "default" {
				t.Fatalf("metadata not set: %v", o.Object["metadata"])
			}
		}},
		{"existing name", "default", configMap("a", nil), WriteOptions{}, func(t *testing.T, _ Result, err error) {
			if !apierrors.IsAlreadyExists(err) {
				t.Fatalf("got %v", err)
			}
		}},
		{"generateName", "default", object("v1", "ConfigMap", "", "", map[string]any{"metadata": map[string]any{"generateName": "gen-"}}), WriteOptions{}, func(t *testing.T, res Result, err error) {
			if err != nil || len(res.Object.GetName()) != len("gen-")+5 {
				t.Fatalf("got %v %v", res.Object, err)
			}
		}},
		{"missing namespace", "nope", configMap("b", nil), WriteOptions{}, func(t *testing.T, _ Result, err error) {
			if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nope" not found` {
				t.Fatalf("got %v", err)
			}
		}},
		{"namespace mismatch", "default", object("v1", "ConfigMap", "other", "c", nil), WriteOptions{}, func(t *testing.T, _ Result, err error) {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("got %v", err)
			}
		}},
		{"invalid name", "default", configMap("Bad_Name", nil), WriteOptions{}, func(t *testing.T, _ Result, err error) {
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v", err)
			}
		}},
		{"unknown field warns by default", "default", object("v1", "ConfigMap", "", "d", map[string]any{"bogus": 1}), WriteOptions{}, func(t *testing.T, res Result, err error) {
			if err != nil || fmt.Sprint(res.Warnings) != `[unknown field "bogus"]` {
				t.Fatalf("got %v %v", res.Warnings, err)
			}
			if _, kept := res.Object.Object["bogus"]; kept {
				t.Fatal("unknown field stored")
			}
		}},
		{"unknown field strict", "default", object("v1", "ConfigMap", "", "e", map[string]any{"bogus": 1}), WriteOptions{FieldValidation: "Strict"}, func(t *testing.T, _ Result, err error) {
			want := `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"`
			if !apierrors.IsBadRequest(err) || err.Error() != want {
				t.Fatalf("got %v", err)
			}
		}},
		{"wrong type", "default", object("v1", "ConfigMap", "", "f", map[string]any{"data": "x"}), WriteOptions{}, func(t *testing.T, _ Result, err error) {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("got %v", err)
			}
		}},
		{"dry run stores nothing", "default", configMap("dry", nil), WriteOptions{DryRun: true}, func(t *testing.T, res Result, err error) {
			if err != nil || res.Object.GetUID() == "" {
				t.Fatalf("got %v %v", res.Object, err)
			}
			if _, err := s.Get(ctx, cms, "default", "dry"); !apierrors.IsNotFound(err) {
				t.Fatalf("dry-run object stored: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.Create(ctx, cms, tt.namespace, tt.obj, tt.opts)
			tt.check(t, res, err)
		})
	}
}

func TestUpdate(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	cms := s.mustResource(t, "", "v1", "configmaps")
	created, err := s.Create(ctx, cms, "default", configMap("a", map[string]any{"k": "v"}), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replace := func(obj *unstructured.Unstructured) Mutation {
		return func(*unstructured.Unstructured) (*unstructured.Unstructured, error) { return obj.DeepCopy(), nil }
	}

	// An update with the current resourceVersion succeeds and keeps server metadata.
	next := created.Object.DeepCopy()
	next.Object["data"] = map[string]any{"k": "w"}
	next.SetUID("")
	updated, err := s.Update(ctx, cms, "default", "a", replace(next), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Object.GetUID() != created.Object.GetUID() || updated.Object.GetResourceVersion() == created.Object.GetResourceVersion() {
		t.Fatalf("update lost metadata or kept the resourceVersion: %v", updated.Object.Object["metadata"])
	}

	// The same stale write now conflicts with kube's message.
	_, err = s.Update(ctx, cms, "default", "a", replace(next), WriteOptions{})
	want := `Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("stale update: %v", err)
	}

	// A no-op update does not write: the resourceVersion stays.
	same := updated.Object.DeepCopy()
	noop, err := s.Update(ctx, cms, "default", "a", replace(same), WriteOptions{})
	if err != nil || noop.Object.GetResourceVersion() != updated.Object.GetResourceVersion() {
		t.Fatalf("no-op update: %v %v", noop.Object, err)
	}

	// A changed UID is refused; a name that does not match the URL is a bad request.
	wrongUID := updated.Object.DeepCopy()
	wrongUID.SetUID("other")
	if _, err := s.Update(ctx, cms, "default", "a", replace(wrongUID), WriteOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("uid change: %v", err)
	}
	if _, err := s.Update(ctx, cms, "default", "b", replace(updated.Object), WriteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing object: %v", err)
	}
}

func TestGenerationTracksSpec(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	crds := s.mustResource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "things.example.com", map[string]any{
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "things", "kind": "Thing"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	})
	res, err := s.Create(ctx, crds, "", crd, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object.GetGeneration() != 1 {
		t.Fatalf("generation on create = %d", res.Object.GetGeneration())
	}
	labelOnly, err := s.Update(ctx, crds, "", crd.GetName(), func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetLabels(map[string]string{"a": "b"})
		return cur, nil
	}, WriteOptions{})
	if err != nil || labelOnly.Object.GetGeneration() != 1 {
		t.Fatalf("metadata change bumped generation: %v %v", labelOnly.Object.GetGeneration(), err)
	}
	specChange, err := s.Update(ctx, crds, "", crd.GetName(), func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		_ = unstructured.SetNestedStringSlice(cur.Object, []string{"th"}, "spec", "names", "shortNames")
		return cur, nil
	}, WriteOptions{})
	if err != nil || specChange.Object.GetGeneration() != 2 {
		t.Fatalf("spec change: generation %v %v", specChange.Object.GetGeneration(), err)
	}
}

func TestDeleteWithFinalizers(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	cms := s.mustResource(t, "", "v1", "configmaps")
	cm := configMap("held", nil)
	cm.SetFinalizers([]string{"example.com/hold"})
	created, err := s.Create(ctx, cms, "default", cm, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := created.Object.GetUID()
	if _, err := s.Delete(ctx, cms, "default", "held", DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	other := k8stypes.UID("nope")
	if _, err := s.Delete(ctx, cms, "default", "held", DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Fatalf("uid precondition: %v", err)
	}
	held, err := s.Get(ctx, cms, "default", "held")
	if err != nil || held.GetDeletionTimestamp() == nil {
		t.Fatalf("object not marked for deletion: %v %v", held, err)
	}
	// No new finalizers while deleting.
	_, err = s.Update(ctx, cms, "default", "held", func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(append(cur.GetFinalizers(), "example.com/more"))
		return cur, nil
	}, WriteOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("adding a finalizer while deleting: %v", err)
	}
	// Removing the last finalizer completes the deletion.
	if _, err := s.Update(ctx, cms, "default", "held", func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(nil)
		return cur, nil
	}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, cms, "default", "held"); !apierrors.IsNotFound(err) {
		t.Fatalf("object still there: %v", err)
	}
}

func TestNamespaceProtection(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	nss := s.mustResource(t, "", "v1", "namespaces")
	if _, err := s.Delete(ctx, nss, "", "default", DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting default: %v", err)
	}
	res, err := s.Delete(ctx, nss, "", "other", DeleteOptions{})
	if err != nil || res.Deleted {
		t.Fatalf("namespace delete should wait for its finalizer: %+v %v", res, err)
	}
	if phase, _, _ := unstructured.NestedString(res.Object.Object, "status", "phase"); phase != "Terminating" {
		t.Fatalf("phase %q", phase)
	}
	_, err = s.Create(ctx, s.mustResource(t, "", "v1", "configmaps"), "other", configMap("late", nil), WriteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create in a terminating namespace: %v", err)
	}
}

func TestListPagesAndSelectors(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	cms := s.mustResource(t, "", "v1", "configmaps")
	for i := 0; i < 5; i++ {
		cm := configMap(fmt.Sprintf("cm%d", i), nil)
		cm.SetLabels(map[string]string{"parity": []string{"even", "odd"}[i%2]})
		if _, err := s.Create(ctx, cms, "default", cm, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListRaw(ctx, cms, "default", ListOptions{Limit: 2})
	if err != nil || len(page.Items) != 2 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 3 {
		t.Fatalf("first page: %d items, continue %q, remaining %v, err %v", len(page.Items), page.Continue, page.RemainingItemCount, err)
	}
	// A write between pages is not seen by the rest of the list.
	if _, err := s.Create(ctx, cms, "default", configMap("cm9", nil), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rest, err := s.ListRaw(ctx, cms, "default", ListOptions{Continue: page.Continue})
	if err != nil || len(rest.Items) != 3 || rest.ResourceVersion != page.ResourceVersion {
		t.Fatalf("rest: %d items at %s (first page at %s): %v", len(rest.Items), rest.ResourceVersion, page.ResourceVersion, err)
	}
	if _, err := s.ListRaw(ctx, cms, "default", ListOptions{Continue: "garbage"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("bad continue: %v", err)
	}
	odd, _, err := s.List(ctx, cms, "", ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"parity": "odd"})})
	if err != nil || len(odd) != 2 {
		t.Fatalf("label selector: %d %v", len(odd), err)
	}
	named, _, err := s.List(ctx, cms, "", ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "cm3")})
	if err != nil || len(named) != 1 || named[0].GetName() != "cm3" {
		t.Fatalf("field selector: %v %v", named, err)
	}
	if _, _, err := s.List(ctx, cms, "", ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nope", "x")}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field: %v", err)
	}
	secrets := s.mustResource(t, "", "v1", "secrets")
	if _, err := s.Create(ctx, secrets, "default", object("v1", "Secret", "", "s", nil), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	opaque, _, err := s.List(ctx, secrets, "", ListOptions{FieldSelector: fields.OneTermEqualSelector("type", "Opaque")})
	if err != nil || len(opaque) != 1 {
		t.Fatalf("secret type selector: %v %v", opaque, err)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	s := newTestService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cms := s.mustResource(t, "", "v1", "configmaps")
	events, err := s.Watch(ctx, cms, "default", ListOptions{ResourceVersion: "1", LabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"})})
	if err != nil {
		t.Fatal(err)
	}
	setLabel := func(v string) {
		_, err := s.Update(ctx, cms, "default", "w", func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			cur.SetLabels(map[string]string{"app": v})
			return cur, nil
		}, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, cms, "default", configMap("w", nil), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	setLabel("x")                                              // enters the selection: ADDED
	setLabel("x2")                                             // leaves it: DELETED
	setLabel("x")                                              // ADDED again
	_, _ = s.Delete(ctx, cms, "default", "w", DeleteOptions{}) // DELETED
	var got []watch.EventType
	for len(got) < 4 {
		select {
		case ev := <-events:
			got = append(got, ev.Type)
		case <-ctx.Done():
			t.Fatalf("events so far: %v", got)
		}
	}
	if fmt.Sprint(got) != "[ADDED DELETED ADDED DELETED]" {
		t.Fatalf("events %v", got)
	}
}

// A namespace whose annotations merely mention deletion is not terminating.
func TestNamespaceAcceptsContentUnlessTerminating(t *testing.T) {
	s := newTestService(t)
	ctx := context.Background()
	nss := s.mustResource(t, "", "v1", "namespaces")
	ns := object("v1", "Namespace", "", "wordy", nil)
	ns.SetAnnotations(map[string]string{"deletionTimestamp": "never", "note": `"phase":"Terminating"`})
	if _, err := s.Create(ctx, nss, "", ns, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, s.mustResource(t, "", "v1", "configmaps"), "wordy", configMap("fine", nil), WriteOptions{}); err != nil {
		t.Fatalf("create in an active namespace: %v", err)
	}
}
