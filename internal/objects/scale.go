package objects

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// The scale subresource presents part of an object as an autoscaling/v1 Scale: spec.replicas
// maps to the resource's spec replicas path, status.replicas and status.selector come from its
// status paths. Writes to the Scale change only the replicas, and managedFields move between
// the two representations with managedfields.ScaleHandler, as in kube-apiserver.

// ScaleMutation computes the desired Scale from the current one.
type ScaleMutation func(current *unstructured.Unstructured, fm *managedfields.FieldManager) (*unstructured.Unstructured, error)

// GetScale returns the object's Scale.
func (s *Service) GetScale(ctx context.Context, r *catalog.Resource, namespace, name string) (*unstructured.Unstructured, error) {
	obj, err := s.Get(ctx, r, namespacedOrNot(r, namespace), name)
	if err != nil {
		return nil, err
	}
	return scaleOf(r, obj)
}

func namespacedOrNot(r *catalog.Resource, namespace string) string {
	if r.Namespaced {
		return namespace
	}
	return ""
}

// ScaleFields says whether UpdateScale still has to record the write in managedFields.
type ScaleFields bool

const (
	// RecordScaleFields: an update's and a patch's fields are recorded as they are written.
	RecordScaleFields ScaleFields = true
	// ScaleFieldsMerged: an apply's merge has recorded them already.
	ScaleFieldsMerged ScaleFields = false
)

// UpdateScale changes the object's replicas through its Scale. mutate gets the Scale with the
// managedFields that concern it; fields says whether the write still has to be recorded in them.
func (s *Service) UpdateScale(ctx context.Context, r *catalog.Resource, namespace, name string, mutate ScaleMutation, fields ScaleFields, opts WriteOptions) (Result, error) {
	fm, err := s.fields.ForScale(r)
	if err != nil {
		return Result{}, apierrors.NewInternalError(err)
	}
	wo := writePlan{WriteOptions: opts, fieldsTracked: true}
	wo.Subresource = ""
	res, err := s.update(ctx, r, namespace, name, func(parent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		handler := managedfields.NewScaleHandler(parent.GetManagedFields(), r.GroupVersion, replicasPaths(r))
		current, err := scaleOf(r, parent)
		if err != nil {
			return nil, err
		}
		entries, err := handler.ToSubresource()
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		current.SetManagedFields(entries)
		next, err := mutate(current.DeepCopy(), fm)
		if err != nil {
			return nil, err
		}
		if fields == RecordScaleFields {
			next = fm.UpdateNoErrors(current, next, opts.Manager).(*unstructured.Unstructured)
		}
		replicas, found, err := unstructured.NestedInt64(next.Object, "spec", "replicas")
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.replicas: %v", err))
		}
		if found && replicas < 0 {
			return nil, apierrors.NewInvalid(scaleKind, name, field.ErrorList{
				field.Invalid(field.NewPath("spec", "replicas"), replicas, "must be greater than or equal to 0")})
		}
		if err := unstructured.SetNestedField(parent.Object, replicas, pathOf(r.Scale.SpecReplicasPath)...); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		parentEntries, err := handler.ToParent(next.GetManagedFields())
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		parent.SetManagedFields(parentEntries)
		parent.SetResourceVersion(next.GetResourceVersion())
		return parent, nil
	}, wo)
	if err != nil {
		return Result{}, err
	}
	out, err := scaleOf(r, res.Object)
	if err != nil {
		return Result{}, err
	}
	// kube-apiserver answers a Scale without managedFields, built-in and custom resources alike
	// (checked against kube 1.37).
	return Result{Object: out, Warnings: res.Warnings}, nil
}

var scaleKind = schema.GroupKind{Group: "autoscaling", Kind: "Scale"}

// scaleOf presents obj as an autoscaling/v1 Scale.
func scaleOf(r *catalog.Resource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	sc := r.Scale
	scale := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale"}}
	scale.SetName(obj.GetName())
	scale.SetNamespace(obj.GetNamespace())
	scale.SetUID(obj.GetUID())
	scale.SetResourceVersion(obj.GetResourceVersion())
	scale.SetCreationTimestamp(obj.GetCreationTimestamp())
	spec := map[string]any{}
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, pathOf(sc.SpecReplicasPath)...); found {
		spec["replicas"] = v
	}
	status := map[string]any{"replicas": int64(0)}
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, pathOf(sc.StatusReplicasPath)...); found {
		status["replicas"] = v
	}
	if sc.LabelSelectorPath != "" {
		if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, pathOf(sc.LabelSelectorPath)...); found {
			if sel, ok := selectorString(v); ok {
				status["selector"] = sel
			}
		}
	}
	scale.Object["spec"], scale.Object["status"] = spec, status
	return scale, nil
}

// pathOf splits a CRD scale path (".spec.replicas") into its fields.
func pathOf(jsonPath string) []string {
	return strings.Split(strings.TrimPrefix(jsonPath, "."), ".")
}

func replicasPaths(r *catalog.Resource) managedfields.ResourcePathMappings {
	p := pathOf(r.Scale.SpecReplicasPath)
	elems := make([]any, len(p))
	for i, f := range p {
		elems[i] = f
	}
	path := fieldpath.MakePathOrDie(elems...)
	mappings := managedfields.ResourcePathMappings{r.GroupVersion.String(): path}
	if r.CRD != nil {
		for _, v := range r.CRD.Spec.Versions {
			mappings[r.GroupVersion.Group+"/"+v.Name] = path
		}
	}
	return mappings
}

// selectorString is a label selector as a Scale shows it: a CRD's string as it is; a built-in
// type's spec.selector (a LabelSelector, or a ReplicationController's map) formatted as kube's
// scale subresources format it.
func selectorString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case map[string]any:
		_, hasLabels := v["matchLabels"]
		_, hasExpressions := v["matchExpressions"]
		if hasLabels || hasExpressions || len(v) == 0 {
			var ls metav1.LabelSelector
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v, &ls); err != nil {
				return "", false
			}
			sel, err := metav1.LabelSelectorAsSelector(&ls)
			if err != nil {
				return "", false
			}
			return sel.String(), true
		}
		set := labels.Set{}
		for k, val := range v {
			s, ok := val.(string)
			if !ok {
				return "", false
			}
			set[k] = s
		}
		return labels.SelectorFromSet(set).String(), true
	}
	return "", false
}
