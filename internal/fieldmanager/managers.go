package fieldmanager

import (
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapply "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorapply "k8s.io/kube-aggregator/pkg/client/applyconfiguration"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/fieldmanager/conventions"
	"github.com/lapis-dev/lapis/internal/openapi"
)

// Managers hands out the FieldManager of each resource and subresource, building each once.
type Managers struct {
	builtinTypes    managedfields.TypeConverter
	extensionsTypes managedfields.TypeConverter
	aggregatorTypes managedfields.TypeConverter // apiregistration.k8s.io (APIServices)
	typed           *runtime.Scheme             // knows the Go types of built-in kinds

	mu    sync.Mutex
	cache map[key]*managedfields.FieldManager
	// lists holds the schemas of resources whose CRD opts into list conventions; their field
	// managers are made per request (For).
	lists map[*catalog.Resource]*listConventions
}

type key struct {
	resource    *catalog.Resource // a CRD change replaces its Resources, so stale entries are never hit
	subresource string
}

// NewManagers returns an empty cache.
func NewManagers() *Managers {
	extensions := runtime.NewScheme()
	_ = apiextensionsv1.AddToScheme(extensions)
	aggregator := runtime.NewScheme()
	_ = apiregistrationv1.AddToScheme(aggregator)
	typed := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(typed)
	_ = apiextensionsv1.AddToScheme(typed)
	_ = apiregistrationv1.AddToScheme(typed)
	return &Managers{
		builtinTypes:    applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
		extensionsTypes: apiextensionsapply.NewTypeConverter(extensions),
		aggregatorTypes: aggregatorapply.NewTypeConverter(aggregator),
		typed:           typed,
		cache:           map[key]*managedfields.FieldManager{},
		lists:           map[*catalog.Resource]*listConventions{},
	}
}

// Empty is what a create is compared with to find the fields it sets: the type's zero value,
// as kube-apiserver's field manager sees it (fields every new object has are nobody's).
func (m *Managers) Empty(r *catalog.Resource) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if !r.Unstructured {
		if obj, err := m.typed.New(r.GroupVersionKind()); err == nil {
			if content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
				u.Object = content
			}
		}
	}
	u.SetGroupVersionKind(r.GroupVersionKind())
	return u
}

var scaleKind = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// ForScale returns the FieldManager of r's scale subresource, which manages autoscaling/v1
// Scale objects.
func (m *Managers) ForScale(r *catalog.Resource) (*managedfields.FieldManager, error) {
	k := key{r, "scale"}
	m.mu.Lock()
	defer m.mu.Unlock()
	if fm, ok := m.cache[k]; ok {
		return fm, nil
	}
	// client-go's schema has no Scale (it is no top-level apply configuration): use the OpenAPI
	// definition, as kube-apiserver does.
	types, err := managedfields.NewTypeConverter(openapi.ScaleModels(), false)
	if err != nil {
		return nil, err
	}
	objects := unstructuredObjects{}
	fm, err := managedfields.NewDefaultFieldManager(types, objects, objects, objects, scaleKind, scaleKind.GroupVersion(), "scale", nil)
	if err != nil {
		return nil, err
	}
	m.cache[k] = fm
	return fm, nil
}

// For returns the FieldManager of r (subresource "" for the main resource, or "status").
//
// For a custom resource whose CRD opts into list conventions (conventions.Annotation), every
// call returns a new FieldManager, to be used for one request only: it decides which lists
// are list maps from the objects of that request's merges (see listConventions). Callers must
// not keep it for other requests.
func (m *Managers) For(r *catalog.Resource, subresource string) (*managedfields.FieldManager, error) {
	if r.CRD != nil && conventions.Enabled(r.CRD.Annotations) {
		return m.forConventions(r, subresource)
	}
	k := key{r, subresource}
	m.mu.Lock()
	defer m.mu.Unlock()
	if fm, ok := m.cache[k]; ok {
		return fm, nil
	}
	fm, err := m.build(r, subresource)
	if err != nil {
		return nil, err
	}
	m.cache[k] = fm
	return fm, nil
}

func (m *Managers) build(r *catalog.Resource, subresource string) (*managedfields.FieldManager, error) {
	gvk := r.GroupVersionKind()
	objects := unstructuredObjects{r: r, m: m}
	// Versions of a resource differ at most in apiVersion here, so the served version can be
	// the hub: merged objects come back at the version the request was made at.
	hub := r.GroupVersion
	reset := resetFields(r, subresource)
	if !r.Unstructured {
		return managedfields.NewDefaultFieldManager(m.builtinTypesOf(r), objects, objects, objects, gvk, hub, subresource, reset)
	}
	types, err := customTypes(r)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", r.GroupVersionResource(), err)
	}
	return managedfields.NewDefaultCRDFieldManager(types, objects, objects, objects, gvk, hub, subresource, reset)
}

// ForDefaulter is For with d defaulting the merges of server-side applies instead of the
// resource's Behavior, for built-in resources (a custom resource's FieldManager is For's). The
// FieldManager is made on each call, for one request (making one costs little: the schemas
// are shared).
func (m *Managers) ForDefaulter(r *catalog.Resource, subresource string, d runtime.ObjectDefaulter) (*managedfields.FieldManager, error) {
	if r.Unstructured {
		return m.For(r, subresource)
	}
	objects := unstructuredObjects{r: r, m: m}
	return managedfields.NewDefaultFieldManager(m.builtinTypesOf(r), objects, d, objects, r.GroupVersionKind(), r.GroupVersion, subresource, resetFields(r, subresource))
}

// forConventions builds a FieldManager with its own listSession over r's shared schemas.
func (m *Managers) forConventions(r *catalog.Resource, subresource string) (*managedfields.FieldManager, error) {
	m.mu.Lock()
	c, ok := m.lists[r]
	if !ok {
		var err error
		if c, err = newListConventions(r); err != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("schema of %s: %w", r.GroupVersionResource(), err)
		}
		m.lists[r] = c
	}
	m.mu.Unlock()
	s := newListSession(c)
	objects := sessionObjects{unstructuredObjects: unstructuredObjects{r: r, m: m}, s: s}
	gvk := r.GroupVersionKind()
	return managedfields.NewDefaultCRDFieldManager(sessionTypes{s}, objects, objects, objects, gvk, r.GroupVersion, subresource, resetFields(r, subresource))
}

// builtinTypesOf is the type converter of a built-in resource: client-go's schemas, or those of
// the apiextensions and kube-aggregator modules for their groups.
func (m *Managers) builtinTypesOf(r *catalog.Resource) managedfields.TypeConverter {
	switch r.GroupVersion.Group {
	case apiextensionsv1.GroupName:
		return m.extensionsTypes
	case apiregistrationv1.GroupName:
		return m.aggregatorTypes
	}
	return m.builtinTypes
}

// customTypes builds the type converter of a custom resource from its OpenAPI schema; without
// a schema every field is atomic.
func customTypes(r *catalog.Resource) (managedfields.TypeConverter, error) {
	v := r.CRDVersion
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return managedfields.NewDeducedTypeConverter(), nil
	}
	preserve := r.CRD.Spec.PreserveUnknownFields
	if s := v.Schema.OpenAPIV3Schema; s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		preserve = true
	}
	// Managed fields may have been recorded at any version of the CRD: the converter must know
	// them all, or their owners' entries are lost on conversion.
	return managedfields.NewTypeConverter(openapi.Models(crdVersions(r)), preserve)
}

// crdVersions is custom resource r at each version of its CRD.
func crdVersions(r *catalog.Resource) []*catalog.Resource {
	versions := make([]*catalog.Resource, 0, len(r.CRD.Spec.Versions))
	for i := range r.CRD.Spec.Versions {
		at := *r
		at.GroupVersion = schema.GroupVersion{Group: r.GroupVersion.Group, Version: r.CRD.Spec.Versions[i].Name}
		at.CRDVersion = &r.CRD.Spec.Versions[i]
		versions = append(versions, &at)
	}
	return versions
}

// CheckApplied is strict field validation of an applied configuration: the configuration must
// fit the resource's schema. The message is kube-apiserver's.
func (m *Managers) CheckApplied(r *catalog.Resource, config *unstructured.Unstructured) error {
	var types managedfields.TypeConverter
	if !r.Unstructured {
		types = m.builtinTypesOf(r)
	} else {
		var err error
		if types, err = customTypes(r); err != nil {
			return err
		}
	}
	if _, err := types.ObjectToTyped(config); err != nil {
		return fmt.Errorf("failed to create typed patch object (%s/%s; %s): %v", config.GetNamespace(), config.GetName(), config.GroupVersionKind(), err)
	}
	return nil
}

// resetFields are the fields an endpoint never sets, which kube-apiserver's strategies declare:
// the main endpoint of a resource with a status subresource leaves status alone, and the status
// subresource changes nothing but status.
func resetFields(r *catalog.Resource, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	if r.ResetFields != nil {
		if sets := r.ResetFields[subresource]; len(sets) > 0 {
			return fieldpath.NewExcludeFilterSetMap(sets)
		}
		return nil
	}
	if !r.HasStatus {
		return nil
	}
	var set *fieldpath.Set
	switch subresource {
	case "":
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case "status":
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(r.GroupVersion.String()): fieldpath.NewExcludeSetFilter(set),
	}
}

// unstructuredObjects is the creater, defaulter and converter the field manager needs, for the
// unstructured objects lapis handles. Versions of one resource differ only in apiVersion (CRD
// conversion strategy None) or convert through the resource's storage conversion.
type unstructuredObjects struct {
	r *catalog.Resource // nil for Scale objects
	m *Managers
}

// New returns the empty object of a kind, typed zero values included, as kube's scheme would.
func (o unstructuredObjects) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if o.r != nil {
		u = o.m.Empty(o.r)
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (o unstructuredObjects) Default(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok && o.r != nil && o.r.Behavior != nil {
		o.r.Behavior.Default(u)
	}
}

func (o unstructuredObjects) Convert(in, out, context any) error {
	return fmt.Errorf("conversion between %T and %T is not supported", in, out)
}

func (o unstructuredObjects) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	if gv, ok := target.(schema.GroupVersion); ok && gv == u.GroupVersionKind().GroupVersion() {
		// The field manager converts to the version it already has around every merge; it reads
		// what it is given and defaults only the merge it made, so no copy is needed.
		return u, nil
	}
	if gv, ok := target.(schema.GroupVersion); ok && o.r != nil && o.r.ConvertVersion != nil {
		// kube's conversions, across groups too: a core/v1 Event's managers may have written it
		// through events.k8s.io/v1.
		return o.r.ConvertVersion(u, gv)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("no version of %s in %v", u.GroupVersionKind(), target)
	}
	if o.r != nil && o.r.ConvertVersion != nil {
		return o.r.ConvertVersion(u, gvk.GroupVersion())
	}
	out := u.DeepCopy()
	out.SetAPIVersion(gvk.GroupVersion().String())
	return out, nil
}

func (o unstructuredObjects) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
