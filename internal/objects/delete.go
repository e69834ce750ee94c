package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
)

// DeleteOptions are the parts of metav1.DeleteOptions the pipeline acts on.
type DeleteOptions struct {
	DryRun        bool
	Preconditions *metav1.Preconditions
}

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
	key := objectKey(r, namespace, name)
	for attempt := 0; ; attempt++ {
		kv, _, err := s.store.Get(ctx, key, 0)
		if err != nil {
			return DeleteResult{}, storageError(r, name, err)
		}
		obj, err := s.fromStorage(r, kv)
		if err != nil {
			return DeleteResult{}, apierrors.NewInternalError(err)
		}
		if err := checkPreconditions(r, obj, opts.Preconditions); err != nil {
			return DeleteResult{}, err
		}
		if blocksDeletion(r, obj) {
			if obj.GetDeletionTimestamp() != nil {
				return DeleteResult{Object: obj}, nil // already being deleted
			}
			markDeleting(r, obj, s.now())
			if opts.DryRun {
				return DeleteResult{Object: obj}, nil
			}
			value, err := s.toStorage(r, obj)
			if err != nil {
				return DeleteResult{}, apierrors.NewInternalError(err)
			}
			rev, _, err := s.store.Update(ctx, key, value, kv.ModRevision)
			if errors.Is(err, storage.ErrConflict) && attempt < maxConflictRetries {
				continue
			}
			if err != nil {
				return DeleteResult{}, storageError(r, name, err)
			}
			obj.SetResourceVersion(revisionString(rev))
			return DeleteResult{Object: obj}, nil
		}
		if opts.DryRun {
			return DeleteResult{Object: obj, Deleted: true}, nil
		}
		_, _, err = s.store.Delete(ctx, key, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) && attempt < maxConflictRetries {
			continue
		}
		if err != nil {
			return DeleteResult{}, storageError(r, name, err)
		}
		return DeleteResult{Object: obj, Deleted: true}, nil
	}
}

func checkPreconditions(r *catalog.Resource, obj *unstructured.Unstructured, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != obj.GetUID() {
		return apierrors.NewConflict(qualifiedResource(r), obj.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, obj.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(qualifiedResource(r), obj.GetName(),
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, obj.GetResourceVersion()))
	}
	return nil
}

// markDeleting records that deletion has begun; finalizers then run.
func markDeleting(r *catalog.Resource, obj *unstructured.Unstructured, now time.Time) {
	ts := nowTime(now)
	obj.SetDeletionTimestamp(&ts)
	zero := int64(0)
	obj.SetDeletionGracePeriodSeconds(&zero)
	if r.StorageGroupResource == namespacesResource {
		_ = unstructured.SetNestedField(obj.Object, "Terminating", "status", "phase")
	}
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
