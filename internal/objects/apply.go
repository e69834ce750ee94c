package objects

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// ApplyOptions are a server-side apply request's parameters.
type ApplyOptions struct {
	WriteOptions
	Force bool
	// StrictDecodeError is, under fieldValidation=Strict, what decoding the configuration
	// strictly found (duplicate keys): kube-apiserver refuses with it once the merge succeeds.
	StrictDecodeError error
}

// Apply merges an applied configuration into the named object as opts.Manager, creating the
// object when it does not exist (server-side apply).
func (s *Service) Apply(ctx context.Context, r *catalog.Resource, namespace, name string, config *unstructured.Unstructured, opts ApplyOptions) (Result, error) {
	if !r.Namespaced {
		namespace = ""
	}
	err := checkAppliedConfig(r, namespace, name, config)
	if err != nil {
		return Result{}, err
	}
	// fieldValidation applies to the configuration as sent; Strict is the schema's own check.
	var warnings []string
	if opts.FieldValidation == "Strict" {
		if err := s.fields.CheckApplied(r, config); err != nil {
			return Result{}, apierrors.NewBadRequest(err.Error())
		}
	} else if warnings, err = s.checkFit(r, config, opts.WriteOptions); err != nil {
		return Result{}, err
	}
	wo := writePlan{WriteOptions: opts.WriteOptions}
	var fm *managedfields.FieldManager
	if tb, ok := typedOf(r); ok {
		// The merge's defaulting keeps its Go object for the strategies (typedWrite).
		wo.typed = &typedWrite{}
		fm, err = s.fields.ForDefaulter(r, opts.Subresource, defaulterFunc(func(obj runtime.Object) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				wo.typed.merged = tb.DefaultTyped(u)
			}
		}))
	} else {
		fm, err = s.fields.For(r, opts.Subresource)
	}
	if err != nil {
		return Result{}, apierrors.NewInternalError(err)
	}
	merge := func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if wo.typed != nil {
			wo.typed.merged = nil // a merge that changes nothing is not defaulted
		}
		merged, err := MergeApplied(fm, live, config.DeepCopy(), opts.Manager, opts.Force)
		if err == nil && opts.StrictDecodeError != nil {
			return nil, opts.StrictDecodeError
		}
		return merged, err
	}
	wo.fieldsTracked = true
	wo.mutationReads = true // kube's field manager reads the live object, never changes it
	if r.Unstructured {
		// Under Ignore unknown fields go unreported, so only Warn (nothing reported) and Strict
		// (checked against the schema) say the configuration is clean.
		wo.cleanMerge = len(warnings) == 0 && opts.FieldValidation != "Ignore"
	} else {
		// Warn and Ignore decoded the configuration into its Go type above (Strict checked it
		// against the schema only, which lets a fraction through where an integer belongs).
		wo.cleanMerge = opts.FieldValidation != "Strict"
	}
	wo.DecodeIssues = nil // reported above
	for {
		res, err := s.update(ctx, r, namespace, name, func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			merged, err := merge(live)
			if err != nil {
				return nil, err
			}
			merged.SetResourceVersion(config.GetResourceVersion())
			return merged, nil
		}, wo)
		if !apierrors.IsNotFound(err) || !isNotFoundOf(err, r, name) || (opts.Subresource != "" && !r.CreateOnUpdate) {
			// An apply creates the resource itself; through a subresource, only where kube's
			// strategy creates on update (a Service's status: its strategy is the Service's).
			res.Warnings = append(warnings, res.Warnings...)
			return res, err
		}
		// Nothing to merge into: the configuration creates the object.
		created, err := merge(s.fields.Empty(r))
		if err != nil {
			return Result{}, err
		}
		if err := CheckName(created, name); err != nil {
			return Result{}, err
		}
		if config.GetResourceVersion() != "" {
			return Result{}, apierrors.NewConflict(qualifiedResource(r), name, errors.New(registryConflictMessage))
		}
		res, err = s.create(ctx, r, namespace, created, wo)
		if apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			continue // created concurrently: merge into it
		}
		res.Warnings = append(warnings, res.Warnings...)
		return res, err
	}
}

// checkAppliedConfig enforces what kube-apiserver requires of an applied configuration.
func checkAppliedConfig(r *catalog.Resource, namespace, name string, config *unstructured.Unstructured) error {
	if config.GetManagedFields() != nil || hasField(config, "metadata", "managedFields") {
		return apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	// A configuration without a name applies to the object the URL names (the merge keeps the
	// object's name); it cannot create one (checkName, on the merge).
	if config.GetName() != "" && config.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", config.GetName(), name))
	}
	if r.Namespaced && config.GetNamespace() != "" && config.GetNamespace() != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if config.GetAPIVersion() == "" || config.GetKind() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", config.GroupVersionKind())) // kube's field manager's words
	}
	return nil
}

func hasField(u *unstructured.Unstructured, path ...string) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return found
}

// isNotFoundOf tells the object's own NotFound from other ones (such as its namespace's).
func isNotFoundOf(err error, r *catalog.Resource, name string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name && d.Kind == r.Name
}

// MergeApplied merges an applied configuration into live as manager. Conflicts come back as
// kube's 409; a configuration that does not fit the schema is a 400 naming the field.
func MergeApplied(fm *managedfields.FieldManager, live, config *unstructured.Unstructured, manager string, force bool) (*unstructured.Unstructured, error) {
	merged, err := fm.Apply(live, config, manager, force)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return merged.(*unstructured.Unstructured), nil
}

// canonicalMetadata says obj's metadata is as kube's ObjectMeta encodes it: no empty value,
// which the round trip through ObjectMeta that a custom resource's write makes would drop (an
// applied `labels: {}` is owned but not stored; a map whose last key an apply removed is null).
func canonicalMetadata(obj *unstructured.Unstructured) bool {
	meta, _ := obj.Object["metadata"].(map[string]any)
	for _, v := range meta {
		switch v := v.(type) {
		case nil:
			return false
		case string:
			if v == "" {
				return false
			}
		case map[string]any:
			if len(v) == 0 {
				return false
			}
		case []any:
			if len(v) == 0 {
				return false
			}
		}
	}
	return true
}
