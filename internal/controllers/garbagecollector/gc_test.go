package garbagecollector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

type fixture struct {
	t          *testing.T
	ctx        context.Context
	svc        *objects.Service
	cms, scrts *catalog.Resource
	nss        *catalog.Resource
}

// newFixture starts an objects.Service on a fresh embedded etcd with namespaces default and
// other; with collector, a garbage collector runs over it until the test ends.
func newFixture(t *testing.T, collector bool) *fixture {
	t.Helper()
	svc, _ := objectstest.NewService(t, "default", "other")
	f := &fixture{t: t, ctx: context.Background(), svc: svc}
	f.cms = f.resource("configmaps")
	f.scrts = f.resource("secrets")
	f.nss = f.resource("namespaces")
	if collector {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			New(f.svc, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
	}
	return f
}

func (f *fixture) resource(name string) *catalog.Resource {
	r, ok := f.svc.Catalog().Lookup(schema.GroupVersionResource{Version: "v1", Resource: name})
	if !ok {
		f.t.Fatalf("no resource %s", name)
	}
	return r
}

func (f *fixture) create(r *catalog.Resource, namespace string, obj *unstructured.Unstructured) *unstructured.Unstructured {
	f.t.Helper()
	res, err := f.svc.Create(f.ctx, r, namespace, obj, objects.WriteOptions{})
	if err != nil {
		f.t.Fatalf("creating %s %s: %v", r.Name, obj.GetName(), err)
	}
	return res.Object
}

// ref is an ownerReference to obj.
func ref(obj *unstructured.Unstructured, block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID()}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

// configMap creates a ConfigMap in default with owners and finalizers.
func (f *fixture) configMap(name string, owners []metav1.OwnerReference, finalizers ...string) *unstructured.Unstructured {
	f.t.Helper()
	return f.createOwned(f.cms, "default", "ConfigMap", name, owners, finalizers...)
}

func (f *fixture) secret(name string, owners []metav1.OwnerReference, finalizers ...string) *unstructured.Unstructured {
	f.t.Helper()
	return f.createOwned(f.scrts, "default", "Secret", name, owners, finalizers...)
}

func (f *fixture) createOwned(r *catalog.Resource, namespace, kind, name string, owners []metav1.OwnerReference, finalizers ...string) *unstructured.Unstructured {
	f.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name}}}
	obj.SetOwnerReferences(owners)
	obj.SetFinalizers(finalizers)
	return f.create(r, namespace, obj)
}

func (f *fixture) delete(r *catalog.Resource, name string, policy metav1.DeletionPropagation) objects.DeleteResult {
	f.t.Helper()
	opts := objects.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	res, err := f.svc.Delete(f.ctx, r, "default", name, opts)
	if err != nil {
		f.t.Fatalf("deleting %s %s: %v", r.Name, name, err)
	}
	return res
}

func (f *fixture) get(r *catalog.Resource, name string) (*unstructured.Unstructured, bool) {
	f.t.Helper()
	obj, err := f.svc.Get(f.ctx, r, "default", name)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return obj, true
}

// eventually waits for cond to hold; cond says what it last saw.
func (f *fixture) eventually(what string, cond func() (bool, string)) {
	f.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: not true after 15s; last seen: %s", what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fixture) eventuallyGone(r *catalog.Resource, name string) {
	f.t.Helper()
	f.eventually(r.Name+" "+name+" is deleted", func() (bool, string) {
		obj, ok := f.get(r, name)
		if !ok {
			return true, ""
		}
		return false, fmt.Sprint(obj.Object["metadata"])
	})
}

// stays checks for a while that name is still there and returns it.
func (f *fixture) stays(r *catalog.Resource, name string) *unstructured.Unstructured {
	f.t.Helper()
	time.Sleep(500 * time.Millisecond)
	obj, ok := f.get(r, name)
	if !ok {
		f.t.Fatalf("%s %s was deleted", r.Name, name)
	}
	return obj
}

func (f *fixture) removeFinalizers(r *catalog.Resource, name string) {
	f.t.Helper()
	_, err := f.svc.Update(f.ctx, r, "default", name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(nil)
		return cur, nil
	}, objects.WriteOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
}

func TestDeleteSetsPropagationFinalizers(t *testing.T) {
	f := newFixture(t, false)
	f.configMap("plain", nil)
	if res := f.delete(f.cms, "plain", ""); !res.Deleted {
		t.Fatalf("default (background) delete kept the object: %v", res.Object)
	}
	f.configMap("bg", nil)
	if res := f.delete(f.cms, "bg", metav1.DeletePropagationBackground); !res.Deleted {
		t.Fatalf("background delete kept the object: %v", res.Object)
	}

	f.configMap("orphan", nil, "example.com/hold")
	res := f.delete(f.cms, "orphan", metav1.DeletePropagationOrphan)
	if res.Deleted || res.Object.GetDeletionTimestamp() == nil || !slices.Equal(res.Object.GetFinalizers(), []string{"example.com/hold", "orphan"}) {
		t.Fatalf("orphan delete: %v %v", res.Deleted, res.Object.Object["metadata"])
	}
	stamp := res.Object.GetDeletionTimestamp()
	// Deleting again with another policy swaps the finalizer; the deletion timestamp stands.
	res = f.delete(f.cms, "orphan", metav1.DeletePropagationForeground)
	if res.Deleted || !slices.Equal(res.Object.GetFinalizers(), []string{"example.com/hold", "foregroundDeletion"}) || !res.Object.GetDeletionTimestamp().Equal(stamp) {
		t.Fatalf("foreground delete after orphan: %v", res.Object.Object["metadata"])
	}
	// Without a policy the finalizer already there stands.
	res = f.delete(f.cms, "orphan", "")
	if res.Deleted || !slices.Equal(res.Object.GetFinalizers(), []string{"example.com/hold", "foregroundDeletion"}) {
		t.Fatalf("delete without policy: %v", res.Object.Object["metadata"])
	}
	// Background drops it; the other finalizer still holds the object.
	res = f.delete(f.cms, "orphan", metav1.DeletePropagationBackground)
	if res.Deleted || !slices.Equal(res.Object.GetFinalizers(), []string{"example.com/hold"}) {
		t.Fatalf("background delete: %v", res.Object.Object["metadata"])
	}

	// A propagation finalizer alone holds an object until a background delete drops it.
	f.configMap("fg", nil)
	res = f.delete(f.cms, "fg", metav1.DeletePropagationForeground)
	if res.Deleted || !slices.Equal(res.Object.GetFinalizers(), []string{"foregroundDeletion"}) {
		t.Fatalf("foreground delete: %v %v", res.Deleted, res.Object.Object["metadata"])
	}
	if stored, ok := f.get(f.cms, "fg"); !ok || stored.GetDeletionTimestamp() == nil {
		t.Fatalf("foreground delete did not store the mark: %v", stored)
	}
	if res := f.delete(f.cms, "fg", metav1.DeletePropagationBackground); !res.Deleted {
		t.Fatalf("background delete of an object held only by foregroundDeletion: %v", res.Object.Object["metadata"])
	}

	// Dry run stores nothing.
	f.configMap("dry", nil)
	policy := metav1.DeletePropagationOrphan
	res, err := f.svc.Delete(f.ctx, f.cms, "default", "dry", objects.DeleteOptions{DryRun: true, PropagationPolicy: &policy})
	if err != nil || res.Deleted || !slices.Equal(res.Object.GetFinalizers(), []string{"orphan"}) {
		t.Fatalf("dry run: %v %v", res, err)
	}
	if stored, _ := f.get(f.cms, "dry"); stored.GetDeletionTimestamp() != nil || len(stored.GetFinalizers()) > 0 {
		t.Fatalf("dry run stored: %v", stored.Object["metadata"])
	}
}

func TestBackground(t *testing.T) {
	f := newFixture(t, true)
	owner := f.configMap("owner", nil)
	f.configMap("dep-cm", []metav1.OwnerReference{ref(owner, false)})
	f.secret("dep-secret", []metav1.OwnerReference{ref(owner, true)})
	other := f.configMap("other-owner", nil)
	shared := f.secret("shared", []metav1.OwnerReference{ref(owner, false), ref(other, false)})
	// A grandchild goes too, once its parent has gone.
	depCM, _ := f.get(f.cms, "dep-cm")
	f.configMap("grandchild", []metav1.OwnerReference{ref(depCM, false)})

	if res := f.delete(f.cms, "owner", ""); !res.Deleted {
		t.Fatal("background delete kept the owner")
	}
	f.eventuallyGone(f.cms, "dep-cm")
	f.eventuallyGone(f.scrts, "dep-secret")
	f.eventuallyGone(f.cms, "grandchild")
	// An object with an owner left keeps it, and loses the reference to the one gone.
	f.eventually("shared secret references only its remaining owner", func() (bool, string) {
		obj, ok := f.get(f.scrts, "shared")
		if !ok {
			return false, "deleted"
		}
		refs := obj.GetOwnerReferences()
		return len(refs) == 1 && refs[0].UID == other.GetUID(), fmt.Sprint(refs)
	})
	if obj := f.stays(f.scrts, "shared"); obj.GetUID() != shared.GetUID() {
		t.Fatal("shared secret replaced")
	}
	f.delete(f.cms, "other-owner", metav1.DeletePropagationBackground)
	f.eventuallyGone(f.scrts, "shared")
}

func TestOrphan(t *testing.T) {
	f := newFixture(t, true)
	owner := f.configMap("owner", nil)
	keep := f.configMap("keep", nil)
	f.configMap("dep", []metav1.OwnerReference{ref(owner, true), ref(keep, false)})
	f.secret("dep-secret", []metav1.OwnerReference{ref(owner, false)})

	res := f.delete(f.cms, "owner", metav1.DeletePropagationOrphan)
	if res.Deleted || !slices.Contains(res.Object.GetFinalizers(), metav1.FinalizerOrphanDependents) {
		t.Fatalf("orphan delete: %v", res.Object.Object["metadata"])
	}
	f.eventuallyGone(f.cms, "owner")
	dep := f.stays(f.cms, "dep")
	if refs := dep.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != keep.GetUID() {
		t.Fatalf("dependent's references: %v", refs)
	}
	if refs := f.stays(f.scrts, "dep-secret").GetOwnerReferences(); len(refs) != 0 {
		t.Fatalf("orphaned secret still references: %v", refs)
	}

	// Another finalizer keeps the orphaned owner until it goes too.
	held := f.configMap("held", nil, "example.com/hold")
	f.configMap("held-dep", []metav1.OwnerReference{ref(held, false)})
	f.delete(f.cms, "held", metav1.DeletePropagationOrphan)
	f.eventually("orphan finalizer removed", func() (bool, string) {
		obj, _ := f.get(f.cms, "held")
		return slices.Equal(obj.GetFinalizers(), []string{"example.com/hold"}), fmt.Sprint(obj.GetFinalizers())
	})
	if refs := f.stays(f.cms, "held-dep").GetOwnerReferences(); len(refs) != 0 {
		t.Fatalf("orphaned configmap still references: %v", refs)
	}
	f.removeFinalizers(f.cms, "held")
	f.eventuallyGone(f.cms, "held")
	f.stays(f.cms, "held-dep")
}

func TestForeground(t *testing.T) {
	f := newFixture(t, true)

	// No blocking dependents: dependents are deleted and the owner goes.
	owner := f.configMap("owner", nil)
	f.configMap("dep", []metav1.OwnerReference{ref(owner, false)})
	f.secret("dep-secret", []metav1.OwnerReference{ref(owner, false)})
	res := f.delete(f.cms, "owner", metav1.DeletePropagationForeground)
	if res.Deleted || !slices.Equal(res.Object.GetFinalizers(), []string{metav1.FinalizerDeleteDependents}) || res.Object.GetDeletionTimestamp() == nil {
		t.Fatalf("foreground delete: %v", res.Object.Object["metadata"])
	}
	f.eventuallyGone(f.cms, "owner")
	f.eventuallyGone(f.cms, "dep")
	f.eventuallyGone(f.scrts, "dep-secret")

	// A dependent with blockOwnerDeletion holds the owner until it is gone; one without does not.
	blocked := f.configMap("blocked", nil)
	f.configMap("blocker", []metav1.OwnerReference{ref(blocked, true)}, "example.com/hold")
	f.delete(f.cms, "blocked", metav1.DeletePropagationForeground)
	f.eventually("blocking dependent is being deleted", func() (bool, string) {
		obj, ok := f.get(f.cms, "blocker")
		return ok && obj.GetDeletionTimestamp() != nil, fmt.Sprint(ok)
	})
	if obj := f.stays(f.cms, "blocked"); !slices.Equal(obj.GetFinalizers(), []string{metav1.FinalizerDeleteDependents}) {
		t.Fatalf("blocked owner: %v", obj.Object["metadata"])
	}
	f.removeFinalizers(f.cms, "blocker")
	f.eventuallyGone(f.cms, "blocker")
	f.eventuallyGone(f.cms, "blocked")

	loose := f.configMap("loose", nil)
	f.configMap("loose-dep", []metav1.OwnerReference{ref(loose, false)}, "example.com/hold")
	f.delete(f.cms, "loose", metav1.DeletePropagationForeground)
	f.eventuallyGone(f.cms, "loose")
	if obj := f.stays(f.cms, "loose-dep"); obj.GetDeletionTimestamp() == nil {
		t.Fatalf("non-blocking dependent not deleted: %v", obj.Object["metadata"])
	}
	f.removeFinalizers(f.cms, "loose-dep")
	f.eventuallyGone(f.cms, "loose-dep")

	// Foreground deletion goes down the tree: a dependent with dependents of its own is deleted
	// in the foreground too, so the root waits for the grandchildren.
	root := f.configMap("root", nil)
	child := f.secret("child", []metav1.OwnerReference{ref(root, true)})
	f.configMap("grandchild", []metav1.OwnerReference{ref(child, true)}, "example.com/hold")
	f.delete(f.cms, "root", metav1.DeletePropagationForeground)
	f.eventually("child deleted in the foreground", func() (bool, string) {
		obj, ok := f.get(f.scrts, "child")
		return ok && obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents), fmt.Sprint(ok)
	})
	f.stays(f.cms, "root")
	f.removeFinalizers(f.cms, "grandchild")
	f.eventuallyGone(f.cms, "grandchild")
	f.eventuallyGone(f.scrts, "child")
	f.eventuallyGone(f.cms, "root")

	// A dependent with another owner loses its reference rather than going.
	first := f.configMap("first", nil)
	second := f.configMap("second", nil)
	f.configMap("two-owners", []metav1.OwnerReference{ref(first, true), ref(second, false)})
	f.delete(f.cms, "first", metav1.DeletePropagationForeground)
	f.eventuallyGone(f.cms, "first")
	if refs := f.stays(f.cms, "two-owners").GetOwnerReferences(); len(refs) != 1 || refs[0].UID != second.GetUID() {
		t.Fatalf("references left: %v", refs)
	}
}

func TestDanglingReferences(t *testing.T) {
	f := newFixture(t, true)
	owner := f.configMap("owner", nil)
	ns, err := f.svc.Get(f.ctx, f.nss, "", "other")
	if err != nil {
		t.Fatal(err)
	}

	// An owner that never existed.
	f.configMap("never", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: types.UID("no-such-uid")}})
	// The right name, another uid.
	f.configMap("wrong-uid", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: types.UID("not-the-owners")}})
	// The owner's uid, but in another namespace: owners are looked up in the dependent's.
	elsewhere := f.createOwned(f.cms, "other", "ConfigMap", "elsewhere", []metav1.OwnerReference{ref(owner, false)})
	// A cluster-scoped owner that exists, and one that does not.
	f.secret("ns-owned", []metav1.OwnerReference{ref(ns, false)})
	f.secret("gone-ns-owned", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "gone", UID: types.UID("gone-uid")}})
	// A kind nothing serves: kube waits rather than guess.
	f.configMap("unknown-kind", []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: types.UID("w-uid")}})
	// A dangling reference next to a live owner is removed.
	f.configMap("half", []metav1.OwnerReference{ref(owner, false), {APIVersion: "v1", Kind: "Secret", Name: "ghost", UID: types.UID("ghost-uid")}})

	f.eventuallyGone(f.cms, "never")
	f.eventuallyGone(f.cms, "wrong-uid")
	f.eventually("configmap in another namespace deleted", func() (bool, string) {
		_, err := f.svc.Get(f.ctx, f.cms, "other", "elsewhere")
		return apierrors.IsNotFound(err), fmt.Sprint(err, elsewhere.GetUID())
	})
	f.eventuallyGone(f.scrts, "gone-ns-owned")
	f.eventually("dangling reference removed", func() (bool, string) {
		obj, _ := f.get(f.cms, "half")
		return obj != nil && len(obj.GetOwnerReferences()) == 1, fmt.Sprint(obj)
	})
	f.stays(f.scrts, "ns-owned")
	f.stays(f.cms, "unknown-kind")
	f.stays(f.cms, "owner")
	f.stays(f.cms, "half")
}

func TestDeleteCollection(t *testing.T) {
	f := newFixture(t, true)
	var owners []*unstructured.Unstructured
	for _, name := range []string{"a", "b"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"role": "owner"}}}}
		owners = append(owners, f.create(f.cms, "default", obj))
	}
	f.secret("a-dep", []metav1.OwnerReference{ref(owners[0], true)}, "example.com/hold")
	f.secret("b-dep", []metav1.OwnerReference{ref(owners[1], false)})

	policy := metav1.DeletePropagationForeground
	deleted, _, err := f.svc.DeleteCollection(f.ctx, f.cms, "default", objects.ListOptions{LabelSelector: mustSelector(t, "role=owner")},
		objects.DeleteOptions{PropagationPolicy: &policy})
	if err != nil || len(deleted) != 2 {
		t.Fatalf("deleteCollection: %v %v", deleted, err)
	}
	for _, obj := range deleted {
		if obj.GetDeletionTimestamp() == nil || !slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			t.Fatalf("not marked for foreground deletion: %v", obj.Object["metadata"])
		}
	}
	f.eventuallyGone(f.scrts, "b-dep")
	f.eventuallyGone(f.cms, "b")
	f.stays(f.cms, "a")
	f.removeFinalizers(f.scrts, "a-dep")
	f.eventuallyGone(f.scrts, "a-dep")
	f.eventuallyGone(f.cms, "a")

	// Orphaning a collection keeps the dependents.
	c := f.create(f.cms, "default", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "labels": map[string]any{"role": "owner"}}}})
	f.secret("c-dep", []metav1.OwnerReference{ref(c, true)})
	policy = metav1.DeletePropagationOrphan
	if _, _, err := f.svc.DeleteCollection(f.ctx, f.cms, "default", objects.ListOptions{LabelSelector: mustSelector(t, "role=owner")},
		objects.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	f.eventuallyGone(f.cms, "c")
	if refs := f.stays(f.scrts, "c-dep").GetOwnerReferences(); len(refs) != 0 {
		t.Fatalf("orphaned secret references: %v", refs)
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}
