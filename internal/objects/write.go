package objects

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
)

// WriteOptions are what a write request asked: its query parameters and the facts of its
// body. What the pipeline decides about a write on its way is writePlan's.
type WriteOptions struct {
	DryRun bool
	// FieldValidation is Strict, Warn or Ignore; empty means Warn, kube-apiserver's default.
	FieldValidation string
	// DecodeIssues are problems found while decoding the request body (duplicate fields).
	DecodeIssues []string
	// PatchValue is, for a patch, what kube-apiserver names as the invalid "patch" when the
	// patched object does not decode or fails strict field validation (computed only then).
	PatchValue func() string
	// AuthorizeCreate, when set, must allow a create before it is stored: a write that creates
	// what did not exist (server-side apply) is authorized as a create too, where kube-apiserver
	// asks, after the object's validation.
	AuthorizeCreate func(ctx context.Context) error
	// Manager is the field manager recorded in managedFields for this write.
	Manager string
	// Subresource is "status" for writes through the status subresource, "finalize" for a
	// namespace's finalize subresource (the mutation alone decides what changes).
	Subresource string
}

// writePlan is a write as the pipeline carries it through its steps: what the request asked,
// and what the pipeline decided on the way (no request can ask for these).
type writePlan struct {
	WriteOptions
	// fieldsTracked is set by Apply, whose merge has already recorded managedFields.
	fieldsTracked bool
	// typed carries the request's Go objects between the steps of an update (nil: none).
	typed *typedWrite
	// mutationReads says the mutation leaves the object it is given as it is (an apply's merge
	// makes a new one), so it needs no copy.
	mutationReads bool
	// cleanMerge is set by Apply when the merge it hands over needs no decoding again: a custom
	// resource's configuration fit its schema; a built-in object's decoded into its Go type, and
	// the field manager's merge of it has been defaulted through that type.
	cleanMerge bool
	// direct writes the mutation's result as it is (UpdateDirect).
	direct bool
}

// Result is the outcome of a write.
type Result struct {
	Object *unstructured.Unstructured
	// Raw is Object's JSON, when the write had it at hand (the stored bytes): responses need
	// not encode the object again. Nil otherwise.
	Raw      []byte
	Warnings []string
	// Created is true when the write created the object.
	Created bool
}

// maxGenerateNameAttempts matches kube-apiserver, which retries a generated name that collides.
const maxGenerateNameAttempts = 8

// defaulted says the object written is a server-side apply's merge of a built-in object, which
// the field manager has defaulted.
func (o writePlan) defaulted(r *catalog.Resource) bool { return o.cleanMerge && !r.Unstructured }

// Create stores a new object in namespace (ignored for cluster-scoped resources).
func (s *Service) Create(ctx context.Context, r *catalog.Resource, namespace string, obj *unstructured.Unstructured, opts WriteOptions) (Result, error) {
	return s.create(ctx, r, namespace, obj, writePlan{WriteOptions: opts})
}

func (s *Service) create(ctx context.Context, r *catalog.Resource, namespace string, obj *unstructured.Unstructured, opts writePlan) (Result, error) {
	if r.Deleting() {
		return Result{}, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed,
			Reason: metav1.StatusReasonMethodNotAllowed, Message: "create not allowed while custom resource definition is terminating"}}
	}
	ctx = catalog.WithDryRun(ctx, opts.DryRun)
	warnings, err := s.normalize(r, obj, opts)
	if err != nil {
		return Result{}, err
	}
	if err := setNamespace(r, obj, namespace); err != nil {
		return Result{}, err
	}
	if r.Namespaced {
		if err := s.checkNamespaceAcceptsContent(ctx, r, obj); err != nil {
			return Result{}, err
		}
	}
	generated := obj.GetName() == "" && obj.GetGenerateName() != ""
	requested := obj
	for attempt := 0; ; attempt++ {
		// The name is chosen first: defaults may depend on it (a namespace's name label).
		obj = requested.DeepCopy()
		if generated {
			obj.SetName(names.SimpleNameGenerator.GenerateName(obj.GetGenerateName()))
		}
		if !opts.defaulted(r) {
			r.Behavior.Default(obj)
		}
		// As in kube-apiserver: fields are tracked as the client sent them (defaulted), before
		// the strategy resets what clients may not set.
		if obj, err = s.trackFields(r, nil, obj, opts); err != nil {
			return Result{}, err
		}
		prepareCreateMeta(r, obj, s.now())
		alloc, err := allocate(ctx, r, obj, nil, opts.DryRun)
		if err != nil {
			return Result{}, err
		}
		strategyWarnings, err := r.Behavior.BeforeCreate(ctx, obj)
		if err == nil && opts.AuthorizeCreate != nil {
			err = opts.AuthorizeCreate(ctx)
		}
		warnings := append(warnings[:len(warnings):len(warnings)], strategyWarnings...)
		if err != nil {
			// As kube-apiserver, a refused write still carries its warnings (admission's).
			alloc.Finish(ctx, false)
			return Result{Warnings: warnings}, err
		}
		value, err := s.toStorage(r, obj)
		if err != nil {
			alloc.Finish(ctx, false)
			return Result{}, err
		}
		key := s.keys.object(r, obj.GetNamespace(), obj.GetName())
		if opts.DryRun {
			alloc.Finish(ctx, false)
			if _, _, err := s.store.Get(ctx, key, 0); err == nil {
				return Result{Warnings: warnings}, apierrors.NewAlreadyExists(qualifiedResource(r), obj.GetName())
			}
			return Result{Object: obj, Warnings: warnings, Created: true}, nil
		}
		ttl := storage.WithTTL(leaseSeconds(r, opts))
		rev, err := s.store.Create(ctx, key, value, ttl)
		if retry, smaller := s.withoutManagedFields(r, obj, opts, err); retry {
			value = smaller
			rev, err = s.store.Create(ctx, key, value, ttl)
		}
		alloc.Finish(ctx, err == nil)
		if errors.Is(err, storage.ErrExists) && generated && attempt+1 < maxGenerateNameAttempts {
			continue
		}
		if err != nil {
			// The strategy's warnings stand, as kube's do, whatever storage answers.
			if errors.Is(err, storage.ErrExists) && generated {
				return Result{Warnings: warnings}, apierrors.NewServerTimeoutForKind(r.GroupVersionKind().GroupKind(), "POST", 0)
			}
			return Result{Warnings: warnings}, storageError(r, obj.GetName(), err)
		}
		obj.SetResourceVersion(revisionString(rev))
		return Result{Object: obj, Raw: servedAsStored(r, value, rev), Warnings: warnings, Created: true}, nil
	}
}

// servedAsStored is the JSON served for a value just written at rev, when the resource is
// served at the version it is stored at (nil otherwise: the caller encodes the object).
func servedAsStored(r *catalog.Resource, value []byte, rev int64) []byte {
	if r.Conversion != nil {
		return nil
	}
	raw, _ := codec.WithResourceVersion(value, rev, r.GroupVersion.String())
	return raw
}

// normalize brings obj to its type's form and applies fieldValidation to what did not fit.
func (s *Service) normalize(r *catalog.Resource, obj *unstructured.Unstructured, opts writePlan) ([]string, error) {
	if err := checkKind(r, obj); err != nil {
		return nil, err
	}
	if opts.cleanMerge && canonicalMetadata(obj) {
		// A merge of a stored object and an applied configuration that both fit the schema
		// fits it too: pruning or decoding would find nothing.
		return nil, nil
	}
	unknown, err := r.Behavior.Normalize(obj)
	if !opts.fieldsTracked {
		r.Behavior.DropNulls(obj) // a decoded body's; an apply's merge keeps them
	}
	return fieldIssues(r, unknown, err, opts.WriteOptions)
}

// checkFit is normalize that only reports: obj must already name its kind and apiVersion, and
// it is not changed.
func (s *Service) checkFit(r *catalog.Resource, obj *unstructured.Unstructured, opts WriteOptions) ([]string, error) {
	if err := checkKind(r, obj); err != nil {
		return nil, err
	}
	unknown, err := r.Behavior.CheckFit(obj)
	return fieldIssues(r, unknown, err, opts)
}

// checkKind fills in obj's kind and apiVersion when it names none, and refuses another's.
func checkKind(r *catalog.Resource, obj *unstructured.Unstructured) error {
	gvk := r.GroupVersionKind()
	if obj.GetKind() == "" {
		obj.SetKind(gvk.Kind)
	}
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(r.GroupVersion.String())
	}
	if obj.GetKind() != gvk.Kind && !r.Unstructured {
		// kube decodes a built-in body into the Go type it names, then fails to convert that.
		version := obj.GroupVersionKind().Version
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: converting (%s.%s) to (%s.%s): unknown conversion",
			obj.GetKind(), version, gvk.Kind, version, obj.GetKind(), internalPackage(gvk.Group), gvk.Kind))
	}
	if obj.GetAPIVersion() != r.GroupVersion.String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", obj.GetAPIVersion(), r.GroupVersion.String()))
	}
	if obj.GetKind() != gvk.Kind {
		return apierrors.NewInvalid(schema.GroupKind{Group: gvk.Group, Kind: obj.GetKind()}, obj.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("kind"), obj.GetKind(), "must be "+gvk.Kind)})
	}
	return nil
}

// fieldIssues is the answer fieldValidation gives to what fitting an object to its type found:
// the error of a body that does not decode, the unknown fields and the body's decoding issues.
func fieldIssues(r *catalog.Resource, unknown []string, err error, opts WriteOptions) ([]string, error) {
	gvk := r.GroupVersionKind()
	if err != nil {
		if opts.PatchValue != nil { // kube's patch handler decodes the patched object itself
			return nil, invalidPatch(opts.PatchValue(), err.Error())
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	issues := append([]string(nil), opts.DecodeIssues...)
	for _, u := range unknown {
		if !slices.Contains(opts.DecodeIssues, u) { // decoding a built-in body named them already
			issues = append(issues, u)
		}
	}
	if len(issues) == 0 {
		return nil, nil
	}
	switch opts.FieldValidation {
	case "Ignore":
		return nil, nil
	case "Strict":
		if opts.PatchValue != nil {
			return nil, invalidPatch(opts.PatchValue(), "strict decoding error: "+strings.Join(issues, ", "))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s", gvk.Kind, gvk.Version, gvk.Kind, strings.Join(issues, ", ")))
	}
	return issues, nil
}

// CheckName is kube-apiserver's check of an object's name against the name in the URL: a PUT's
// body before anything is looked up, a patch's result or an apply's merge after.
func CheckName(obj *unstructured.Unstructured, name string) error {
	switch obj.GetName() {
	case name:
		return nil
	case "":
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", name))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), name))
}

// CheckStoragePreconditions is kube-apiserver's storage precondition check of the stored object
// current (its storage.Preconditions.Check, a uid and a resourceVersion, either may be empty),
// failing with the Conflict its registry makes of it, which quotes the object's etcd key. kube
// checks the uid of a PUT's object so, and a Binding's uid and resourceVersion.
func (s *Service) CheckStoragePreconditions(r *catalog.Resource, current *unstructured.Unstructured, uid types.UID, resourceVersion string) error {
	fail := func(msg string) error {
		return apierrors.NewConflict(qualifiedResource(r), current.GetName(), fmt.Errorf(
			"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: %s", s.keys.object(r, current.GetNamespace(), current.GetName()), msg))
	}
	if uid != "" && uid != current.GetUID() {
		return fail(fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, current.GetUID()))
	}
	if resourceVersion != "" && resourceVersion != current.GetResourceVersion() {
		return fail(fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", resourceVersion, current.GetResourceVersion()))
	}
	return nil
}

// invalidPatch is kube-apiserver's answer to a patch whose result is not an object of its kind.
func invalidPatch(value, detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, detail)})
}

func setNamespace(r *catalog.Resource, obj *unstructured.Unstructured, namespace string) error {
	if !r.Namespaced {
		obj.SetNamespace("")
		return nil
	}
	switch obj.GetNamespace() {
	case "":
		obj.SetNamespace(namespace)
	case namespace:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// checkNamespaceAcceptsContent is kube's NamespaceLifecycle admission: content may only be
// created in namespaces that exist and are not being deleted.
func (s *Service) checkNamespaceAcceptsContent(ctx context.Context, r *catalog.Resource, obj *unstructured.Unstructured) error {
	ns := obj.GetNamespace()
	kv, _, err := s.store.Get(ctx, s.keys.namespace(ns), 0)
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(namespacesResource, ns)
	}
	if err != nil {
		return storageError(r, obj.GetName(), err)
	}
	namespace, err := codec.Decode(kv.Value, kv.ModRevision)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	phase, _, _ := unstructured.NestedString(namespace.Object, "status", "phase")
	if namespace.GetDeletionTimestamp() != nil || phase == "Terminating" {
		err := apierrors.NewForbidden(qualifiedResource(r), obj.GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: "NamespaceTerminating", Field: "metadata.namespace", Message: fmt.Sprintf("namespace %s is being terminated", ns)})
		return err
	}
	return nil
}

// prepareCreateMeta sets the metadata the server owns on create.
func prepareCreateMeta(r *catalog.Resource, obj *unstructured.Unstructured, now time.Time) {
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(nowTime(now))
	obj.SetResourceVersion("")
	obj.SetSelfLink("")
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	if r.SpecTracksGeneration {
		obj.SetGeneration(1)
	} else {
		obj.SetGeneration(0)
	}
}

// Mutation computes the desired object from the current one. It may return the object it was
// given, modified. A resourceVersion in the result is a precondition.
type Mutation func(current *unstructured.Unstructured) (*unstructured.Unstructured, error)

// raceError is what a write that lost a race and may not retry answers: the conflict when the
// client named the resourceVersion it expected, else its request's timeout (it never asked for
// a conflict).
func raceError(ctx context.Context, err error, precondition bool) error {
	if errors.Is(err, storage.ErrConflict) && !precondition && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// withoutManagedFields is kube-apiserver's answer to an object too large for storage: unless
// the write is an apply, drop its managedFields (which can be large) and store it again. It
// returns the smaller value when that is worth trying.
func (s *Service) withoutManagedFields(r *catalog.Resource, obj *unstructured.Unstructured, opts writePlan, err error) (bool, []byte) {
	if !errors.Is(err, storage.ErrTooLarge) || opts.fieldsTracked || len(obj.GetManagedFields()) == 0 {
		return false, nil
	}
	obj.SetManagedFields(nil)
	value, err := s.toStorage(r, obj)
	return err == nil, value
}

// leaseSeconds is the TTL, in whole seconds as kube counts it (uint64(ttl.Seconds())), that a
// write of r's objects stores them with: r's, on the writes kube's registry store makes (its
// Create and Update, which ask the TTLFunc); none on a direct write (a plain GuaranteedUpdate
// there, which gives none, so etcd detaches the lease as it does for kube).
func leaseSeconds(r *catalog.Resource, opts writePlan) int64 {
	if opts.direct {
		return 0
	}
	return int64(r.TTL.Seconds())
}

// retryConflict tells whether a write that lost a race should be tried again on the newer
// object: always, as kube-apiserver's GuaranteedUpdate does, unless the client named the
// resourceVersion it expects or its request has run out of time.
func retryConflict(ctx context.Context, err error, precondition bool) bool {
	return errors.Is(err, storage.ErrConflict) && !precondition && ctx.Err() == nil
}

// Update writes the result of mutate over the current object, retrying on a concurrent write
// unless the result names the resourceVersion it expects.
func (s *Service) Update(ctx context.Context, r *catalog.Resource, namespace, name string, mutate Mutation, opts WriteOptions) (Result, error) {
	return s.update(ctx, r, namespace, name, mutate, writePlan{WriteOptions: opts})
}

// UpdateDirect is Update writing the mutation's result as it is, as kube's registry does where
// it updates storage itself (pods/binding, an eviction's DisruptionTarget condition): no
// strategy, no admission, no field tracking.
func (s *Service) UpdateDirect(ctx context.Context, r *catalog.Resource, namespace, name string, mutate Mutation, opts WriteOptions) (Result, error) {
	return s.update(ctx, r, namespace, name, mutate, writePlan{WriteOptions: opts, direct: true})
}

func (s *Service) update(ctx context.Context, r *catalog.Resource, namespace, name string, mutate Mutation, opts writePlan) (Result, error) {
	if !r.Namespaced {
		namespace = ""
	}
	key := s.keys.object(r, namespace, name)
	ctx = catalog.WithDryRun(ctx, opts.DryRun)
	for {
		kv, _, err := s.store.Get(ctx, key, 0)
		if err != nil {
			return Result{}, storageError(r, name, err)
		}
		// old is read, never changed: an object the service kept is shared.
		old, oldTyped := s.written.get(r, key, kv.ModRevision)
		if old == nil {
			if old, err = s.fromStorage(r, kv); err != nil {
				return Result{}, apierrors.NewInternalError(err)
			}
		}
		current := old
		if !opts.mutationReads {
			current = old.DeepCopy()
		}
		obj, err := mutate(current)
		if err != nil {
			return Result{}, err
		}
		precondition := obj.GetResourceVersion() != ""
		if precondition && obj.GetResourceVersion() != old.GetResourceVersion() {
			return Result{}, apierrors.NewConflict(qualifiedResource(r), name, errors.New(registryConflictMessage))
		}
		obj.SetResourceVersion(old.GetResourceVersion()) // an unconditional update applies to what it read
		res, alloc, typed, err := s.prepareUpdate(ctx, r, namespace, name, obj, old, oldTyped, opts)
		if err != nil {
			return Result{Warnings: res.Warnings}, err
		}
		value, err := s.toStorage(r, obj)
		if err != nil {
			alloc.Finish(ctx, false)
			return Result{}, err
		}
		if bytes.Equal(value, kv.Value) {
			// Nothing changed: kube-apiserver does not write, and the resourceVersion stays.
			alloc.Finish(ctx, false)
			if oldTyped != nil {
				old = old.DeepCopy() // the kept object is shared
			}
			return Result{Object: old, Warnings: res.Warnings}, nil
		}
		if opts.DryRun {
			alloc.Finish(ctx, false)
			return Result{Object: obj, Warnings: res.Warnings}, nil
		}
		if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 && !blocksDeletion(r, obj) {
			// The last finalizer is gone: the object's deletion completes now.
			alloc.Finish(ctx, false)
			if _, _, err := s.store.Delete(ctx, key, kv.ModRevision); err != nil {
				if retryConflict(ctx, err, precondition) {
					continue
				}
				return Result{}, storageError(r, name, raceError(ctx, err, precondition))
			}
			released(ctx, r, old)
			s.written.forget(r, key)
			return Result{Object: obj, Warnings: res.Warnings}, nil
		}
		ttl := storage.WithTTL(leaseSeconds(r, opts))
		rev, _, err := s.store.Update(ctx, key, value, kv.ModRevision, ttl)
		if retry, smaller := s.withoutManagedFields(r, obj, opts, err); retry {
			value = smaller
			typed = nil // no longer obj
			rev, _, err = s.store.Update(ctx, key, value, kv.ModRevision, ttl)
		}
		alloc.Finish(ctx, err == nil)
		if retryConflict(ctx, err, precondition) {
			continue
		}
		if err != nil {
			return Result{}, storageError(r, name, raceError(ctx, err, precondition))
		}
		obj.SetResourceVersion(revisionString(rev))
		if typed != nil && r.Allocator == nil {
			s.written.put(r, key, rev, obj.DeepCopy(), typed)
		}
		return Result{Object: obj, Raw: servedAsStored(r, value, rev), Warnings: res.Warnings}, nil
	}
}

// prepareUpdate runs the update half of the pipeline on obj, given the current object old (and
// its Go object when the service kept it). It returns obj's Go object when the behavior made
// one that the service may keep.
func (s *Service) prepareUpdate(ctx context.Context, r *catalog.Resource, namespace, name string, obj, old *unstructured.Unstructured, oldTyped runtime.Object, opts writePlan) (Result, catalog.Allocation, runtime.Object, error) {
	if !r.Unstructured {
		// kube-apiserver decodes built-in objects into Go types, where `managedFields: []` is an
		// empty, non-nil list: the field manager takes it as a reset, as it does [{}]. (Custom
		// resources stay unstructured there, and [] leaves their managedFields alone.)
		if mf, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields"); found {
			if list, ok := mf.([]any); ok && len(list) == 0 {
				_ = unstructured.SetNestedField(obj.Object, []any{map[string]any{}}, "metadata", "managedFields")
			}
		}
	}
	warnings, err := s.normalize(r, obj, opts)
	if err != nil {
		return Result{}, nil, nil, err
	}
	if err := CheckName(obj, name); err != nil {
		return Result{}, nil, nil, err
	}
	if err := setNamespace(r, obj, namespace); err != nil {
		return Result{}, nil, nil, err
	}
	tb, typedOK := typedOf(r)
	// Where a Behavior takes Go objects, the one made by defaulting obj is handed on to the
	// strategies, unless something may change obj's content on the way (an allocator).
	var typed runtime.Object
	switch {
	case !opts.defaulted(r) && typedOK:
		typed = tb.DefaultTyped(obj)
	case !opts.defaulted(r):
		r.Behavior.Default(obj)
	case opts.typed != nil:
		typed = opts.typed.merged
	}
	if opts.typed != nil {
		opts.typed.merged = nil // the next attempt's mutation makes its own
	}
	if r.Allocator != nil {
		typed = nil
	}
	if opts.direct {
		carryUpdateMeta(r, obj, old)
		return Result{Warnings: warnings}, catalog.NoAllocation{}, nil, nil
	}
	tracked, err := s.trackFields(r, old, obj, opts)
	if err != nil {
		return Result{}, nil, nil, err
	}
	*obj = *tracked
	carryUpdateMeta(r, obj, old)
	alloc := catalog.Allocation(catalog.NoAllocation{})
	if opts.Subresource == "" {
		if alloc, err = allocate(ctx, r, obj, old, opts.DryRun); err != nil {
			return Result{}, nil, nil, err
		}
	}
	var strategyWarnings []string
	var written runtime.Object
	if typedOK {
		strategyWarnings, written, err = tb.BeforeUpdateTyped(ctx, obj, old, typed, oldTyped, opts.Subresource)
	} else {
		strategyWarnings, err = r.Behavior.BeforeUpdate(ctx, obj, old, opts.Subresource)
	}
	if err != nil {
		alloc.Finish(ctx, false)
		return Result{Warnings: append(warnings, strategyWarnings...)}, nil, nil, err
	}
	if keptTimes := keepTimesOfNoOp(ctx, obj, old); keptTimes || r.Conversion != nil || r.DefaultsOnRead {
		written = nil // reads of it are not obj as it is
	}
	return Result{Warnings: append(warnings, strategyWarnings...)}, alloc, written, nil
}

// trackFields records the write in managedFields: the fields obj changed relative to live (nil
// on create) become the writer's. As in kube-apiserver, a failure here never fails the write.
func (s *Service) trackFields(r *catalog.Resource, live, obj *unstructured.Unstructured, opts writePlan) (*unstructured.Unstructured, error) {
	if opts.fieldsTracked || opts.Subresource == "finalize" {
		return obj, nil
	}
	fm, err := s.fields.For(r, opts.Subresource)
	if err != nil {
		return obj, nil
	}
	if live == nil {
		live = s.fields.Empty(r)
	}

	out, ok := fm.UpdateNoErrors(live, obj, opts.Manager).(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	return out, nil
}

// carryUpdateMeta keeps the metadata clients cannot change and counts spec changes.
func carryUpdateMeta(r *catalog.Resource, obj, old *unstructured.Unstructured) {
	if obj.GetUID() == "" {
		obj.SetUID(old.GetUID())
	}
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
	obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	obj.SetSelfLink("")
	obj.SetGeneration(old.GetGeneration())
	if r.SpecTracksGeneration && specChanged(obj, old) {
		obj.SetGeneration(old.GetGeneration() + 1)
	}
}

// specChanged reports a change outside metadata and status.
func specChanged(obj, old *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "metadata" && k != "status" {
				m[k] = v
			}
		}
		return m
	}
	return !apiequality.Semantic.DeepEqual(strip(obj), strip(old))
}

// blocksDeletion reports whether something must finish before the object can go: metadata
// finalizers, or for namespaces the spec finalizers the namespace controller removes.
func blocksDeletion(r *catalog.Resource, obj *unstructured.Unstructured) bool {
	if len(obj.GetFinalizers()) > 0 {
		return true
	}
	if r.StorageGroupResource == namespacesResource {
		fs, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
		return len(fs) > 0
	}
	return false
}

// internalPackage names the Go package of a group's internal types, as kube's conversion errors
// do ("core" for the legacy group, the group's first label otherwise).
func internalPackage(group string) string {
	if group == "" {
		return "core"
	}
	first, _, _ := strings.Cut(group, ".")
	return first
}

// allocate reserves what obj takes from the resource's shared pools, if it has any.
func allocate(ctx context.Context, r *catalog.Resource, obj, old *unstructured.Unstructured, dryRun bool) (catalog.Allocation, error) {
	if r.Allocator == nil {
		return catalog.NoAllocation{}, nil
	}
	return r.Allocator.Allocate(ctx, obj, old, dryRun)
}

// released frees what a deleted object held from the resource's shared pools.
func released(ctx context.Context, r *catalog.Resource, obj *unstructured.Unstructured) {
	if r.Allocator != nil {
		r.Allocator.Release(ctx, obj)
	}
}
