package objects

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
)

// DeleteOptions are the parts of metav1.DeleteOptions the pipeline acts on.
type DeleteOptions struct {
	DryRun        bool
	Preconditions *metav1.Preconditions
	// PropagationPolicy says what becomes of the object's dependents (the legacy orphanDependents
	// maps onto it: true is Orphan, false Background). Nil keeps the orphan or foregroundDeletion
	// finalizer the object may already carry, else applies the resource's default, which is
	// Background for most resources: the object goes now, the garbage collector
	// deletes its dependents afterwards (OrphanByDefault resources orphan them).
	PropagationPolicy *metav1.DeletionPropagation
	// GracePeriodSeconds is the request's grace period, for types deleted gracefully (Pods).
	GracePeriodSeconds *int64
	// IgnoreStoreReadError is kube's ignoreStoreReadErrorWithClusterBreakingPotential: remove an
	// object storage cannot read, without admission, preconditions or finalizers.
	IgnoreStoreReadError bool
}

// kube is the options as kube's DeleteOptions, which admission plugins see.
func (o DeleteOptions) kube() *metav1.DeleteOptions {
	out := &metav1.DeleteOptions{Preconditions: o.Preconditions, PropagationPolicy: o.PropagationPolicy, GracePeriodSeconds: o.GracePeriodSeconds}
	if o.DryRun {
		out.DryRun = []string{metav1.DryRunAll}
	}
	return out
}

var crdsResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// DeleteResult is the outcome of a delete.
type DeleteResult struct {
	// Object is the deleted object, or the object now marked for deletion.
	Object *unstructured.Unstructured
	// Deleted is true when the object is gone, false when finalizers hold it.
	Deleted bool
}

// undeletableNamespaces are kept by kube's NamespaceLifecycle admission.
var undeletableNamespaces = sets.New("default", "kube-system", "kube-public")

// Delete removes an object, or marks it for deletion when finalizers must run first.
func (s *Service) Delete(ctx context.Context, r *catalog.Resource, namespace, name string, opts DeleteOptions) (DeleteResult, error) {
	if !r.Namespaced {
		namespace = ""
	}
	if r.StorageGroupResource == namespacesResource && undeletableNamespaces.Has(name) {
		return DeleteResult{}, apierrors.NewForbidden(qualifiedResource(r), name, errors.New("this namespace may not be deleted"))
	}
	key := s.keys.object(r, namespace, name)
	if opts.IgnoreStoreReadError {
		return s.deleteCorrupt(ctx, r, key, namespace, name, opts.DryRun)
	}
	// A lost race is retried: preconditions are checked again against the newer object.
	for {
		kv, _, err := s.store.Get(ctx, key, 0)
		if err != nil {
			return DeleteResult{}, s.readError(r, name, err)
		}
		obj, err := s.fromStorage(r, kv)
		if err != nil && opts.Preconditions == nil {
			// Deleting never depends on reading the object back: one that cannot be decoded
			// (too deep for an older lapis's checks, say) has nothing readable to hold it.
			obj = unreadable(r, namespace, name, kv)
		} else if err != nil {
			return DeleteResult{}, apierrors.NewInternalError(err)
		}
		if err := checkPreconditions(r, obj, opts.Preconditions); err != nil {
			return DeleteResult{}, err
		}
		if err := r.Behavior.AdmitDelete(catalog.WithDryRun(ctx, opts.DryRun), obj, opts.kube()); err != nil {
			return DeleteResult{}, err
		}
		graceful := false
		if r.GracefulDelete != nil {
			var pending bool
			if graceful, pending, err = r.GracefulDelete(ctx, obj, opts.GracePeriodSeconds); err != nil {
				return DeleteResult{}, err
			}
			if pending {
				return DeleteResult{Object: obj}, nil // a graceful deletion is under way
			}
		}
		if r.BeforeDeleting != nil && obj.GetDeletionTimestamp() == nil {
			if err := r.BeforeDeleting(obj); err != nil {
				return DeleteResult{}, apierrors.NewInternalError(err)
			}
		}
		deleting := obj.GetDeletionTimestamp() != nil && !graceful
		changed := graceful
		if appliesPropagation(r, obj) {
			changed = setPropagationFinalizers(obj, defaultPropagation(r, obj, opts.PropagationPolicy)) || changed
		}
		if gracePeriod := obj.GetDeletionGracePeriodSeconds(); graceful && (blocksDeletion(r, obj) || (gracePeriod != nil && *gracePeriod > 0)) {
			// Marked for a graceful deletion (a Pod on a node): what ends it is someone's
			// delete with no grace period left (a kubelet's), or the last finalizer.
			res, err := s.writeDeleting(ctx, r, key, kv, obj, opts)
			if errors.Is(err, errRetryDelete) {
				continue
			}
			return res, err
		}
		if blocksDeletion(r, obj) {
			if deleting && !changed {
				return DeleteResult{Object: obj}, nil // already being deleted
			}
			markDeleting(r, obj, s.now())
			res, err := s.writeDeleting(ctx, r, key, kv, obj, opts)
			if errors.Is(err, errRetryDelete) {
				continue
			}
			return res, err
		}
		if opts.DryRun {
			return DeleteResult{Object: obj, Deleted: true}, nil
		}
		if graceful {
			// kube writes the marked object before it deletes it: watchers see both.
			res, err := s.writeDeleting(ctx, r, key, kv, obj, opts)
			if errors.Is(err, errRetryDelete) {
				continue
			}
			if err != nil {
				return res, err
			}
			kv.ModRevision, _ = strconv.ParseInt(res.Object.GetResourceVersion(), 10, 64)
		}
		_, _, err = s.store.Delete(ctx, key, kv.ModRevision)
		if retryConflict(ctx, err, false) {
			continue
		}
		if err != nil {
			return DeleteResult{}, storageError(r, name, raceError(ctx, err, false))
		}
		released(ctx, r, obj)
		return DeleteResult{Object: obj, Deleted: true}, nil
	}
}

// errRetryDelete is writeDeleting's answer when the object changed under it.
var errRetryDelete = errors.New("the object changed; delete again")

// writeDeleting stores obj marked for deletion over kv, returning it with its new
// resourceVersion; errRetryDelete when another write came first.
func (s *Service) writeDeleting(ctx context.Context, r *catalog.Resource, key string, kv storage.KeyValue, obj *unstructured.Unstructured, opts DeleteOptions) (DeleteResult, error) {
	if opts.DryRun {
		return DeleteResult{Object: obj}, nil
	}
	value, err := s.toStorage(r, obj)
	if err != nil {
		return DeleteResult{}, err
	}
	rev, _, err := s.store.Update(ctx, key, value, kv.ModRevision)
	if retryConflict(ctx, err, false) {
		return DeleteResult{}, errRetryDelete
	}
	if err != nil {
		return DeleteResult{}, storageError(r, obj.GetName(), raceError(ctx, err, false))
	}
	obj.SetResourceVersion(revisionString(rev))
	return DeleteResult{Object: obj}, nil
}

// unreadable stands for a stored object that cannot be decoded: its identity alone.
func unreadable(r *catalog.Resource, namespace, name string, kv storage.KeyValue) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(r.GroupVersion.String())
	obj.SetKind(r.Kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.SetResourceVersion(revisionString(kv.ModRevision))
	return obj
}

// checkPreconditions is kube-apiserver's early check of a delete's preconditions (its
// rest.BeforeDelete), which names the object's kind where other errors name its resource.
func checkPreconditions(r *catalog.Resource, obj *unstructured.Unstructured, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	kind := schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Kind}
	if p.UID != nil && *p.UID != obj.GetUID() {
		return apierrors.NewConflict(kind, obj.GetName(), fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, obj.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(kind, obj.GetName(), fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, obj.GetResourceVersion()))
	}
	return nil
}

// appliesPropagation reports whether a delete sets obj's garbage collection finalizers. Like
// kube-apiserver's registries, a namespace's first delete sets them but later ones leave them
// while its content is being deleted, and a CRD's first delete only begins removing its objects.
func appliesPropagation(r *catalog.Resource, obj *unstructured.Unstructured) bool {
	switch r.StorageGroupResource {
	case namespacesResource:
		if obj.GetDeletionTimestamp() == nil {
			return true
		}
		fs, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
		return len(fs) == 0
	case crdsResource:
		return obj.GetDeletionTimestamp() != nil
	}
	return true
}

// defaultPropagation is the policy of a delete: the one asked for; without one, the
// resource's default unless the object already carries a propagation finalizer (as kube's
// deletionFinalizersForGarbageCollection decides).
func defaultPropagation(r *catalog.Resource, obj *unstructured.Unstructured, policy *metav1.DeletionPropagation) *metav1.DeletionPropagation {
	if policy != nil || !r.OrphanByDefault {
		return policy
	}
	for _, f := range obj.GetFinalizers() {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			return nil
		}
	}
	orphan := metav1.DeletePropagationOrphan
	return &orphan
}

// setPropagationFinalizers makes obj carry the orphan or foregroundDeletion finalizer policy
// asks for, as kube-apiserver's deletionFinalizersForGarbageCollection does, and reports whether
// the set changed. Without a policy, a finalizer already there stands (defaultPropagation has
// applied the resource's default).
func setPropagationFinalizers(obj *unstructured.Unstructured, policy *metav1.DeletionPropagation) bool {
	if policy == nil {
		return false
	}
	old := obj.GetFinalizers()
	fs := make([]string, 0, len(old)+1)
	for _, f := range old {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			fs = append(fs, f)
		}
	}
	switch *policy {
	case metav1.DeletePropagationOrphan:
		fs = append(fs, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		fs = append(fs, metav1.FinalizerDeleteDependents)
	}
	if sets.New(fs...).Equal(sets.New(old...)) {
		return false
	}
	if len(fs) == 0 {
		fs = nil
	}
	obj.SetFinalizers(fs)
	return true
}

// markDeleting records that deletion has begun; finalizers then run. A deletion timestamp
// already set stands.
func markDeleting(r *catalog.Resource, obj *unstructured.Unstructured, now time.Time) {
	if obj.GetDeletionTimestamp() != nil {
		return
	}
	if g := obj.GetGeneration(); g > 0 && r.StorageGroupResource != namespacesResource && r.StorageGroupResource != crdsResource {
		obj.SetGeneration(g + 1) // kube-apiserver's markAsDeleting counts the start of deletion
	}
	ts := nowTime(now)
	obj.SetDeletionTimestamp(&ts)
	if r.StorageGroupResource == namespacesResource {
		// kube's namespace storage marks the namespace itself, without a grace period.
		_ = unstructured.SetNestedField(obj.Object, "Terminating", "status", "phase")
		return
	}
	zero := int64(0)
	obj.SetDeletionGracePeriodSeconds(&zero)
}

// DeleteCollection deletes every object a list with opts selects, and returns what it deleted
// or marked for deletion, and the resourceVersion of the list.
func (s *Service) DeleteCollection(ctx context.Context, r *catalog.Resource, namespace string, list ListOptions, opts DeleteOptions) ([]*unstructured.Unstructured, string, error) {
	items, meta, err := s.List(ctx, r, namespace, list)
	if err != nil {
		return nil, "", err
	}
	var out []*unstructured.Unstructured
	for _, item := range items {
		res, err := s.Delete(ctx, r, item.GetNamespace(), item.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return out, "", err
		}
		out = append(out, res.Object)
	}
	return out, meta.ResourceVersion, nil
}

// deleteCorrupt is kube's unsafe deletion (registry's corruptObjectDeleter and etcd3's
// conditionalDelete with ExpectTransformOrDecodeError, v0.37.2): it removes only an object
// storage cannot read, as it is (a dry run removes nothing), and refuses one it can read.
func (s *Service) deleteCorrupt(ctx context.Context, r *catalog.Resource, key, namespace, name string, dryRun bool) (DeleteResult, error) {
	kv, _, err := s.store.Get(ctx, key, 0)
	if err == nil {
		return DeleteResult{}, apierrors.NewConflict(qualifiedResource(r), name, fmt.Errorf(
			"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: unsafe deletion is not allowed because the object is decodable from storage", key))
	}
	if !errors.Is(err, storage.ErrCorrupt) {
		return DeleteResult{}, storageError(r, name, err)
	}
	if !dryRun {
		if _, _, err := s.store.Delete(ctx, key, kv.ModRevision); err != nil {
			return DeleteResult{}, storageError(r, name, err)
		}
	}
	return DeleteResult{Object: unreadable(r, namespace, name, kv), Deleted: true}, nil
}
