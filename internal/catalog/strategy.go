package catalog

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Hooks are the steps of a type's strategy that lapis implements itself (custom resources and
// CustomResourceDefinitions, which apiextensions' libraries describe): the Behavior that
// Strategy makes of them adds kube's generic metadata checks.
type Hooks interface {
	Normalize(obj *unstructured.Unstructured) (unknownFields []string, err error)
	Default(obj *unstructured.Unstructured)
	// PrepareForCreate and PrepareForUpdate are kube's strategy hooks of the same names.
	PrepareForCreate(obj *unstructured.Unstructured)
	PrepareForUpdate(obj, old *unstructured.Unstructured)
	// Validate checks the type's own rules for a create (old == nil) or an update.
	Validate(obj, old *unstructured.Unstructured) field.ErrorList
	SelectableFields(obj *unstructured.Unstructured) fields.Set
}

// Strategy makes a Behavior of hooks for a type of kind, validating metadata as kube's generic
// checks do (names with nameRule; nil is a DNS subdomain, the rule most types use).
func Strategy(hooks Hooks, kind schema.GroupKind, namespaced bool, nameRule validation.ValidateNameFunc) Behavior {
	if nameRule == nil {
		nameRule = validation.NameIsDNSSubdomain
	}
	return &hookStrategy{Hooks: hooks, kind: kind, namespaced: namespaced, nameRule: nameRule}
}

type hookStrategy struct {
	Hooks
	kind       schema.GroupKind
	namespaced bool
	nameRule   validation.ValidateNameFunc
}

// DefaultsOnRead forwards the hooks' answer (see objects: reads may default).
func (s *hookStrategy) DefaultsOnRead() bool {
	d, ok := s.Hooks.(interface{ DefaultsOnRead() bool })
	return ok && d.DefaultsOnRead()
}

func (s *hookStrategy) BeforeCreate(_ context.Context, obj *unstructured.Unstructured) ([]string, error) {
	s.PrepareForCreate(obj)
	errs := validation.ValidateObjectMetaAccessor(obj, s.namespaced, s.nameRule, field.NewPath("metadata"))
	errs = append(errs, s.Validate(obj, nil)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(s.kind, obj.GetName(), errs)
	}
	return nil, nil
}

func (s *hookStrategy) BeforeUpdate(_ context.Context, obj, old *unstructured.Unstructured, subresource string) ([]string, error) {
	switch subresource {
	case "":
		s.PrepareForUpdate(obj, old)
	case "status":
		keepOnlyStatus(obj, old)
	}
	errs := validation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
	errs = append(errs, validation.ValidateObjectMetaAccessor(obj, s.namespaced, s.nameRule, field.NewPath("metadata"))...)
	errs = append(errs, finalizersWhileDeleting(obj, old)...)
	errs = append(errs, s.Validate(obj, old)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(s.kind, obj.GetName(), errs)
	}
	return nil, nil
}

func finalizersWhileDeleting(obj, old *unstructured.Unstructured) field.ErrorList {
	if old.GetDeletionTimestamp() == nil {
		return nil
	}
	had := map[string]bool{}
	for _, f := range old.GetFinalizers() {
		had[f] = true
	}
	var errs field.ErrorList
	for _, f := range obj.GetFinalizers() {
		if !had[f] {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"),
				fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", []string{f})))
		}
	}
	return errs
}

// keepOnlyStatus is the status subresource's PrepareForUpdate for custom resources and CRDs
// (apiextensions' status strategy): the stored object with the new status; managedFields stay
// as field tracking recorded them.
func keepOnlyStatus(obj, old *unstructured.Unstructured) {
	status, hasStatus := obj.Object["status"]
	next := old.DeepCopy()
	delete(next.Object, "status")
	if hasStatus {
		next.Object["status"] = status
	}
	next.SetResourceVersion(obj.GetResourceVersion())
	next.SetManagedFields(obj.GetManagedFields())
	*obj = *next
}
