package kube

import (
	"bytes"
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
)

// Type is one built-in resource as kube-apiserver serves it at one version.
type Type struct {
	Resource schema.GroupVersionResource
	Kind     string
	// StorageVersion is the version kube stores objects at.
	StorageVersion schema.GroupVersion
	Strategy       rest.RESTCreateUpdateStrategy
	// StatusStrategy is the /status subresource's; nil when there is none.
	StatusStrategy rest.RESTUpdateStrategy
	// Attrs gives the fields a field selector matches (the strategy package's GetAttrs); nil
	// means metadata.name and metadata.namespace only.
	Attrs func(runtime.Object) (labels.Set, fields.Set, error)
}

// Pipeline runs kube's semantics; one per process (it holds kube's Table generator).
type Pipeline struct {
	json   runtime.Serializer
	tables *printers.HumanReadableGenerator
}

// NewPipeline returns a Pipeline over kube's legacyscheme.
func NewPipeline() *Pipeline {
	info, _ := runtime.SerializerInfoForMediaType(legacyscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return &Pipeline{json: info.Serializer, tables: printers.NewTableGenerator().With(printersinternal.AddHandlers)}
}

// Result is what a write stores and answers.
type Result struct {
	// Stored is the object at the storage version; Served at the version of the request.
	Stored, Served []byte
	Warnings       []string
}

// warnings collects what strategies report, as kube's warning recorder does.
type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

// requestContext carries what kube's strategies read: the namespace, a RequestInfo
// (declarative validation needs it) and a warning recorder.
func requestContext(ctx context.Context, t *Type, namespace, subresource, verb string, w *warnings) context.Context {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: t.Resource.Group, APIVersion: t.Resource.Version,
		Namespace: namespace, Resource: t.Resource.Resource, Subresource: subresource,
	})
	return warning.WithWarningRecorder(ctx, w)
}

// decode reads JSON at version gv into the internal version, defaulted, as kube's handlers do.
func (p *Pipeline) decode(t *Type, gv schema.GroupVersion, body []byte) (runtime.Object, error) {
	internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
	kind := gv.WithKind(t.Kind)
	obj, _, err := legacyscheme.Codecs.DecoderToVersion(p.json, internal).Decode(body, &kind, nil)
	return obj, err
}

func (p *Pipeline) encode(obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	var buf bytes.Buffer
	err := legacyscheme.Codecs.EncoderForVersion(p.json, gv).Encode(obj, &buf)
	return buf.Bytes(), err
}

// Create runs kube-apiserver's create sequence on a request body: decode (default, convert),
// system fields, rest.BeforeCreate (PrepareForCreate, validation, warnings, Canonicalize); then
// encode at the storage version and answer what storage gives back, as kube's etcd store does.
// Errors are kube's API errors.
func (p *Pipeline) Create(ctx context.Context, t *Type, namespace string, body []byte) (Result, error) {
	obj, err := p.decode(t, t.Resource.GroupVersion(), body)
	if err != nil {
		return Result{}, err
	}
	var w warnings
	ctx = requestContext(ctx, t, namespace, "", "create", &w)
	m, err := meta.Accessor(obj)
	if err != nil {
		return Result{}, err
	}
	rest.FillObjectMetaSystemFields(m)
	if m.GetGenerateName() != "" && m.GetName() == "" {
		m.SetName(t.Strategy.GenerateName(m.GetGenerateName()))
	}
	if err := rest.BeforeCreate(t.Strategy, ctx, obj); err != nil {
		return Result{Warnings: w}, err
	}
	return p.finish(t, obj, w)
}

// Update runs kube-apiserver's update sequence of body over the stored object old, through the
// resource itself or (status) its /status subresource.
func (p *Pipeline) Update(ctx context.Context, t *Type, namespace string, old, body []byte, status bool) (Result, error) {
	oldObj, err := p.decode(t, t.StorageVersion, old)
	if err != nil {
		return Result{}, err
	}
	obj, err := p.decode(t, t.Resource.GroupVersion(), body)
	if err != nil {
		return Result{}, err
	}
	var strategy rest.RESTUpdateStrategy = t.Strategy
	subresource := ""
	if status {
		strategy, subresource = t.StatusStrategy, "status"
	}
	var w warnings
	ctx = requestContext(ctx, t, namespace, subresource, "update", &w)
	m, err := meta.Accessor(obj)
	if err != nil {
		return Result{}, err
	}
	oldMeta, _ := meta.Accessor(oldObj)
	// kube's store: an update without a resourceVersion applies to what it read, where the
	// strategy allows unconditional updates.
	if m.GetResourceVersion() == "" && strategy.AllowUnconditionalUpdate(ctx) {
		m.SetResourceVersion(oldMeta.GetResourceVersion())
	}
	if err := rest.BeforeUpdate(strategy, ctx, obj, oldObj); err != nil {
		return Result{Warnings: w}, err
	}
	return p.finish(t, obj, w)
}

// finish encodes obj at the storage version and answers with what a read of it gives.
func (p *Pipeline) finish(t *Type, obj runtime.Object, w warnings) (Result, error) {
	stored, err := p.encode(obj, t.StorageVersion)
	if err != nil {
		return Result{}, err
	}
	served, err := p.Read(t, stored)
	return Result{Stored: stored, Served: served, Warnings: w}, err
}

// Read answers a stored object at the served version: decoded, defaulted, converted.
func (p *Pipeline) Read(t *Type, stored []byte) ([]byte, error) {
	obj, err := p.decode(t, t.StorageVersion, stored)
	if err != nil {
		return nil, err
	}
	return p.encode(obj, t.Resource.GroupVersion())
}

// Table is kube's Table of one stored object; rows carry its PartialObjectMetadata, kube's
// default includeObject=Metadata.
func (p *Pipeline) Table(t *Type, stored []byte) (*metav1.Table, error) {
	obj, err := p.decode(t, t.StorageVersion, stored)
	if err != nil {
		return nil, err
	}
	table, err := p.tables.GenerateTable(obj, printers.GenerateOptions{Wide: true})
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	for i := range table.Rows {
		partial := meta.AsPartialObjectMetadata(m)
		partial.APIVersion, partial.Kind = "meta.k8s.io/v1", "PartialObjectMetadata"
		table.Rows[i].Object = runtime.RawExtension{Object: partial}
	}
	table.ResourceVersion = m.GetResourceVersion()
	return table, nil
}

// Fields are the fields a field selector matches on the stored object.
func (p *Pipeline) Fields(t *Type, stored []byte) (fields.Set, error) {
	obj, err := p.decode(t, t.StorageVersion, stored)
	if err != nil {
		return nil, err
	}
	if t.Attrs != nil {
		_, set, err := t.Attrs(obj)
		return set, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	set := fields.Set{"metadata.name": m.GetName()}
	if m.GetNamespace() != "" {
		set["metadata.namespace"] = m.GetNamespace()
	}
	return set, nil
}

// FieldLabel checks a field selector's label and value as kube does (its conversion functions
// name the labels each kind accepts, with kube's errors).
func FieldLabel(t *Type, label, value string) (string, string, error) {
	return legacyscheme.Scheme.ConvertFieldLabel(t.Resource.GroupVersion().WithKind(t.Kind), label, value)
}
