package crd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/util/webhook"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/tables"
)

// cleanupFinalizer holds a CRD until its custom resources are gone: a CRD's first delete adds
// it (catalog/builtin's markCRDDeleting, as kube's CRD REST).
const cleanupFinalizer = apiextensionsv1.CustomResourceCleanupFinalizer

// apiServerManager is who kube's managedFields name for the writes of its CRD controllers.
const apiServerManager = "kube-apiserver"

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Controller keeps the catalogue's custom resources in step with the CRDs in storage.
type Controller struct {
	objects  *objects.Service
	cat      *catalog.Catalog
	log      *slog.Logger
	crds     *catalog.Resource
	cleaning sets.Set[string] // CRDs whose cleanup is running; touched only by the sync loop
	done     chan string      // cleanups report here when they finish
	// admission is the chain custom resources' writes go through (nil: none).
	admission func() admission.Interface
	// conversion makes the converters of CRDs with conversion webhooks.
	conversion *webhookConversion
}

// NewController returns a controller over svc's catalogue; the custom resources it serves are
// admitted by chain (nil: no admission).
func NewController(svc *objects.Service, log *slog.Logger, chain func() admission.Interface) *Controller {
	crds, _ := svc.Catalog().Lookup(crdsGVR)
	return &Controller{objects: svc, cat: svc.Catalog(), log: log, crds: crds, cleaning: sets.New[string](), done: make(chan string, 16),
		admission: chain, conversion: &webhookConversion{}}
}

// UseWebhookConversion sets how the conversion webhooks of CRDs (spec.conversion.strategy
// Webhook) are reached, as kube-apiserver's apiextensions server is configured: resolver finds
// where a service reference is served, wrapper gives the credentials and transport each
// webhook is called with (nil: kube's default authentication info, no credentials). It may be
// called before or after Start; conversions use the latest setup. Until it is called, service
// references resolve through DNS (kube's default service resolver) and url references are
// called with no credentials.
func (c *Controller) UseWebhookConversion(resolver webhook.ServiceResolver, wrapper webhook.AuthenticationInfoResolverWrapper) {
	c.conversion.use(resolver, wrapper)
}

// Start registers every stored CRD, then follows changes until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	rv, err := c.resync(ctx)
	if err != nil {
		return err
	}
	go c.run(ctx, rv)
	return nil
}

// resync reads all CRDs, syncs each, and drops catalogue entries for CRDs that are gone.
func (c *Controller) resync(ctx context.Context) (string, error) {
	items, meta, err := c.objects.List(ctx, c.crds, "", objects.ListOptions{})
	if err != nil {
		return "", err
	}
	present := sets.New[string]()
	for _, item := range items {
		present.Insert(item.GetName())
		c.sync(ctx, item)
	}
	for _, r := range c.cat.All() {
		if r.CRD != nil && !present.Has(r.CRD.Name) {
			c.cat.SetCustom(r.CRD.Name, nil)
		}
	}
	return meta.ResourceVersion, nil
}

func (c *Controller) run(ctx context.Context, rv string) {
	for ctx.Err() == nil {
		events, err := c.objects.Watch(ctx, c.crds, "", objects.ListOptions{ResourceVersion: rv})
		if err == nil {
			rv = c.follow(ctx, events, rv)
		}
		if ctx.Err() != nil {
			return
		}
		// The watch ended (compaction, storage trouble): relist and go on.
		time.Sleep(100 * time.Millisecond)
		if next, err := c.resync(ctx); err == nil {
			rv = next
		} else {
			c.log.Warn("re-reading CRDs failed", "err", err)
		}
	}
}

func (c *Controller) follow(ctx context.Context, events <-chan objects.WatchEvent, rv string) string {
	for {
		select {
		case name := <-c.done:
			c.cleaning.Delete(name)
		case ev, ok := <-events:
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				return rv
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(ev.Object); err != nil {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type == watch.Deleted {
				c.cat.SetCustom(obj.GetName(), nil)
				continue
			}
			c.sync(ctx, obj)
		}
	}
}

// sync brings one CRD's status and served resources up to date.
func (c *Controller) sync(ctx context.Context, obj *unstructured.Unstructured) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		c.log.Warn("unreadable CRD", "name", obj.GetName(), "err", err)
		return
	}
	if crd.DeletionTimestamp != nil {
		// The delete marked it InstanceDeletionPending; the cleanup says it is in progress, as
		// kube's finalizer controller does.
		if cond := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating); cond == nil || cond.Reason != "InstanceDeletionInProgress" {
			status := *crd.Status.DeepCopy()
			setCondition(&status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
				Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"}, metav1.NewTime(time.Now().Truncate(time.Second)))
			c.writeStatus(ctx, crd.Name, status)
			crd.Status = status
		}
		// Still served, so its objects can be deleted, but creates are refused from now on.
		if isTrue(crd.Status.Conditions, apiextensionsv1.NamesAccepted) {
			c.cat.SetCustom(crd.Name, c.resources(crd))
		}
		if !c.cleaning.Has(crd.Name) {
			c.cleaning.Insert(crd.Name)
			go c.cleanup(ctx, crd)
		}
		return
	}
	status := c.acceptNames(crd)
	if !apiequality.Semantic.DeepEqual(status, crd.Status) {
		c.writeStatus(ctx, crd.Name, status)
		crd.Status = status
	}
	if !isTrue(crd.Status.Conditions, apiextensionsv1.NamesAccepted) {
		c.cat.SetCustom(crd.Name, nil)
		return
	}
	c.cat.SetCustom(crd.Name, c.resources(crd))
}

// acceptNames computes the CRD's status: names are accepted unless another CRD of the group
// already uses one of them.
func (c *Controller) acceptNames(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionStatus {
	status := *crd.Status.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	if approval := approvalCondition(crd); approval != nil {
		setCondition(&status, *approval, now)
	}
	names := crd.Spec.Names
	conflict := ""
	for _, r := range c.cat.All() {
		if r.CRD == nil || r.CRD.Name == crd.Name || r.CRD.Spec.Group != crd.Spec.Group {
			continue
		}
		other := r.CRD.Status.AcceptedNames
		otherNames := sets.New(other.Plural, other.Singular).Insert(other.ShortNames...)
		switch {
		case otherNames.Has(names.Plural):
			conflict = fmt.Sprintf("%q is already in use", names.Plural)
		case names.Singular != "" && otherNames.Has(names.Singular):
			conflict = fmt.Sprintf("%q is already in use", names.Singular)
		case other.Kind == names.Kind:
			conflict = fmt.Sprintf("%q is already in use", names.Kind)
		}
		if conflict != "" {
			break
		}
	}
	if conflict != "" {
		setCondition(&status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "NameConflict", Message: conflict}, now)
		setCondition(&status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}, now)
		return status
	}
	status.AcceptedNames = names
	if status.AcceptedNames.ListKind == "" {
		status.AcceptedNames.ListKind = names.Kind + "List"
	}
	if status.AcceptedNames.Singular == "" {
		status.AcceptedNames.Singular = lower(names.Kind)
	}
	setCondition(&status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}, now)
	setCondition(&status, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}, now)
	status.StoredVersions = storedVersions(crd, status.StoredVersions)
	return status
}

// approvalCondition is the KubernetesAPIApprovalPolicyConformant condition kube's API approval
// controller keeps on a CRD of a protected group (*.k8s.io, *.kubernetes.io): the state of its
// approval annotation as kube's helpers read it, under the reason kube gives each state.
func approvalCondition(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return nil
	}
	state, message := apihelpers.GetAPIApprovalState(crd.Annotations)
	c := &apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.KubernetesAPIApprovalPolicyConformant,
		Status: apiextensionsv1.ConditionFalse, Message: message}
	switch state {
	case apihelpers.APIApproved:
		c.Status, c.Reason = apiextensionsv1.ConditionTrue, "ApprovedAnnotation"
	case apihelpers.APIApprovalBypassed:
		c.Reason = "UnapprovedAnnotation"
	case apihelpers.APIApprovalMissing:
		c.Reason = "MissingAnnotation"
	case apihelpers.APIApprovalInvalid:
		c.Reason = "InvalidAnnotation"
	default:
		c.Status, c.Reason = apiextensionsv1.ConditionUnknown, "UnknownAnnotation"
	}
	return c
}

func storedVersions(crd *apiextensionsv1.CustomResourceDefinition, have []string) []string {
	set := sets.New(have...)
	for _, v := range crd.Spec.Versions {
		if v.Storage && !set.Has(v.Name) {
			have = append(have, v.Name)
		}
	}
	return have
}

// setCondition sets a condition, keeping its transition time when its status is unchanged.
func setCondition(status *apiextensionsv1.CustomResourceDefinitionStatus, cond apiextensionsv1.CustomResourceDefinitionCondition, now metav1.Time) {
	for i, existing := range status.Conditions {
		if existing.Type != cond.Type {
			continue
		}
		cond.LastTransitionTime = existing.LastTransitionTime
		if existing.Status != cond.Status {
			cond.LastTransitionTime = now
		}
		status.Conditions[i] = cond
		return
	}
	cond.LastTransitionTime = now
	status.Conditions = append(status.Conditions, cond)
}

func isTrue(conds []apiextensionsv1.CustomResourceDefinitionCondition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func (c *Controller) writeStatus(ctx context.Context, name string, status apiextensionsv1.CustomResourceDefinitionStatus) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return
	}
	_, err = c.objects.Update(ctx, c.crds, "", name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.Object["status"] = content
		cur.SetResourceVersion("")
		return cur, nil
	}, objects.WriteOptions{Manager: apiServerManager, Subresource: "status"})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("updating CRD status failed", "name", name, "err", err)
	}
}

// resources builds the catalogue entries for each served version of crd.
func (c *Controller) resources(crd *apiextensionsv1.CustomResourceDefinition) []*catalog.Resource {
	storage := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	names := crd.Status.AcceptedNames
	storageGV := schema.GroupVersion{Group: crd.Spec.Group, Version: storage}
	// Webhook conversion: every version converts, the storage version too (objects stored at
	// an earlier storage version are converted on reading).
	conv := newCRDConverter(crd, c.conversion)
	admitted := admissionObjects(crd, conv)
	var out []*catalog.Resource
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		behavior, err := newCustomBehavior(crd, v)
		if err != nil {
			c.log.Warn("CRD version not served", "name", crd.Name, "version", v.Name, "err", err)
			continue
		}
		printer, err := tables.CustomPrinter(v)
		if err != nil {
			c.log.Warn("CRD printer columns ignored", "name", crd.Name, "version", v.Name, "err", err)
		}
		r := &catalog.Resource{
			Printer:                        printer,
			GroupVersion:                   schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name},
			Name:                           names.Plural,
			Kind:                           names.Kind,
			ListKind:                       names.ListKind,
			Singular:                       names.Singular,
			Namespaced:                     crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			ShortNames:                     names.ShortNames,
			Categories:                     names.Categories,
			StorageGroupResource:           schema.GroupResource{Group: crd.Spec.Group, Resource: names.Plural},
			StorageVersion:                 storageGV,
			HasStatus:                      behavior.hasStatus,
			RequireResourceVersionOnUpdate: true,
			Unstructured:                   true,
			ServedByAPIExtensions:          true,
			SpecTracksGeneration:           true,
			Behavior: catalog.Strategy(behavior, schema.GroupKind{Group: crd.Spec.Group, Kind: names.Kind},
				crd.Spec.Scope == apiextensionsv1.NamespaceScoped, apivalidation.NameIsDNSSubdomain,
				catalog.Admitted(catalog.Admission{Chain: c.admission, Objects: admitted},
					schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural},
					schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}),
				catalog.ValidatesStatus(behavior.ValidateStatus)),
			DefaultsOnRead: behavior.DefaultsOnRead(),
			CRD:            crd,
			CRDVersion:     v,
		}
		if conv != nil {
			r.Conversion = conv.storageConversion(r.GroupVersion, storageGV)
			r.ConvertVersion = conv.convertVersion
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			sc := v.Subresources.Scale
			r.Scale = &catalog.ScaleSubresource{SpecReplicasPath: sc.SpecReplicasPath, StatusReplicasPath: sc.StatusReplicasPath}
			if sc.LabelSelectorPath != nil {
				r.Scale.LabelSelectorPath = *sc.LabelSelectorPath
			}
		}
		out = append(out, r)
	}
	return out
}

// cleanup deletes every custom resource of a CRD being deleted, then releases the CRD.
func (c *Controller) cleanup(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	defer func() { c.done <- crd.Name }()
	served := c.cat.Custom(crd.Name)
	for ctx.Err() == nil && len(served) > 0 {
		// At the storage version, as kube's finalizer: no conversion webhook in the way.
		r := served[0]
		for _, v := range served {
			if v.GroupVersion == v.StorageVersion {
				r = v
			}
		}
		items, _, err := c.objects.List(ctx, r, "", objects.ListOptions{})
		if err == nil && len(items) == 0 {
			break
		}
		if err != nil {
			// Storage trouble, or an object a conversion webhook cannot convert: try again.
			c.log.Warn("listing custom resources to delete failed", "crd", crd.Name, "err", err)
			items = nil
		}
		for _, item := range items {
			if _, err := c.objects.Delete(ctx, r, item.GetNamespace(), item.GetName(), objects.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				c.log.Warn("deleting custom resource failed", "crd", crd.Name, "name", item.GetName(), "err", err)
			}
		}
		time.Sleep(200 * time.Millisecond) // objects with finalizers take their time
	}
	if ctx.Err() != nil {
		return
	}
	c.cat.SetCustom(crd.Name, nil)
	_, err := c.objects.Update(ctx, c.crds, "", crd.Name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		var keep []string
		for _, f := range cur.GetFinalizers() {
			if f != cleanupFinalizer {
				keep = append(keep, f)
			}
		}
		cur.SetFinalizers(keep)
		cur.SetResourceVersion("")
		return cur, nil
	}, objects.WriteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("releasing CRD failed", "name", crd.Name, "err", err)
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}
