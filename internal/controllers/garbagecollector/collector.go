package garbagecollector

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

const (
	// manager names the collector's writes in managedFields.
	manager = "generic-garbage-collector"
	workers = 4
	// resyncInterval is how often every followed resource is listed again, to notice deletions a
	// broken watch let through.
	resyncInterval = time.Minute
	// tombstoneTTL is how long a deleted uid is remembered, so a list older than its deletion
	// does not bring it back.
	tombstoneTTL = 10 * time.Minute
)

// Collector is the garbage collector.
type Collector struct {
	objects *objects.Service
	cat     *catalog.Catalog
	log     *slog.Logger
	queue   workqueue.TypedRateLimitingInterface[types.UID]

	// pause is held for reading while an item is processed, and for writing while resources
	// start being followed, so that no decision is taken on a half-listed resource.
	pause sync.RWMutex

	mu         sync.Mutex
	nodes      map[types.UID]*node
	owned      map[types.UID]map[types.UID]bool // owner uid → uids of objects referring to it
	tombstones map[types.UID]time.Time
	followed   map[schema.GroupResource]*follow
	unresolved map[types.UID]bool // items whose owner kinds the catalogue does not know yet
	kindsRev   uint64
	kinds      map[schema.GroupKind][]*catalog.Resource
}

// follow is one resource the collector follows.
type follow struct {
	r      *catalog.Resource
	cancel context.CancelFunc
}

// node is what the index keeps of an object.
type node struct {
	uid        types.UID
	gr         schema.GroupResource
	kind       schema.GroupKind
	namespace  string
	name       string
	rv         int64
	owners     []metav1.OwnerReference
	deleting   bool
	orphan     bool // carries the orphan finalizer
	foreground bool // carries the foregroundDeletion finalizer
}

// deletingDependents is kube's "waiting for dependents deletion": foreground deletion under way.
func (n *node) deletingDependents() bool { return n.deleting && n.foreground }

// blocks reports whether n holds up the foreground deletion of owner.
func (n *node) blocks(owner types.UID) bool {
	for _, ref := range n.owners {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// New returns a garbage collector over svc.
func New(svc *objects.Service, log *slog.Logger) *Collector {
	return &Collector{
		objects: svc,
		cat:     svc.Catalog(),
		log:     log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// Retries are mostly "the index has not seen storage's latest yet": keep them quick.
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](5*time.Millisecond, time.Second),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "garbage-collector"}),
		nodes:      map[types.UID]*node{},
		owned:      map[types.UID]map[types.UID]bool{},
		tombstones: map[types.UID]time.Time{},
		followed:   map[schema.GroupResource]*follow{},
		unresolved: map[types.UID]bool{},
	}
}

// Run collects garbage until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	changes := c.cat.Changes()
	c.syncResources(ctx)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx)
		}()
	}
	ticker := time.NewTicker(resyncInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			c.queue.ShutDown()
			wg.Wait()
			return
		case <-changes:
			c.syncResources(ctx)
			c.retryUnresolved()
		case <-ticker.C:
			c.syncResources(ctx)
			c.resync(ctx)
		}
	}
}

// followable picks, for each storage resource in the catalogue, the version to follow it at:
// the storage version when it is served.
func (c *Collector) followable() map[schema.GroupResource]*catalog.Resource {
	out := map[schema.GroupResource]*catalog.Resource{}
	for _, r := range c.cat.Stored() {
		cur, seen := out[r.StorageGroupResource]
		if !seen || (!isStorageVersion(cur) && isStorageVersion(r)) {
			out[r.StorageGroupResource] = r
		}
	}
	return out
}

func isStorageVersion(r *catalog.Resource) bool {
	return r.StorageAPIVersion() == r.GroupVersion.String()
}

// syncResources follows the resources the catalogue now serves and stops following those it
// no longer does.
func (c *Collector) syncResources(ctx context.Context) {
	want := c.followable()
	var start []*catalog.Resource
	var gone []schema.GroupResource
	c.mu.Lock()
	for gr, f := range c.followed {
		if r, ok := want[gr]; !ok || r.GroupVersionResource() != f.r.GroupVersionResource() {
			f.cancel()
			delete(c.followed, gr)
			if !ok {
				gone = append(gone, gr)
			}
		}
	}
	for gr, r := range want {
		if _, ok := c.followed[gr]; !ok {
			start = append(start, r)
		}
	}
	for _, gr := range gone {
		for uid, n := range c.nodes {
			if n.gr == gr {
				c.removeLocked(uid)
			}
		}
	}
	c.mu.Unlock()
	if len(start) == 0 {
		return
	}
	c.pause.Lock()
	defer c.pause.Unlock()
	for _, r := range start {
		items, meta, err := c.objects.List(ctx, r, "", objects.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("garbage collector cannot list a resource; retrying later", "resource", r.GroupVersionResource().String(), "err", err)
			}
			continue
		}
		fctx, cancel := context.WithCancel(ctx)
		f := &follow{r: r, cancel: cancel}
		c.mu.Lock()
		c.followed[r.StorageGroupResource] = f
		c.replaceLocked(r.StorageGroupResource, items, meta.ResourceVersion)
		c.mu.Unlock()
		go c.objects.FollowMetadata(fctx, r, func(obj *unstructured.Unstructured, deleted bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.followed[r.StorageGroupResource] != f {
				return // no longer followed at this version
			}
			if deleted {
				c.removeLocked(obj.GetUID())
			} else {
				c.upsertLocked(r.StorageGroupResource, obj)
			}
		})
	}
}

// resync lists every followed resource again: objects gone from storage without the watch
// saying so leave the index.
func (c *Collector) resync(ctx context.Context) {
	c.mu.Lock()
	fs := make([]*follow, 0, len(c.followed))
	for _, f := range c.followed {
		fs = append(fs, f)
	}
	for uid, at := range c.tombstones {
		if time.Since(at) > tombstoneTTL {
			delete(c.tombstones, uid)
		}
	}
	c.mu.Unlock()
	for _, f := range fs {
		items, meta, err := c.objects.List(ctx, f.r, "", objects.ListOptions{})
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.followed[f.r.StorageGroupResource] == f {
			c.replaceLocked(f.r.StorageGroupResource, items, meta.ResourceVersion)
		}
		c.mu.Unlock()
	}
}

// replaceLocked brings the index's objects of gr to a list of them taken at listRV.
func (c *Collector) replaceLocked(gr schema.GroupResource, items []*unstructured.Unstructured, listRV string) {
	rv, _ := strconv.ParseInt(listRV, 10, 64)
	present := make(map[types.UID]bool, len(items))
	for _, item := range items {
		present[item.GetUID()] = true
		c.upsertLocked(gr, item)
	}
	for uid, n := range c.nodes {
		if n.gr == gr && !present[uid] && n.rv <= rv {
			c.removeLocked(uid)
		}
	}
}

func newNode(gr schema.GroupResource, obj *unstructured.Unstructured) *node {
	n := &node{
		uid:       obj.GetUID(),
		gr:        gr,
		kind:      obj.GroupVersionKind().GroupKind(),
		namespace: obj.GetNamespace(),
		name:      obj.GetName(),
		owners:    obj.GetOwnerReferences(),
		deleting:  obj.GetDeletionTimestamp() != nil,
	}
	n.rv, _ = strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	for _, f := range obj.GetFinalizers() {
		switch f {
		case metav1.FinalizerOrphanDependents:
			n.orphan = true
		case metav1.FinalizerDeleteDependents:
			n.foreground = true
		}
	}
	return n
}

// upsertLocked records an object's current state and queues what the change calls for.
func (c *Collector) upsertLocked(gr schema.GroupResource, obj *unstructured.Unstructured) {
	n := newNode(gr, obj)
	if n.uid == "" {
		return
	}
	if _, dead := c.tombstones[n.uid]; dead {
		return
	}
	old := c.nodes[n.uid]
	if old != nil && n.rv <= old.rv {
		return // not newer than what the index has
	}
	c.nodes[n.uid] = n

	// Re-index the ownerReferences. An owner deleting its dependents in the foreground may be
	// done once a reference to it goes or stops blocking.
	var before []metav1.OwnerReference
	if old != nil {
		before = old.owners
	}
	for _, ref := range before {
		if !hasOwner(n.owners, ref.UID) {
			c.unindexLocked(n.uid, ref.UID)
		}
	}
	for _, ref := range n.owners {
		deps := c.owned[ref.UID]
		if deps == nil {
			deps = map[types.UID]bool{}
			c.owned[ref.UID] = deps
		}
		deps[n.uid] = true
	}
	if old != nil {
		for _, ref := range before {
			if old.blocks(ref.UID) && !n.blocks(ref.UID) {
				c.enqueueIfDeletingDependentsLocked(ref.UID)
			}
		}
	}

	if n.deleting && (n.orphan || n.foreground) {
		c.queue.Add(n.uid)
	}
	if n.deletingDependents() && (old == nil || !old.deletingDependents()) {
		for dep := range c.owned[n.uid] {
			c.queue.Add(dep)
		}
	}
	if !n.deleting && len(n.owners) > 0 && (old == nil || !sameOwners(old.owners, n.owners)) && c.doubtfulOwnersLocked(n) {
		c.queue.Add(n.uid)
	}
}

// removeLocked forgets a deleted object and queues its dependents, and its owners that wait for
// their dependents to go.
func (c *Collector) removeLocked(uid types.UID) {
	if uid == "" {
		return
	}
	c.tombstones[uid] = time.Now()
	if n := c.nodes[uid]; n != nil {
		delete(c.nodes, uid)
		for _, ref := range n.owners {
			c.unindexLocked(uid, ref.UID)
			c.enqueueIfDeletingDependentsLocked(ref.UID)
		}
	}
	for dep := range c.owned[uid] {
		c.queue.Add(dep)
	}
}

func (c *Collector) unindexLocked(dependent, owner types.UID) {
	if deps := c.owned[owner]; deps != nil {
		delete(deps, dependent)
		if len(deps) == 0 {
			delete(c.owned, owner)
		}
	}
}

func (c *Collector) enqueueIfDeletingDependentsLocked(uid types.UID) {
	if o := c.nodes[uid]; o != nil && o.deletingDependents() {
		c.queue.Add(uid)
	}
}

// doubtfulOwnersLocked reports whether one of n's owners is not known to exist as referenced,
// or is deleting its dependents: then n needs a look.
func (c *Collector) doubtfulOwnersLocked(n *node) bool {
	for _, ref := range n.owners {
		o := c.nodes[ref.UID]
		if o == nil || o.name != ref.Name || o.kind != refGroupKind(ref) || o.deletingDependents() ||
			(o.namespace != "" && o.namespace != n.namespace) {
			return true
		}
	}
	return false
}

func refGroupKind(ref metav1.OwnerReference) schema.GroupKind {
	return schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
}

func hasOwner(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, ref := range refs {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID || a[i].Name != b[i].Name || a[i].Kind != b[i].Kind || a[i].APIVersion != b[i].APIVersion {
			return false
		}
	}
	return true
}

// retryUnresolved queues again the items that waited for an owner kind to be served.
func (c *Collector) retryUnresolved() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid := range c.unresolved {
		c.queue.Add(uid)
	}
	clear(c.unresolved)
}
