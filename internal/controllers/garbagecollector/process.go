package garbagecollector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

var (
	// errUnresolvable: an owner reference names a kind the catalogue does not serve (yet).
	errUnresolvable = errors.New("owner kind is not served")
	// errClusterScopedDependent: a cluster-scoped object names a namespaced owner, which can
	// never resolve; kube leaves such objects alone.
	errClusterScopedDependent = errors.New("cluster-scoped objects cannot refer to namespaced owners")
	// errIndexBehind: storage knows of dependents the index has not seen yet; retry shortly.
	errIndexBehind = errors.New("the index has not caught up with storage")
	// errNoChange stops an update that has nothing to write.
	errNoChange = errors.New("nothing to change")
)

func (c *Collector) work(ctx context.Context) {
	for {
		uid, quit := c.queue.Get()
		if quit {
			return
		}
		c.pause.RLock()
		err := c.process(ctx, uid)
		c.pause.RUnlock()
		switch {
		case err == nil:
			c.queue.Forget(uid)
		case ctx.Err() != nil:
		default:
			if errors.Is(err, errUnresolvable) {
				c.mu.Lock()
				c.unresolved[uid] = true
				c.mu.Unlock()
			} else if !apierrors.IsConflict(err) && !errors.Is(err, errIndexBehind) {
				c.log.Warn("garbage collection failed; retrying", "uid", uid, "err", err)
			}
			c.queue.AddRateLimited(uid)
		}
		c.queue.Done(uid)
	}
}

// snapshot copies the index's node for uid.
func (c *Collector) snapshot(uid types.UID) (node, *catalog.Resource, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[uid]
	if n == nil {
		return node{}, nil, false
	}
	f := c.followed[n.gr]
	if f == nil {
		return node{}, nil, false
	}
	return *n, f.r, true
}

// dependents copies the index's nodes of the objects that refer to owner.
func (c *Collector) dependents(owner types.UID) []node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []node
	for uid := range c.owned[owner] {
		if n := c.nodes[uid]; n != nil {
			out = append(out, *n)
		}
	}
	return out
}

// process does what the object uid now calls for, reading it from storage first.
func (c *Collector) process(ctx context.Context, uid types.UID) error {
	n, r, ok := c.snapshot(uid)
	if !ok {
		return nil
	}
	obj, err := c.objects.Get(ctx, r, n.namespace, n.name)
	if apierrors.IsNotFound(err) {
		return nil // its deletion is on its way to the index
	}
	if err != nil {
		return err
	}
	if obj.GetUID() != uid {
		return nil
	}
	if obj.GetDeletionTimestamp() != nil {
		switch fs := obj.GetFinalizers(); {
		case slices.Contains(fs, metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, r, obj)
		case slices.Contains(fs, metav1.FinalizerDeleteDependents):
			return c.deleteDependents(ctx, r, obj)
		}
		return nil // being deleted: its dependents are looked at once it is gone
	}
	if len(obj.GetOwnerReferences()) == 0 {
		return nil
	}
	return c.collect(ctx, r, obj)
}

// orphanDependents removes the references to owner from its dependents, then the orphan
// finalizer from owner.
func (c *Collector) orphanDependents(ctx context.Context, r *catalog.Resource, owner *unstructured.Unstructured) error {
	// Storage, not the index, says which objects refer to owner: one created a moment before
	// may not have reached the index, and would be collected once owner is gone.
	deps, err := c.scanDependents(ctx, owner.GetUID())
	if err != nil {
		return err
	}
	for _, dep := range deps {
		if err := c.removeOwnerReferences(ctx, dep, owner.GetUID()); err != nil {
			return fmt.Errorf("orphaning %s %s/%s: %w", dep.gr, dep.namespace, dep.name, err)
		}
	}
	return c.removeFinalizer(ctx, r, owner, metav1.FinalizerOrphanDependents)
}

// deleteDependents is foreground deletion: every dependent is looked at (and deleted), and the
// foregroundDeletion finalizer goes once no dependent blocks the owner's deletion.
func (c *Collector) deleteDependents(ctx context.Context, r *catalog.Resource, owner *unstructured.Unstructured) error {
	uid := owner.GetUID()
	blocked := false
	for _, dep := range c.dependents(uid) {
		if !dep.deleting {
			c.queue.Add(dep.uid)
		}
		if !dep.blocks(uid) || blocked {
			continue
		}
		// The index may lag: check the dependent still exists and still blocks.
		still, err := c.stillBlocks(ctx, dep, uid)
		if err != nil {
			return err
		}
		blocked = still
	}
	if blocked {
		return nil // the dependents' deletions bring the owner back here
	}
	// Before letting the owner go, make sure storage agrees: a blocking dependent created a
	// moment ago may not have reached the index yet.
	deps, err := c.scanDependents(ctx, uid)
	if err != nil {
		return err
	}
	for _, dep := range deps {
		if dep.blocks(uid) {
			return errIndexBehind
		}
	}
	return c.removeFinalizer(ctx, r, owner, metav1.FinalizerDeleteDependents)
}

// scanDependents reads from storage every object that refers to owner.
func (c *Collector) scanDependents(ctx context.Context, owner types.UID) ([]node, error) {
	c.mu.Lock()
	rs := make([]*catalog.Resource, 0, len(c.followed))
	for _, f := range c.followed {
		rs = append(rs, f.r)
	}
	c.mu.Unlock()
	needle := []byte(owner)
	var out []node
	for _, r := range rs {
		list, err := c.objects.ListRaw(ctx, r, "", objects.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, raw := range list.Items {
			if !bytes.Contains(raw, needle) {
				continue // cheaper than decoding every object
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(raw); err != nil {
				continue
			}
			if hasOwner(obj.GetOwnerReferences(), owner) {
				out = append(out, *newNode(r.StorageGroupResource, obj))
			}
		}
	}
	return out, nil
}

func (c *Collector) stillBlocks(ctx context.Context, dep node, owner types.UID) (bool, error) {
	c.mu.Lock()
	f := c.followed[dep.gr]
	c.mu.Unlock()
	if f == nil {
		return false, nil
	}
	obj, err := c.objects.Get(ctx, f.r, dep.namespace, dep.name)
	if apierrors.IsNotFound(err) || (err == nil && obj.GetUID() != dep.uid) {
		c.mu.Lock()
		c.removeLocked(dep.uid)
		c.mu.Unlock()
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true, nil
		}
	}
	return false, nil
}

// collect looks at an object with owners: when none of them is left it is deleted; references
// to owners that are gone, or that delete their dependents in the foreground, are removed
// while another owner remains.
func (c *Collector) collect(ctx context.Context, r *catalog.Resource, obj *unstructured.Unstructured) error {
	var solid, dangling, waiting []types.UID
	for _, ref := range obj.GetOwnerReferences() {
		state, err := c.ownerState(ctx, obj, ref)
		if errors.Is(err, errClusterScopedDependent) {
			c.log.Debug("cluster-scoped object refers to a namespaced owner", "name", obj.GetName(), "owner", ref.Name)
			return nil
		}
		if err != nil {
			return err
		}
		switch state {
		case ownerSolid:
			solid = append(solid, ref.UID)
		case ownerGone:
			dangling = append(dangling, ref.UID)
		case ownerWaiting:
			waiting = append(waiting, ref.UID)
		}
	}
	self := node{uid: obj.GetUID(), gr: r.StorageGroupResource, namespace: obj.GetNamespace(), name: obj.GetName()}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		return c.removeOwnerReferences(ctx, self, append(dangling, waiting...)...)
	case len(waiting) > 0 && len(c.dependents(obj.GetUID())) > 0:
		// An owner waits for its dependents, and this one has dependents of its own: delete it
		// in the foreground too. When one of those is itself deleting its dependents there may
		// be a cycle; kube then makes this object's references non-blocking first.
		rv := obj.GetResourceVersion()
		if slices.ContainsFunc(c.dependents(obj.GetUID()), func(d node) bool { return d.deletingDependents() }) {
			updated, err := c.unblockOwnerReferences(ctx, r, obj)
			if err != nil {
				return err
			}
			rv = updated
		}
		return c.delete(ctx, r, obj, rv, metav1.DeletePropagationForeground)
	default:
		// No owner is left: collect it, honouring a propagation finalizer it already carries.
		policy := metav1.DeletePropagationBackground
		switch fs := obj.GetFinalizers(); {
		case slices.Contains(fs, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(fs, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return c.delete(ctx, r, obj, obj.GetResourceVersion(), policy)
	}
}

type ownerStatus int

const (
	ownerSolid   ownerStatus = iota // exists
	ownerGone                       // deleted, or never there
	ownerWaiting                    // exists, deleting its dependents in the foreground
)

// ownerState reads the owner ref names, as seen from dependent: namespaced owners live in the
// dependent's namespace, and the owner must carry the uid the reference names.
func (c *Collector) ownerState(ctx context.Context, dependent *unstructured.Unstructured, ref metav1.OwnerReference) (ownerStatus, error) {
	r := c.resourceForKind(ref.APIVersion, ref.Kind)
	if r == nil {
		return 0, fmt.Errorf("%w: %s, Kind=%s", errUnresolvable, ref.APIVersion, ref.Kind)
	}
	namespace := ""
	if r.Namespaced {
		if dependent.GetNamespace() == "" {
			return 0, errClusterScopedDependent
		}
		namespace = dependent.GetNamespace()
	}
	owner, err := c.objects.Get(ctx, r, namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		return ownerGone, nil
	case err != nil:
		return 0, err
	case owner.GetUID() != ref.UID:
		return ownerGone, nil
	case owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// resourceForKind maps an ownerReference's apiVersion and kind to a served resource: the one at
// that version, else another version of the same group and kind (the object is the same).
func (c *Collector) resourceForKind(apiVersion, kind string) *catalog.Resource {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	if rev := c.cat.Revision(); c.kinds == nil || rev != c.kindsRev {
		c.kinds = map[schema.GroupKind][]*catalog.Resource{}
		for _, r := range c.cat.Stored() {
			gk := r.GroupVersionKind().GroupKind()
			c.kinds[gk] = append(c.kinds[gk], r)
		}
		c.kindsRev = rev
	}
	candidates := c.kinds[gv.WithKind(kind).GroupKind()]
	c.mu.Unlock()
	for _, r := range candidates {
		if r.GroupVersion == gv {
			return r
		}
	}
	if len(candidates) > 0 {
		return candidates[0]
	}
	return nil
}

// delete deletes obj as it was at rv with policy; a change since is retried with a fresh look.
func (c *Collector) delete(ctx context.Context, r *catalog.Resource, obj *unstructured.Unstructured, rv string, policy metav1.DeletionPropagation) error {
	uid := obj.GetUID()
	_, err := c.objects.Delete(ctx, r, obj.GetNamespace(), obj.GetName(), objects.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// removeOwnerReferences drops the references to owners from dep.
func (c *Collector) removeOwnerReferences(ctx context.Context, dep node, owners ...types.UID) error {
	c.mu.Lock()
	f := c.followed[dep.gr]
	c.mu.Unlock()
	if f == nil {
		return nil
	}
	_, err := c.update(ctx, f.r, dep.namespace, dep.name, dep.uid, func(cur *unstructured.Unstructured) bool {
		refs := cur.GetOwnerReferences()
		keep := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool { return slices.Contains(owners, ref.UID) })
		if len(keep) == len(refs) {
			return false
		}
		if len(keep) == 0 {
			keep = nil
		}
		cur.SetOwnerReferences(keep)
		return true
	})
	return err
}

// unblockOwnerReferences turns obj's blocking references non-blocking and returns the
// resourceVersion written.
func (c *Collector) unblockOwnerReferences(ctx context.Context, r *catalog.Resource, obj *unstructured.Unstructured) (string, error) {
	rv, err := c.update(ctx, r, obj.GetNamespace(), obj.GetName(), obj.GetUID(), func(cur *unstructured.Unstructured) bool {
		refs := cur.GetOwnerReferences()
		changed := false
		for i := range refs {
			if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
				no := false
				refs[i].BlockOwnerDeletion = &no
				changed = true
			}
		}
		cur.SetOwnerReferences(refs)
		return changed
	})
	if rv == "" {
		rv = obj.GetResourceVersion()
	}
	return rv, err
}

// removeFinalizer removes finalizer from obj; with no finalizer left the object goes.
func (c *Collector) removeFinalizer(ctx context.Context, r *catalog.Resource, obj *unstructured.Unstructured, finalizer string) error {
	_, err := c.update(ctx, r, obj.GetNamespace(), obj.GetName(), obj.GetUID(), func(cur *unstructured.Unstructured) bool {
		fs := cur.GetFinalizers()
		keep := slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == finalizer })
		if len(keep) == len(fs) {
			return false
		}
		if len(keep) == 0 {
			keep = nil
		}
		cur.SetFinalizers(keep)
		return true
	})
	return err
}

// update applies change to the object uid as it is now; change reports whether it changed
// anything. It returns the resourceVersion written, "" when nothing was.
func (c *Collector) update(ctx context.Context, r *catalog.Resource, namespace, name string, uid types.UID, change func(*unstructured.Unstructured) bool) (string, error) {
	res, err := c.objects.Update(ctx, r, namespace, name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if cur.GetUID() != uid || !change(cur) {
			return nil, errNoChange
		}
		cur.SetResourceVersion("")
		return cur, nil
	}, objects.WriteOptions{Manager: manager})
	if errors.Is(err, errNoChange) || apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return res.Object.GetResourceVersion(), nil
}
