package catalog

import (
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Resource describes one resource served at one group/version.
type Resource struct {
	GroupVersion schema.GroupVersion
	// Name is the plural, lower-case resource name used in paths ("configmaps").
	Name       string
	Kind       string
	ListKind   string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string

	// StorageGroupResource names where objects live in storage; all versions of a resource share it.
	StorageGroupResource schema.GroupResource
	// StorageVersion is the version objects are stored at; empty means GroupVersion.
	StorageVersion schema.GroupVersion

	// ReturnDeletedObject makes DELETE answer with the deleted object rather than a Status
	// (kube does so for namespaces; custom resources answer with a Status, as other types).
	ReturnDeletedObject bool

	// HasStatus and Scale describe the subresources the resource serves.
	HasStatus bool
	Scale     *ScaleSubresource

	// RequireResourceVersionOnUpdate refuses updates (PUT) without a resourceVersion: kube's
	// strategies that do not AllowUnconditionalUpdate (custom resources, CRDs).
	RequireResourceVersionOnUpdate bool

	// SpecTracksGeneration is true when metadata.generation counts changes to anything other than
	// metadata and status (kube does this for every type with a spec).
	SpecTracksGeneration bool

	// Behavior normalizes, defaults and validates objects of this resource.
	Behavior Behavior

	// NameValidation validates metadata.name (and generateName, with prefix true). Nil means
	// a DNS subdomain, the rule most types use.
	NameValidation validation.ValidateNameFunc

	// Printer gives the Table columns kubectl shows (kube's printers for built-in types, a CRD's
	// additionalPrinterColumns). Nil means kube's default: Name and Created At.
	Printer *Printer

	// Conversion converts between this version and the version objects are stored in. Nil means
	// the two differ at most in apiVersion, which the pipeline rewrites.
	Conversion *Conversion

	// CRD is set for custom resources: the definition and the version served here.
	CRD        *apiextensionsv1.CustomResourceDefinition
	CRDVersion *apiextensionsv1.CustomResourceDefinitionVersion
}

// ScaleSubresource maps the scale subresource onto paths in the object (CRD-style JSON paths).
type ScaleSubresource struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string
}

// Printer describes a resource's Table representation.
type Printer struct {
	Columns []metav1.TableColumnDefinition
	// Cells returns one row's cells, one per column, for an object.
	Cells func(obj *unstructured.Unstructured) ([]any, error)
}

// Conversion converts objects between a served version and the storage version, in place.
type Conversion struct {
	ToStorage   func(obj *unstructured.Unstructured) error
	FromStorage func(obj *unstructured.Unstructured) error
}

// GroupVersionResource returns the resource's GVR.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Name)
}

// StorageAPIVersion is the apiVersion objects of this resource carry in storage.
func (r *Resource) StorageAPIVersion() string {
	if r.StorageVersion.Empty() {
		return r.GroupVersion.String()
	}
	return r.StorageVersion.String()
}

// GroupVersionKind returns the resource's GVK.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// Behavior is what the write pipeline asks of a resource's type. Objects are handled as
// unstructured content throughout the pipeline; typed behaviours convert where they need to.
type Behavior interface {
	// Normalize brings a decoded object into the type's canonical form: fields the type does not
	// declare are dropped and described (`unknown field "spec.foo"`, for fieldValidation), values
	// of the wrong type are an error naming the field.
	Normalize(obj *unstructured.Unstructured) (unknownFields []string, err error)
	// PrepareForCreate resets what a client may not set on create (kube's strategy hook of the
	// same name): for example a namespace's status and finalizers.
	PrepareForCreate(obj *unstructured.Unstructured)
	// PrepareForUpdate carries over from old what a client may not change through the main
	// endpoint (for example status, when the resource has a status subresource).
	PrepareForUpdate(obj, old *unstructured.Unstructured)
	// Default fills in the values the server defaults.
	Default(obj *unstructured.Unstructured)
	// Validate checks an object about to be created (old == nil) or updated.
	Validate(obj, old *unstructured.Unstructured) field.ErrorList
	// SelectableFields returns the fields a field selector can match on, beyond metadata.name and
	// metadata.namespace (which every resource has).
	SelectableFields(obj *unstructured.Unstructured) fields.Set
}
