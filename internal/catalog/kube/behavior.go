package kube

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// behavior is catalog.Behavior for one built-in type at one served version: every hook goes
// through the type's Go structs and kube's scheme, and create and update run kube's own
// rest.BeforeCreate and rest.BeforeUpdate with the type's registry strategies.
type behavior struct {
	t        *Type
	served   schema.GroupVersionKind
	internal schema.GroupVersionKind
}

var (
	_ catalog.Behavior      = (*behavior)(nil)
	_ catalog.TypedBehavior = (*behavior)(nil)
)

func newBehavior(t *Type) *behavior {
	gv := t.Resource.GroupVersion()
	return &behavior{
		t:        t,
		served:   gv.WithKind(t.Kind),
		internal: schema.GroupVersionKind{Group: t.internalGroup(), Version: runtime.APIVersionInternal, Kind: t.Kind},
	}
}

// Normalize decodes the object strictly into its Go type, as kube's JSON serializer does:
// unknown fields are named, values of the wrong type are an error.
func (b *behavior) Normalize(u *unstructured.Unstructured) ([]string, error) {
	obj, err := scheme().New(b.served)
	if err != nil {
		return nil, err
	}
	unknown, err := catalog.DecodeStrict(u, obj)
	if err != nil {
		return nil, err
	}
	return unknown, typedToUnstructured(u, obj, b.served)
}

// CheckFit is Normalize without rewriting u.
// DropNulls: decoding into the Go type makes a null a zero value.
func (b *behavior) DropNulls(*unstructured.Unstructured) {}

func (b *behavior) CheckFit(u *unstructured.Unstructured) ([]string, error) {
	obj, err := scheme().New(b.served)
	if err != nil {
		return nil, err
	}
	return catalog.DecodeStrict(u, obj)
}

// Default defaults the object and takes it through the internal version and back, as kube's
// decoding does before anything else sees a request's object (Secret stringData folds into
// data there, for instance).
func (b *behavior) Default(u *unstructured.Unstructured) { b.DefaultTyped(u) }

// DefaultTyped is Default that also returns the Go object at the served version that u's
// content is now made from (without managedFields), or nil. BeforeUpdateTyped takes it instead
// of converting u again.
func (b *behavior) DefaultTyped(u *unstructured.Unstructured) runtime.Object {
	managed, restore := setManagedFieldsAside(u)
	defer restore()
	internal, err := b.defaultedInternal(managed)
	if err != nil {
		return nil // Normalize has refused objects that do not fit the type
	}
	versioned, err := scheme().New(b.served)
	if err != nil {
		return nil
	}
	if err := scheme().Convert(internal, versioned, nil); err != nil {
		return nil
	}
	if err := typedToUnstructured(managed, versioned, b.served); err != nil {
		return nil
	}
	return versioned
}

// setManagedFieldsAside returns u's content without metadata.managedFields (a shallow copy; u
// is not changed) and a function that makes the copy's final content u's, with the managed
// fields put back. Defaulting and conversions never change managedFields, and converting them
// (nested maps here, raw JSON in a Go object, both ways) is most of the cost of converting an
// object several managers have written.
func setManagedFieldsAside(u *unstructured.Unstructured) (*unstructured.Unstructured, func()) {
	meta, _ := u.Object["metadata"].(map[string]any)
	managed, has := meta["managedFields"]
	if !has {
		return u, func() {}
	}
	without := &unstructured.Unstructured{Object: shallowWith(u.Object, "metadata", shallowWith(meta, "managedFields", nil))}
	return without, func() {
		u.Object = without.Object
		meta, ok := u.Object["metadata"].(map[string]any)
		if !ok {
			meta = map[string]any{}
			u.Object["metadata"] = meta
		}
		meta["managedFields"] = managed
	}
}

// shallowWith is a shallow copy of m with key set to value (removed when value is nil).
func shallowWith(m map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	if value != nil {
		out[key] = value
	}
	return out
}

// BeforeCreate runs kube's rest.BeforeCreate with the type's strategy.
func (b *behavior) BeforeCreate(ctx context.Context, u *unstructured.Unstructured) (_ []string, err error) {
	defer contain(&err)
	obj, err := b.toInternal(u)
	if err != nil {
		return nil, err
	}
	managed := managedFieldsOf(obj)
	var w catalog.Warnings
	ctx = requestContext(ctx, b.t, u.GetNamespace(), "", "create", &w)
	if err := b.checkWrite(ctx, obj, nil, ""); err != nil {
		return w, err
	}
	attrs := b.admission().Attributes(ctx, obj, nil, b.served, b.t.Resource, "", admission.Create, catalog.CreateOptions(ctx))
	if err := b.admission().Mutate(ctx, attrs); err != nil {
		return w, err
	}
	if err := rest.BeforeCreate(b.t.main, ctx, obj); err != nil {
		return w, err
	}
	if err := b.admission().Validate(ctx, attrs); err != nil {
		return w, err
	}
	_, err = b.fromInternalDefaulted(u, obj, managed)
	return w, err
}

// BeforeUpdate runs kube's rest.BeforeUpdate with the strategy of the endpoint written to.
func (b *behavior) BeforeUpdate(ctx context.Context, u, old *unstructured.Unstructured, subresource string) ([]string, error) {
	w, _, err := b.BeforeUpdateTyped(ctx, u, old, nil, nil, subresource)
	return w, err
}

// BeforeUpdateTyped is BeforeUpdate given Go objects at the served version that spare
// converting u and old: typed (from DefaultTyped, nil if none) has u's content but for its
// metadata, which is taken from u; oldTyped (nil if none) is old whole. Both become the
// behavior's. It returns the Go object u now is (nil if it has none), which is what old is in
// the next update of what this one writes.
func (b *behavior) BeforeUpdateTyped(ctx context.Context, u, old *unstructured.Unstructured, typed, oldTyped runtime.Object, subresource string) (_ []string, written runtime.Object, err error) {
	defer contain(&err)
	strategy := b.t.updateStrategy(subresource)
	if strategy == nil {
		return nil, nil, fmt.Errorf("%s has no %s strategy", b.t.Resource, subresource)
	}
	obj, err := b.internalOf(u, typed)
	if err != nil {
		return nil, nil, err
	}
	managed := managedFieldsOf(obj)
	var oldObj runtime.Object
	if oldTyped != nil {
		oldObj, err = b.convert(oldTyped, b.internal)
	} else {
		oldObj, err = b.toInternal(old)
	}
	if err != nil {
		return nil, nil, err
	}
	var w catalog.Warnings
	ctx = requestContext(ctx, b.t, u.GetNamespace(), subresource, "update", &w)
	if err := b.checkWrite(ctx, obj, oldObj, subresource); err != nil {
		return w, nil, err
	}
	attrs := b.admission().Attributes(ctx, obj, oldObj, b.served, b.t.Resource, subresource, admission.Update, catalog.UpdateOptions(ctx))
	if err := b.admission().Mutate(ctx, attrs); err != nil {
		return w, nil, err
	}
	if err := rest.BeforeUpdate(strategy, ctx, obj, oldObj); err != nil {
		return w, nil, err
	}
	if err := b.admission().Validate(ctx, attrs); err != nil {
		return w, nil, err
	}
	written, err = b.fromInternalDefaulted(u, obj, managed)
	return w, written, err
}

// internalOf is u at the internal version, converted from typed with u's metadata when given.
func (b *behavior) internalOf(u *unstructured.Unstructured, typed runtime.Object) (runtime.Object, error) {
	if typed == nil {
		return b.toInternal(u)
	}
	accessor, ok := typed.(metav1.ObjectMetaAccessor)
	if !ok {
		return b.toInternal(u)
	}
	objectMeta, ok := accessor.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return b.toInternal(u)
	}
	var m metav1.ObjectMeta
	if content, _ := u.Object["metadata"].(map[string]any); content != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, &m); err != nil {
			return nil, err
		}
	}
	*objectMeta = m
	typed.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
	return b.convert(typed, b.internal)
}

// convert converts a Go object of the type to the version of gvk.
func (b *behavior) convert(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	return convertTo(scheme(), obj, gvk)
}

// checkWrite asks Deps.CheckWrite about a write of the resource itself.
func (b *behavior) checkWrite(ctx context.Context, obj, old runtime.Object, subresource string) error {
	if b.t.checkWrite == nil || subresource != "" {
		return nil
	}
	return b.t.checkWrite(ctx, obj, old)
}

// AdmitDelete runs admission for a delete of u.
func (b *behavior) AdmitDelete(ctx context.Context, u *unstructured.Unstructured, options *metav1.DeleteOptions) (err error) {
	defer contain(&err)
	obj, err := b.toInternal(u)
	if err != nil {
		return err
	}
	var w catalog.Warnings
	ctx = requestContext(ctx, b.t, u.GetNamespace(), "", "delete", &w)
	return b.admission().AdmitDelete(ctx, obj, b.served, b.t.Resource, options)
}

// gracefulDelete is kube's rest.BeforeDelete for types deleted gracefully.
func (b *behavior) gracefulDelete(ctx context.Context, u *unstructured.Unstructured, grace *int64) (graceful, pending bool, err error) {
	defer contain(&err)
	strategy, ok := b.t.main.(rest.RESTDeleteStrategy)
	if !ok {
		return false, false, nil
	}
	obj, err := b.toInternal(u)
	if err != nil {
		return false, false, err
	}
	var w catalog.Warnings
	ctx = requestContext(ctx, b.t, u.GetNamespace(), "", "delete", &w)
	graceful, pending, err = rest.BeforeDelete(strategy, ctx, obj, &metav1.DeleteOptions{GracePeriodSeconds: grace})
	if err != nil || !graceful {
		return graceful, pending, err
	}
	return graceful, pending, b.fromInternal(u, obj)
}

// SelectableFields are kube's field-selector attributes of the object.
func (b *behavior) SelectableFields(u *unstructured.Unstructured) fields.Set {
	if b.t.attrs == nil {
		return nil
	}
	obj, err := b.toInternal(u)
	if err != nil {
		return nil
	}
	_, set, err := b.t.attrs(obj)
	if err != nil {
		return nil
	}
	return set
}

// toInternal converts served content to the internal version.
func (b *behavior) toInternal(u *unstructured.Unstructured) (runtime.Object, error) {
	return toInternal(scheme(), u, b.served, b.internal)
}

// defaultedInternal is toInternal with the served version's defaults applied first, as kube's
// decoding of a request's object applies them.
func (b *behavior) defaultedInternal(u *unstructured.Unstructured) (runtime.Object, error) {
	versioned, err := decodeAt(scheme(), u, b.served)
	if err != nil {
		return nil, err
	}
	scheme().Default(versioned)
	return convertTo(scheme(), versioned, b.internal)
}

// toInternal converts content served at from to the internal version.
func toInternal(scheme *runtime.Scheme, u *unstructured.Unstructured, from, internal schema.GroupVersionKind) (runtime.Object, error) {
	versioned, err := decodeAt(scheme, u, from)
	if err != nil {
		return nil, err
	}
	return convertTo(scheme, versioned, internal)
}

// decodeAt is u's content as the Go object of gvk.
func decodeAt(scheme *runtime.Scheme, u *unstructured.Unstructured, gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// convertTo converts a Go object of a type to the version of gvk.
func convertTo(scheme *runtime.Scheme, obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	out, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := scheme.Convert(obj, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// fromInternalDefaulted is fromInternal with the served version's defaults applied, as kube's
// reads apply them to what it stored: a status the strategy reset reads back defaulted (a
// PersistentVolumeClaim's phase Pending).
//
// managed are obj's managedFields as they came from u: when strategies and admission left them
// so, u's own are kept rather than converted back.
//
// It returns the Go object u now is, at the served version.
func (b *behavior) fromInternalDefaulted(u *unstructured.Unstructured, obj runtime.Object, managed []metav1.ManagedFieldsEntry) (runtime.Object, error) {
	versioned, err := b.convert(obj, b.served)
	if err != nil {
		return nil, err
	}
	scheme().Default(versioned)
	versioned.GetObjectKind().SetGroupVersionKind(b.served)
	accessor, err := meta.Accessor(versioned)
	original, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	if err != nil || !found || !apiequality.Semantic.DeepEqual(accessor.GetManagedFields(), managed) {
		return versioned, typedToUnstructured(u, versioned, b.served)
	}
	kept := accessor.GetManagedFields()
	accessor.SetManagedFields(nil)
	if err := typedToUnstructured(u, versioned, b.served); err != nil {
		return nil, err
	}
	accessor.SetManagedFields(kept)
	return versioned, unstructured.SetNestedField(u.Object, original, "metadata", "managedFields")
}

// managedFieldsOf is a copy of obj's managedFields.
func managedFieldsOf(obj runtime.Object) []metav1.ManagedFieldsEntry {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	var out []metav1.ManagedFieldsEntry
	for _, e := range accessor.GetManagedFields() {
		out = append(out, *e.DeepCopy())
	}
	return out
}

// fromInternal replaces u's content with obj at the served version.
func (b *behavior) fromInternal(u *unstructured.Unstructured, obj runtime.Object) error {
	out, err := fromInternal(scheme(), obj, b.served)
	if err != nil {
		return err
	}
	u.Object = out.Object
	return nil
}

func fromInternal(scheme *runtime.Scheme, obj runtime.Object, to schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	versioned, err := scheme.New(to)
	if err != nil {
		return nil, err
	}
	if err := scheme.Convert(obj, versioned, nil); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := typedToUnstructured(u, versioned, to); err != nil {
		return nil, err
	}
	return u, nil
}

func typedToUnstructured(u *unstructured.Unstructured, obj runtime.Object, gvk schema.GroupVersionKind) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u.Object = content
	u.SetGroupVersionKind(gvk)
	return nil
}

// convertVersion converts an object of a type between two of its versions through the internal
// version (kube's conversions); to's kind is the object's.
func convertVersion(scheme *runtime.Scheme, internalGroup string, u *unstructured.Unstructured, to schema.GroupVersion) (*unstructured.Unstructured, error) {
	from := u.GroupVersionKind()
	if from.GroupVersion() == to {
		return u.DeepCopy(), nil
	}
	internal := schema.GroupVersionKind{Group: internalGroup, Version: runtime.APIVersionInternal, Kind: from.Kind}
	obj, err := toInternal(scheme, u, from, internal)
	if err != nil {
		return nil, err
	}
	return fromInternal(scheme, obj, to.WithKind(from.Kind))
}

// contain turns a panic in kube's strategies or admission plugins into the request's error, so
// that one object cannot stop a controller or the server.
func contain(err *error) {
	if p := recover(); p != nil {
		*err = apierrors.NewInternalError(fmt.Errorf("handling the object: %v", p))
	}
}

// admission is the way of this type's writes through the chain; kube's plugins see objects at
// the internal version, typed by kube's scheme.
func (b *behavior) admission() catalog.Admission {
	objects := b.t.objects
	if objects == nil {
		objects = admission.NewObjectInterfacesFromScheme(scheme())
	}
	return catalog.Admission{Chain: b.t.admission, Objects: objects}
}
