package catalog

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
)

// Hooks are the steps of a type's strategy that lapis implements itself (custom resources and
// CustomResourceDefinitions, which apiextensions' libraries describe): the Behavior that
// Strategy makes of them adds kube's generic metadata checks.
type Hooks interface {
	Normalize(obj *unstructured.Unstructured) (unknownFields []string, err error)
	// DropNulls is Behavior's.
	DropNulls(obj *unstructured.Unstructured)
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
func Strategy(hooks Hooks, kind schema.GroupKind, namespaced bool, nameRule validation.ValidateNameFunc, options ...StrategyOption) Behavior {
	if nameRule == nil {
		nameRule = validation.NameIsDNSSubdomain
	}
	s := &hookStrategy{Hooks: hooks, kind: kind, namespaced: namespaced, nameRule: nameRule}
	for _, o := range options {
		o(s)
	}
	return s
}

// StrategyOption adds to what Strategy makes.
type StrategyOption func(*hookStrategy)

// Admitted sends the type's writes through admission (its plugins see the objects as they are,
// unstructured): custom resources are admitted as kube-apiserver admits them.
func Admitted(a Admission, resource schema.GroupVersionResource, kind schema.GroupVersionKind) StrategyOption {
	return func(s *hookStrategy) { s.admission, s.resource, s.served = a, resource, kind }
}

// ValidatesStatus validates writes through the status subresource with validate instead of the
// hooks' Validate (a custom resource's: kube checks its status against the status schema alone).
func ValidatesStatus(validate func(obj, old *unstructured.Unstructured) field.ErrorList) StrategyOption {
	return func(s *hookStrategy) { s.validateStatus = validate }
}

type hookStrategy struct {
	Hooks
	kind       schema.GroupKind
	namespaced bool
	nameRule   validation.ValidateNameFunc

	admission Admission
	resource  schema.GroupVersionResource
	served    schema.GroupVersionKind
	// validateStatus, when set, validates writes through the status subresource instead of
	// the hooks' Validate.
	validateStatus func(obj, old *unstructured.Unstructured) field.ErrorList
}

var _ Behavior = (*hookStrategy)(nil)

// CheckFit is Normalize of a copy of obj.
func (s *hookStrategy) CheckFit(obj *unstructured.Unstructured) ([]string, error) {
	return s.Normalize(obj.DeepCopy())
}

// AdmitDelete runs the admission chain the strategy was given (none: nothing to admit).
func (s *hookStrategy) AdmitDelete(ctx context.Context, obj *unstructured.Unstructured, options *metav1.DeleteOptions) error {
	return s.admission.AdmitDelete(ctx, obj, s.served, s.resource, options)
}

func (s *hookStrategy) BeforeCreate(ctx context.Context, obj *unstructured.Unstructured) ([]string, error) {
	var w Warnings // admission's (webhooks', policies')
	ctx = warning.WithWarningRecorder(ctx, &w)
	attrs := s.admission.Attributes(ctx, obj, nil, s.served, s.resource, "", admission.Create, CreateOptions(ctx))
	if err := s.admission.Mutate(ctx, attrs); err != nil {
		return w, err
	}
	s.PrepareForCreate(obj)
	errs := validation.ValidateObjectMetaAccessor(obj, s.namespaced, s.nameRule, field.NewPath("metadata"))
	errs = append(errs, s.Validate(obj, nil)...)
	if len(errs) > 0 {
		return w, apierrors.NewInvalid(s.kind, obj.GetName(), errs)
	}
	err := s.admission.Validate(ctx, attrs)
	return w, err
}

func (s *hookStrategy) BeforeUpdate(ctx context.Context, obj, old *unstructured.Unstructured, subresource string) ([]string, error) {
	var w Warnings
	ctx = warning.WithWarningRecorder(ctx, &w)
	attrs := s.admission.Attributes(ctx, obj, old, s.served, s.resource, subresource, admission.Update, UpdateOptions(ctx))
	if err := s.admission.Mutate(ctx, attrs); err != nil {
		return w, err
	}
	switch subresource {
	case "":
		s.PrepareForUpdate(obj, old)
	case "status":
		keepOnlyStatus(obj, old)
	}
	errs := validation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
	errs = append(errs, validation.ValidateObjectMetaAccessor(obj, s.namespaced, s.nameRule, field.NewPath("metadata"))...)
	errs = append(errs, finalizersWhileDeleting(obj, old)...)
	if s.validateStatus != nil && subresource == "status" {
		errs = append(errs, s.validateStatus(obj, old)...)
	} else {
		errs = append(errs, s.Validate(obj, old)...)
	}
	if len(errs) > 0 {
		return w, apierrors.NewInvalid(s.kind, obj.GetName(), errs)
	}
	err := s.admission.Validate(ctx, attrs)
	return w, err
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
