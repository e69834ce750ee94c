package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

const kubernetesFinalizer = "kubernetes"

// DeletionGracePeriod is how long the controller leaves a namespace it sees Terminating before
// it starts on it: kube-controller-manager's namespace controller waits 5 s
// (namespaceDeletionGracePeriod), for other API servers to observe the deletion and last-minute
// creations in the namespace to land. Clients rely on that window: controller-runtime's test
// helpers finalize a namespace themselves right after deleting it.
const DeletionGracePeriod = 5 * time.Second

// Controller empties and finalizes Terminating namespaces.
type Controller struct {
	objects *objects.Service
	log     *slog.Logger
	grace   time.Duration // DeletionGracePeriod, shorter in tests
	mu      sync.Mutex
	active  map[string]bool // namespaces being emptied
}

// NewController returns a namespace controller over svc.
func NewController(svc *objects.Service, log *slog.Logger) *Controller {
	return &Controller{objects: svc, log: log, grace: DeletionGracePeriod, active: map[string]bool{}}
}

// Run follows namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	r, _ := c.objects.Catalog().Lookup(catalog.NamespacesGVR)
	c.objects.Follow(ctx, r, func(ns *unstructured.Unstructured, deleted bool) {
		if deleted || ns.GetDeletionTimestamp() == nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.active[ns.GetName()] {
			c.active[ns.GetName()] = true
			go c.finalize(ctx, r, ns.GetName())
		}
	})
}

// finalize deletes the namespace's content until none is left, then lets the namespace go.
func (c *Controller) finalize(ctx context.Context, namespaces *catalog.Resource, name string) {
	defer func() {
		c.mu.Lock()
		delete(c.active, name)
		c.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return
	case <-time.After(c.grace):
	}
	for ctx.Err() == nil {
		left := c.deleteContent(ctx, name)
		c.reportConditions(ctx, namespaces, name, left)
		if left.objects == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	_, err := c.objects.Update(ctx, namespaces, "", name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		fs, _, _ := unstructured.NestedStringSlice(cur.Object, "spec", "finalizers")
		var keep []string
		for _, f := range fs {
			if f != kubernetesFinalizer {
				keep = append(keep, f)
			}
		}
		if len(keep) == 0 {
			unstructured.RemoveNestedField(cur.Object, "spec", "finalizers")
		} else {
			_ = unstructured.SetNestedStringSlice(cur.Object, keep, "spec", "finalizers")
		}
		cur.SetResourceVersion("")
		return cur, nil
	}, objects.WriteOptions{Subresource: "finalize"})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("finalizing namespace failed", "namespace", name, "err", err)
	}
}

// remaining is what deleting a namespace's content left behind.
type remaining struct {
	objects    int
	byResource map[string]int // "configmaps." → count, as kube's messages name them
	finalizers map[string]int
}

// deleteContent deletes every namespaced object in the namespace and reports what was still
// there (objects held by finalizers included).
func (c *Controller) deleteContent(ctx context.Context, namespace string) remaining {
	left := remaining{byResource: map[string]int{}, finalizers: map[string]int{}}
	seen := map[schema.GroupResource]bool{}
	for _, r := range c.objects.Catalog().Stored() {
		if !r.Namespaced || seen[r.StorageGroupResource] {
			continue
		}
		seen[r.StorageGroupResource] = true
		items, _, err := c.objects.List(ctx, r, namespace, objects.ListOptions{})
		if err != nil {
			left.objects++
			continue
		}
		for _, item := range items {
			left.objects++
			left.byResource[r.Name+"."+r.GroupVersion.Group]++
			for _, f := range item.GetFinalizers() {
				left.finalizers[f]++
			}
			if item.GetDeletionTimestamp() != nil {
				continue
			}
			if _, err := c.objects.Delete(ctx, r, namespace, item.GetName(), objects.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				c.log.Warn("deleting namespace content failed", "namespace", namespace, "resource", r.Name, "name", item.GetName(), "err", err)
			}
		}
	}
	return left
}

// reportConditions writes the conditions kube's namespace controller keeps on a Terminating
// namespace, so users can see what it is waiting for.
func (c *Controller) reportConditions(ctx context.Context, namespaces *catalog.Resource, name string, left remaining) {
	conds := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionFalse, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	if len(left.byResource) > 0 {
		conds[3] = corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain",
			Message: "Some resources are remaining: " + counts(left.byResource, "%s has %d resource instances")}
	}
	if len(left.finalizers) > 0 {
		conds[4] = corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain",
			Message: "Some content in the namespace has finalizers remaining: " + counts(left.finalizers, "%s in %d resource instances")}
	}
	_, err := c.objects.Update(ctx, namespaces, "", name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		ns := &corev1.Namespace{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cur.Object, ns); err != nil {
			return nil, err
		}
		now := metav1.Now()
		for _, want := range conds {
			i := slices.IndexFunc(ns.Status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == want.Type })
			switch {
			case i < 0:
				want.LastTransitionTime = now
				ns.Status.Conditions = append(ns.Status.Conditions, want)
			case ns.Status.Conditions[i].Status != want.Status || ns.Status.Conditions[i].Message != want.Message:
				want.LastTransitionTime = now
				ns.Status.Conditions[i] = want
			}
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns)
		if err != nil {
			return nil, err
		}
		cur.Object["status"] = content["status"]
		cur.SetResourceVersion("")
		return cur, nil
	}, objects.WriteOptions{Subresource: "status", Manager: "namespace-controller"})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("updating namespace conditions failed", "namespace", name, "err", err)
	}
}

// counts formats name→count pairs in name order, joined as kube does.
func counts(m map[string]int, format string) string {
	names := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf(format, n, m[n])
	}
	return strings.Join(parts, ", ")
}
