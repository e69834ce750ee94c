package namespace

import (
	"context"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

const kubernetesFinalizer = "kubernetes"

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Controller empties and finalizes Terminating namespaces.
type Controller struct {
	objects *objects.Service
	log     *slog.Logger
	mu      sync.Mutex
	active  map[string]bool // namespaces being emptied
}

// NewController returns a namespace controller over svc.
func NewController(svc *objects.Service, log *slog.Logger) *Controller {
	return &Controller{objects: svc, log: log, active: map[string]bool{}}
}

// Run follows namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	r, _ := c.objects.Catalog().Lookup(namespacesGVR)
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
	for ctx.Err() == nil {
		remaining := c.deleteContent(ctx, name)
		if remaining == 0 {
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

// deleteContent deletes every namespaced object in the namespace and returns how many objects
// were still there (including ones held by finalizers).
func (c *Controller) deleteContent(ctx context.Context, namespace string) int {
	seen := map[schema.GroupResource]bool{}
	remaining := 0
	for _, r := range c.objects.Catalog().All() {
		if !r.Namespaced || seen[r.StorageGroupResource] {
			continue
		}
		seen[r.StorageGroupResource] = true
		items, _, err := c.objects.List(ctx, r, namespace, objects.ListOptions{})
		if err != nil {
			remaining++
			continue
		}
		remaining += len(items)
		for _, item := range items {
			if item.GetDeletionTimestamp() != nil {
				continue
			}
			if _, err := c.objects.Delete(ctx, r, namespace, item.GetName(), objects.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				c.log.Warn("deleting namespace content failed", "namespace", namespace, "resource", r.Name, "name", item.GetName(), "err", err)
			}
		}
	}
	return remaining
}
