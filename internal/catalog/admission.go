package catalog

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Admission is a write's way through the admission chain, as kube-apiserver's handlers take it:
// mutating plugins before the type's strategy, validating plugins after its validation.
type Admission struct {
	// Chain is the process's admission chain; nil (or a chain not built yet) admits everything.
	Chain func() admission.Interface
	// Objects is how plugins create, convert and type the objects they see.
	Objects admission.ObjectInterfaces
}

// serverUser is who lapis's own writes (its controllers') are made as: kube-apiserver's
// loopback identity.
var serverUser user.Info = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}

// Attributes describe a write of obj (over old, nil on create) to the chain.
func (a Admission) Attributes(ctx context.Context, obj, old runtime.Object, kind schema.GroupVersionKind, resource schema.GroupVersionResource, subresource string, op admission.Operation, options runtime.Object) admission.Attributes {
	m, _ := meta.Accessor(obj)
	userInfo, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		userInfo = serverUser
	}
	return admission.NewAttributesRecord(obj, old, kind, m.GetNamespace(), m.GetName(), resource, subresource,
		op, options, IsDryRun(ctx), userInfo)
}

// AdmitDelete runs the chain for a delete of old, as kube-apiserver's delete handler does:
// mutating plugins see the request without an object, validating plugins the object as it is.
func (a Admission) AdmitDelete(ctx context.Context, old runtime.Object, kind schema.GroupVersionKind, resource schema.GroupVersionResource, options *metav1.DeleteOptions) error {
	m, err := meta.Accessor(old)
	if err != nil {
		return err
	}
	userInfo, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		userInfo = serverUser
	}
	attrs := func(old runtime.Object) admission.Attributes {
		return admission.NewAttributesRecord(nil, old, kind, m.GetNamespace(), m.GetName(), resource, "",
			admission.Delete, options, IsDryRun(ctx), userInfo)
	}
	if err := a.Mutate(ctx, attrs(nil)); err != nil {
		return err
	}
	return a.Validate(ctx, attrs(old))
}

// chain is the admission chain, nil when there is none.
func (a Admission) chain() admission.Interface {
	if a.Chain == nil {
		return nil
	}
	return a.Chain()
}

// Mutate runs the chain's mutating plugins.
func (a Admission) Mutate(ctx context.Context, attrs admission.Attributes) error {
	if m, ok := a.chain().(admission.MutationInterface); ok && m.Handles(attrs.GetOperation()) {
		return m.Admit(ctx, attrs, a.Objects)
	}
	return nil
}

// Validate runs the chain's validating plugins.
func (a Admission) Validate(ctx context.Context, attrs admission.Attributes) error {
	if v, ok := a.chain().(admission.ValidationInterface); ok && v.Handles(attrs.GetOperation()) {
		return v.Validate(ctx, attrs, a.Objects)
	}
	return nil
}

// UnstructuredObjects are the ObjectInterfaces of types handled unstructured (custom resources,
// whose versions differ only in apiVersion): what admission plugins create, type and convert.
var UnstructuredObjects admission.ObjectInterfaces = unstructuredObjects{}

type unstructuredObjects struct{}

func (unstructuredObjects) GetObjectCreater() runtime.ObjectCreater {
	return unstructuredscheme.NewUnstructuredCreator()
}
func (unstructuredObjects) GetObjectTyper() runtime.ObjectTyper {
	return unstructuredscheme.NewUnstructuredObjectTyper()
}
func (unstructuredObjects) GetObjectDefaulter() runtime.ObjectDefaulter { return noDefaults{} }
func (unstructuredObjects) GetObjectConvertor() runtime.ObjectConvertor { return apiVersionConvertor{} }
func (unstructuredObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return runtime.NewEquivalentResourceRegistry()
}

type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// apiVersionConvertor converts unstructured objects between versions by their apiVersion.
type apiVersionConvertor struct{}

// Convert converts between versions of a custom resource, as apiextensions' converter does
// for admission's version conversions (a webhook registered for another version).
func (c apiVersionConvertor) Convert(in, out, _ any) error {
	uin, ok := in.(*unstructured.Unstructured)
	uout, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("converting %T to %T is not supported", in, out)
	}
	converted, err := c.ConvertToVersion(uin, uout.GroupVersionKind().GroupVersion())
	if err != nil {
		return err
	}
	uout.SetUnstructuredContent(converted.(*unstructured.Unstructured).UnstructuredContent())
	return nil
}

func (apiVersionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("converting %T is not supported", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("no version of %s in %v", u.GroupVersionKind(), target)
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(gvk)
	return out, nil
}

func (apiVersionConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// Warnings records the warnings kube's code gives during one write (a warning.Recorder, put in
// the write's context with warning.WithWarningRecorder), each text once.
type Warnings []string

// AddWarning implements warning.Recorder.
func (w *Warnings) AddWarning(_, text string) {
	if !slices.Contains(*w, text) {
		*w = append(*w, text)
	}
}

type optionsKey struct{}

// writeOptions are a write request's options as admission sees them.
type writeOptions struct {
	create *metav1.CreateOptions
	update *metav1.UpdateOptions
}

// WithRequestOptions records a write request's dry-run, field manager and field validation
// options for admission (AdmissionReview's request.options), as kube-apiserver passes them: a
// create's and an update's own, a patch's as both (kube's patchToCreateOptions and
// patchToUpdateOptions).
func WithRequestOptions(ctx context.Context, dryRun []string, fieldManager, fieldValidation string) context.Context {
	return context.WithValue(ctx, optionsKey{}, writeOptions{
		create: &metav1.CreateOptions{DryRun: dryRun, FieldManager: fieldManager, FieldValidation: fieldValidation},
		update: &metav1.UpdateOptions{DryRun: dryRun, FieldManager: fieldManager, FieldValidation: fieldValidation},
	})
}

// CreateOptions are the options admission sees for a create in ctx.
func CreateOptions(ctx context.Context) *metav1.CreateOptions {
	o := &metav1.CreateOptions{}
	if w, ok := ctx.Value(optionsKey{}).(writeOptions); ok {
		o = w.create.DeepCopy()
	}
	o.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))
	return o
}

// UpdateOptions are the options admission sees for an update in ctx.
func UpdateOptions(ctx context.Context) *metav1.UpdateOptions {
	o := &metav1.UpdateOptions{}
	if w, ok := ctx.Value(optionsKey{}).(writeOptions); ok {
		o = w.update.DeepCopy()
	}
	o.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("UpdateOptions"))
	return o
}
