package catalog

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Typed is the Behavior of a built-in type, written against its Go struct from k8s.io/api.
// PT is the pointer type (*corev1.ConfigMap); every hook is optional.
type Typed[T any, PT interface {
	*T
	runtime.Object
}] struct {
	// OnCreate and OnUpdate are kube's PrepareForCreate and PrepareForUpdate strategy hooks.
	OnCreate func(obj PT)
	OnUpdate func(obj, old PT)
	// Defaults fills in server defaults, as the type's upstream defaults.go does.
	Defaults func(obj PT)
	// Validation checks the type-specific rules (object metadata is validated by the pipeline).
	Validation func(obj, old PT) field.ErrorList
	// Fields returns the type's selectable fields beyond metadata.name and metadata.namespace.
	Fields func(obj PT) fields.Set
}

// Normalize round-trips the object through the Go type: unknown fields are dropped and named,
// values of the wrong type are an error.
func (t Typed[T, PT]) Normalize(u *unstructured.Unstructured) ([]string, error) {
	obj := PT(new(T))
	unknown, err := DecodeStrict(u, obj)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u.Object = content
	return unknown, nil
}

// DecodeStrict decodes u into the Go object into as kube's strict JSON decoding does: fields
// into does not declare are named (`unknown field "spec.foo"`), wrong types are an error.
func DecodeStrict(u *unstructured.Unstructured, into any) (unknown []string, err error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	strictErrs, err := kjson.UnmarshalStrict(raw, into, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	for _, e := range strictErrs {
		unknown = append(unknown, e.Error())
	}
	return unknown, nil
}

// PrepareForCreate implements Behavior.
// DropNulls: decoding into the Go type has made a null a zero value already.
func (t Typed[T, PT]) DropNulls(*unstructured.Unstructured) {}

func (t Typed[T, PT]) PrepareForCreate(u *unstructured.Unstructured) {
	if t.OnCreate == nil {
		return
	}
	t.withTyped(u, func(obj PT) { t.OnCreate(obj) })
}

// PrepareForUpdate implements Behavior.
func (t Typed[T, PT]) PrepareForUpdate(u, old *unstructured.Unstructured) {
	if t.OnUpdate == nil {
		return
	}
	oldObj, err := toTyped[T, PT](old)
	if err != nil {
		return
	}
	t.withTyped(u, func(obj PT) { t.OnUpdate(obj, oldObj) })
}

// Default implements Behavior.
func (t Typed[T, PT]) Default(u *unstructured.Unstructured) {
	if t.Defaults == nil {
		return
	}
	t.withTyped(u, func(obj PT) { t.Defaults(obj) })
}

// Validate implements Behavior.
func (t Typed[T, PT]) Validate(u, old *unstructured.Unstructured) field.ErrorList {
	if t.Validation == nil {
		return nil
	}
	obj, err := toTyped[T, PT](u)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var oldObj PT
	if old != nil {
		if oldObj, err = toTyped[T, PT](old); err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
	}
	return t.Validation(obj, oldObj)
}

// SelectableFields implements Behavior.
func (t Typed[T, PT]) SelectableFields(u *unstructured.Unstructured) fields.Set {
	if t.Fields == nil {
		return nil
	}
	obj, err := toTyped[T, PT](u)
	if err != nil {
		return nil
	}
	return t.Fields(obj)
}

func (t Typed[T, PT]) withTyped(u *unstructured.Unstructured, f func(PT)) {
	obj, err := toTyped[T, PT](u)
	if err != nil {
		return // Normalize has already rejected objects that do not fit the type
	}
	f(obj)
	if content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
		u.Object = content
	}
}

func toTyped[T any, PT interface {
	*T
	runtime.Object
}](u *unstructured.Unstructured) (PT, error) {
	obj := PT(new(T))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("converting to %T: %w", obj, err)
	}
	return obj, nil
}
