package handlers

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/lapis-dev/lapis/internal/objects"
)

func (h *Handler) create(rq *request) error {
	if rq.info.Name != "" && !rq.resource.ServedByAPIExtensions {
		// Built-in routes take no POST to a name; the apiextensions handler creates what the
		// body names.
		return methodNotAllowed(rq.resource, "create")
	}
	if err := checkAcceptable(rq); err != nil {
		return err
	}
	opts, err := createOptions(rq.req)
	if err != nil {
		return err
	}
	obj, issues, err := h.readObject(rq.req, rq.resource.GroupVersionKind())
	if err != nil {
		return err
	}
	a := askedByCreate(opts)
	res, err := h.objects.Create(a.context(rq), rq.resource, rq.info.Namespace, obj, a.writeOptions(rq, issues))
	return h.answerWrite(rq, http.StatusCreated, res, err)
}

func (h *Handler) update(rq *request) error {
	if err := checkAcceptable(rq); err != nil {
		return err
	}
	opts, err := updateOptions(rq.req)
	if err != nil {
		return err
	}
	obj, issues, err := h.readObject(rq.req, rq.resource.GroupVersionKind())
	if err != nil {
		return err
	}
	if err := checkName(obj, rq.info.Name, rq.info.Namespace); err != nil {
		return err
	}
	mutate := func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		// kube's storage takes the object's uid as a precondition.
		if err := h.objects.CheckStoragePreconditions(rq.resource, current, obj.GetUID(), ""); err != nil {
			return nil, err
		}
		// Checked once the object is known to exist: kube-apiserver answers 404 first.
		if rq.resource.RequireResourceVersionOnUpdate && obj.GetResourceVersion() == "" {
			// kube-apiserver names the resource, not the kind, in this error.
			gk := schema.GroupKind{Group: rq.resource.GroupVersion.Group, Kind: rq.resource.Name}
			return nil, apierrors.NewInvalid(gk, rq.info.Name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), int64(0), "must be specified for an update")})
		}
		return obj.DeepCopy(), nil
	}
	if rq.info.Subresource == "finalize" {
		mutate = finalizeNamespace(obj)
	}
	a := askedByUpdate(opts)
	wo := a.writeOptions(rq, issues)
	wo.Subresource = rq.info.Subresource
	res, err := h.objects.Update(a.context(rq), rq.resource, rq.info.Namespace, rq.info.Name, mutate, wo)
	if apierrors.IsNotFound(err) && rq.resource.CreateOnUpdate {
		// kube's strategies that allow it create what an update names and does not find,
		// through their status subresource too (whose strategy is theirs).
		res, err = h.objects.Create(a.context(rq), rq.resource, rq.info.Namespace, obj, wo)
		return h.answerWrite(rq, http.StatusCreated, res, err)
	}
	return h.answerWrite(rq, http.StatusOK, res, err)
}

// finalizeNamespace is the namespaces/finalize subresource: only spec.finalizers changes.
func finalizeNamespace(body *unstructured.Unstructured) objects.Mutation {
	return func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		fs, found, err := unstructured.NestedStringSlice(body.Object, "spec", "finalizers")
		if err != nil {
			return nil, apierrors.NewBadRequest("spec.finalizers must be a list of strings")
		}
		if found {
			_ = unstructured.SetNestedStringSlice(current.Object, fs, "spec", "finalizers")
		} else {
			unstructured.RemoveNestedField(current.Object, "spec", "finalizers")
		}
		current.SetResourceVersion(body.GetResourceVersion())
		return current, nil
	}
}

func (h *Handler) delete(rq *request) error {
	if err := checkAcceptable(rq); err != nil {
		return err
	}
	opts, err := deleteOptions(rq.req)
	if err != nil {
		return err
	}
	if ptr.Deref(opts.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return h.deleteCorrupt(rq, opts)
	}
	res, err := h.objects.Delete(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name, objects.DeleteOptions{
		DryRun: isDryRun(opts.DryRun), Preconditions: opts.Preconditions, PropagationPolicy: PropagationPolicy(opts),
		GracePeriodSeconds: opts.GracePeriodSeconds,
	})
	if err != nil {
		return err
	}
	warnDefaultPropagation(rq, opts)
	code := http.StatusOK
	if !res.Deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		// kube-apiserver answers 202 when the client asked for cascading deletion the legacy way
		// and the object is not gone yet.
		code = http.StatusAccepted
	}
	if !res.Deleted || rq.resource.ReturnDeletedObject {
		// Finalizers hold the object, or the resource answers with it: the object as it is now.
		h.writeObject(rq, code, res.Object)
		return nil
	}
	writeStatus(rq.w, rq.req, code, successStatus(rq, res.Object), rq.protobuf)
	return nil
}

// deleteCorrupt is kube's unsafe deletion of an object storage cannot read: allowed to those
// who may also "unsafe-delete-ignore-read-errors" the resource (endpoints/handlers/delete.go's
// authorizeUnsafeDelete, v0.37.2), answered with a bare Status naming the kind.
func (h *Handler) deleteCorrupt(rq *request, opts metav1.DeleteOptions) error {
	ctx := rq.req.Context()
	if rq.info.Subresource != "" {
		return apierrors.NewForbidden(rq.resource.GroupVersionResource().GroupResource(), rq.info.Name,
			errors.New("ignoreStoreReadErrorWithClusterBreakingPotential delete option is not allowed on a subresource or non-resource request"))
	}
	if err := h.authorizeAs(rq, "unsafe-delete-ignore-read-errors")(ctx); err != nil {
		return err
	}
	if _, err := h.objects.Delete(ctx, rq.resource, rq.info.Namespace, rq.info.Name,
		objects.DeleteOptions{DryRun: isDryRun(opts.DryRun), IgnoreStoreReadError: true}); err != nil {
		return err
	}
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Code: http.StatusOK, Details: &metav1.StatusDetails{Name: rq.info.Name, Kind: rq.resource.Kind}}
	writeStatus(rq.w, rq.req, http.StatusOK, status, rq.protobuf)
	return nil
}

// warnDefaultPropagation passes on the resource's warning for deletes that leave the
// propagation to its default (Jobs orphan their Pods), as kube's REST storage does.
func warnDefaultPropagation(rq *request, opts metav1.DeleteOptions) {
	if rq.resource.DeleteWarning != "" && opts.PropagationPolicy == nil && opts.OrphanDependents == nil {
		writeWarnings(rq.w, []string{rq.resource.DeleteWarning})
	}
}

// PropagationPolicy is the policy DeleteOptions ask for; the legacy orphanDependents (validation
// has refused it alongside propagationPolicy) means Orphan when true and Background when false.
func PropagationPolicy(opts metav1.DeleteOptions) *metav1.DeletionPropagation {
	if o := opts.OrphanDependents; o != nil {
		p := metav1.DeletePropagationBackground
		if *o {
			p = metav1.DeletePropagationOrphan
		}
		return &p
	}
	return opts.PropagationPolicy
}

func successStatus(rq *request, obj *unstructured.Unstructured) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: obj.GetName(), Group: rq.resource.GroupVersion.Group, Kind: rq.resource.Name, UID: obj.GetUID()}}
}

func (h *Handler) deleteCollection(rq *request) error {
	if err := checkAcceptable(rq); err != nil {
		return err
	}
	listOpts, err := listOptions(rq.req, false)
	if err != nil {
		return err
	}
	opts, err := deleteOptions(rq.req)
	if err != nil {
		return err
	}
	if ptr.Deref(opts.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return apierrors.NewInvalid(optionsGroupKind("DeleteOptions"), "", field.ErrorList{field.Invalid(
			field.NewPath("ignoreStoreReadErrorWithClusterBreakingPotential"), true, "is not allowed with DELETECOLLECTION, try again after removing the option")})
	}
	deleted, rv, err := h.objects.DeleteCollection(rq.req.Context(), rq.resource, rq.info.Namespace, listOpts,
		objects.DeleteOptions{DryRun: isDryRun(opts.DryRun), Preconditions: opts.Preconditions, PropagationPolicy: PropagationPolicy(opts),
			GracePeriodSeconds: opts.GracePeriodSeconds})
	if err != nil {
		return err
	}
	warnDefaultPropagation(rq, opts)
	items, err := marshalled(deleted)
	if err != nil {
		return err
	}
	h.writeList(rq, http.StatusOK, responseType(rq), metav1.ListMeta{ResourceVersion: rv}, items, nil)
	return nil
}

// checkName is kube-apiserver's check of a PUT body's identity against its URL, made before the
// object is looked up: the body must name the object, and may leave out its namespace.
func checkName(obj *unstructured.Unstructured, name, namespace string) error {
	if err := objects.CheckName(obj, name); err != nil {
		return err
	}
	if namespace != "" && obj.GetNamespace() != "" && obj.GetNamespace() != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}
