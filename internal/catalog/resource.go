package catalog

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
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
	// OrphanByDefault: a delete without a propagation policy orphans the object's dependents
	// (kube's batch/v1 Jobs); otherwise they are deleted in the background.
	OrphanByDefault bool
	// GracefulDelete, for types kube deletes gracefully (Pods), is kube's rest.BeforeDelete: it
	// may mark obj with a deletionTimestamp and grace period (graceful: the marked object is
	// written first, and deleted now only when the period is 0) or find that a graceful
	// deletion is already under way (pending). grace is the request's gracePeriodSeconds.
	GracefulDelete func(ctx context.Context, obj *unstructured.Unstructured, grace *int64) (graceful, pending bool, err error)
	// BeforeDeleting changes an object that a delete is about to mark deleting, the first time
	// (kube's CRD REST adds its cleanup finalizer and the Terminating condition there).
	BeforeDeleting func(obj *unstructured.Unstructured) error
	// DeprecationWarning is the warning every request for this resource gets, when its kind is
	// deprecated at this version.
	DeprecationWarning string
	// DeleteWarning is a warning for deletes without a propagation policy.
	DeleteWarning string

	// HasStatus and Scale describe the status and scale subresources.
	HasStatus bool
	Scale     *ScaleSubresource

	// ResourceVerbs and Subresources, when set, are the verbs and subresources kube-apiserver
	// serves for a built-in type (its discovery data); otherwise they follow from the fields
	// above.
	ResourceVerbs []string
	Subresources  []Subresource

	// ResetFields are the fields each endpoint ("" or a subresource) never sets, as kube's
	// strategies declare them for field management; nil derives them from HasStatus.
	ResetFields map[string]map[fieldpath.APIVersion]*fieldpath.Set

	// RequireResourceVersionOnUpdate refuses updates (PUT) without a resourceVersion: kube's
	// strategies that do not AllowUnconditionalUpdate (custom resources, CRDs).
	RequireResourceVersionOnUpdate bool

	// CreateOnUpdate lets an update (PUT) of a missing object create it: kube's strategies
	// that AllowCreateOnUpdate (Services, Endpoints, Events, Leases, RBAC roles and bindings, ...).
	CreateOnUpdate bool

	// TTL is how long an object is kept after each create or update, as kube's registry
	// TTLFunc (Events: --event-ttl): stored with an etcd lease of that many seconds, etcd
	// deletes it, and watches see it deleted. 0 keeps objects until they are deleted.
	TTL time.Duration
	// WatchesFromStorage: kube-apiserver watches this resource in etcd, keeping no watch cache
	// of it (Events, by its default --watch-cache-sizes), so a watch from a revision older than
	// lapis's cache reads etcd's history where others get kube's 410.
	WatchesFromStorage bool

	// SpecTracksGeneration is true when metadata.generation counts changes to anything other than
	// metadata and status (kube does this for every type with a spec).
	SpecTracksGeneration bool

	// Virtual resources are not stored: handlers compute their answers (reviews, bindings,
	// component statuses). They have no Behavior.
	Virtual bool

	// Behavior normalizes, defaults and validates objects of this resource.
	Behavior Behavior
	// TypedBehavior, for catalog/kube's built-in types, is Behavior's way of handing the
	// type's Go objects along the write path; nil: the pipeline hands on unstructured content
	// only.
	TypedBehavior TypedBehavior
	// DefaultsOnRead says that reads default objects too, so that objects stored before a
	// default existed gain it (custom resources whose schema has defaults, as in kube).
	DefaultsOnRead bool
	// Allocator, when set, reserves what objects take from a shared pool (Services).
	Allocator Allocator

	// Printer gives the Table columns kubectl shows (kube's printers for built-in types, a CRD's
	// additionalPrinterColumns). Nil means kube's default: Name and Created At.
	Printer *Printer

	// Conversion converts between this version and the version objects are stored in. Nil means
	// the two differ at most in apiVersion, which the pipeline rewrites.
	Conversion *Conversion
	// FieldLabel checks a field selector's label and value and may rewrite them, as kube's
	// field-label conversion functions do; nil accepts the labels SelectableFields gives.
	FieldLabel func(label, value string) (string, string, error)
	// ConvertVersion converts an object of this type to any version of it (field management
	// needs the versions its managers wrote); nil means versions differ only in apiVersion.
	ConvertVersion func(obj *unstructured.Unstructured, to schema.GroupVersion) (*unstructured.Unstructured, error)

	// Unstructured: objects of this resource have no Go type, only a schema (custom
	// resources). kube-apiserver decodes, patches, lists, describes and tracks the fields of
	// them as unstructured content, where it decodes other objects into their Go types.
	Unstructured bool
	// ServedByAPIExtensions: kube-apiserver serves this resource through its apiextensions
	// handler and discovery controller (custom resources), whose answers differ in details
	// from the built-in routes': HEAD served as GET, POST to a name, 404 and 405 naming the
	// resource, no check of Accept, verbs in another order, status listed before scale.
	ServedByAPIExtensions bool

	// CRD is set for custom resources: the definition and the version served here. What
	// differs for custom resources is named by the fields above; CRD is for what needs the
	// definition itself.
	CRD        *apiextensionsv1.CustomResourceDefinition
	CRDVersion *apiextensionsv1.CustomResourceDefinitionVersion
}

// Subresource is one subresource of a built-in type as discovery describes it.
type Subresource struct {
	Name  string
	Kind  schema.GroupVersionKind
	Verbs []string
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
	// Metadata, when set, is the metadata a row's PartialObjectMetadata carries (kube prints
	// built-in objects at their internal version, whose metadata can differ); nil: the object's.
	Metadata func(obj *unstructured.Unstructured) (any, error)
	// Less, when set, orders a list's rows as kube's list printer does (FlowSchemas by
	// matching precedence); nil: the list's own order.
	Less func(a, b *unstructured.Unstructured) bool
	// Reads, when not nil, are all the fields Cells reads: paths of one or two keys from the
	// object's top (["spec"], ["metadata", "name"]), so that a Table of stored JSON decodes
	// only these. nil: Cells may read anything.
	Reads [][]string
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

// Deleting says the resource's definition is being deleted (a CRD with a deletionTimestamp):
// no new objects may be created.
func (r *Resource) Deleting() bool {
	return r.CRD != nil && r.CRD.DeletionTimestamp != nil
}

// Terminating says the resource's definition has the Terminating condition (its objects are
// being removed): discovery lists only the verbs that remove them.
func (r *Resource) Terminating() bool {
	if r.CRD == nil {
		return false
	}
	for _, c := range r.CRD.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
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
	// DropNulls drops what kube's decoding of a request body drops as no value: a custom
	// resource's nulls where its schema allows none. Bodies are decoded; a server-side apply's
	// merge is not (kube refuses its nulls in validation).
	DropNulls(obj *unstructured.Unstructured)
	// Default fills in the values the server defaults, as decoding a request does in kube.
	Default(obj *unstructured.Unstructured)
	// BeforeCreate is kube's rest.BeforeCreate for an object whose system metadata (uid,
	// creationTimestamp) is set: it resets what a client may not set, validates the object and
	// its metadata, and canonicalizes it. Its error is an API error (Invalid, usually); the
	// warnings are for the client.
	BeforeCreate(ctx context.Context, obj *unstructured.Unstructured) (warnings []string, err error)
	// BeforeUpdate is kube's rest.BeforeUpdate of obj over old through subresource ("" for the
	// resource itself, "status", ...): what a client may not change is carried over from old,
	// then the update is validated.
	BeforeUpdate(ctx context.Context, obj, old *unstructured.Unstructured, subresource string) (warnings []string, err error)
	// SelectableFields returns the fields a field selector can match on, beyond metadata.name and
	// metadata.namespace (which every resource has).
	SelectableFields(obj *unstructured.Unstructured) fields.Set
	// CheckFit says what Normalize would report about obj without changing it (a server-side
	// apply's configuration is checked, never stored as it is).
	CheckFit(obj *unstructured.Unstructured) (unknownFields []string, err error)
	// AdmitDelete runs admission for a delete of obj: kube-apiserver admits every delete of a
	// stored object.
	AdmitDelete(ctx context.Context, obj *unstructured.Unstructured, options *metav1.DeleteOptions) error
}

// TypedBehavior is the part of a built-in type's Behavior that takes and gives its Go objects
// along the write path, sparing conversions between the unstructured pipeline and the Go types,
// which are a large part of a write's CPU.
type TypedBehavior interface {
	// DefaultTyped is Default, returning the Go object u's content is now made from (nil if
	// none), metadata excepted.
	DefaultTyped(u *unstructured.Unstructured) runtime.Object
	// BeforeUpdateTyped is BeforeUpdate given typed, DefaultTyped's object for obj (its
	// metadata is taken from obj), and oldTyped, old's Go object whole; either may be nil and
	// both become the behavior's. It returns the Go object obj now is, or nil.
	BeforeUpdateTyped(ctx context.Context, obj, old *unstructured.Unstructured, typed, oldTyped runtime.Object, subresource string) ([]string, runtime.Object, error)
}

type dryRunKey struct{}

// WithDryRun marks a write as a dry run for the steps that must know (admission plugins).
func WithDryRun(ctx context.Context, dryRun bool) context.Context {
	return context.WithValue(ctx, dryRunKey{}, dryRun)
}

// IsDryRun reports whether the write in ctx is a dry run.
func IsDryRun(ctx context.Context) bool {
	v, _ := ctx.Value(dryRunKey{}).(bool)
	return v
}
