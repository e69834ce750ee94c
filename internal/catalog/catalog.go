package catalog

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Catalog is the set of served resources. It is safe for concurrent use; readers get snapshots.
type Catalog struct {
	mu       sync.RWMutex
	builtin  []*Resource            // registration order, which is also discovery order
	custom   map[string][]*Resource // by CRD name
	byGVR    map[schema.GroupVersionResource]*Resource
	groups   map[string]bool // served API groups, "" (core) among them
	revision uint64
	watchers []chan struct{}
}

// New returns an empty catalogue.
func New() *Catalog {
	return &Catalog{custom: map[string][]*Resource{}, byGVR: map[schema.GroupVersionResource]*Resource{}}
}

// AddBuiltin registers built-in resources; it is called at start-up.
func (c *Catalog) AddBuiltin(rs ...*Resource) {
	c.mu.Lock()
	c.builtin = append(c.builtin, rs...)
	c.rebuildLocked()
	c.mu.Unlock()
}

// SetCustom replaces the resources served for the named CRD; nil or empty removes them.
func (c *Catalog) SetCustom(crdName string, rs []*Resource) {
	c.mu.Lock()
	if len(rs) == 0 {
		delete(c.custom, crdName)
	} else {
		c.custom[crdName] = rs
	}
	c.rebuildLocked()
	c.mu.Unlock()
}

// Custom returns the resources currently served for the named CRD.
func (c *Catalog) Custom(crdName string) []*Resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.custom[crdName]
}

func (c *Catalog) rebuildLocked() {
	c.byGVR = make(map[schema.GroupVersionResource]*Resource, len(c.byGVR))
	c.groups = map[string]bool{}
	for _, r := range c.builtin {
		c.byGVR[r.GroupVersionResource()] = r
		c.groups[r.GroupVersion.Group] = true
	}
	for _, rs := range c.custom {
		for _, r := range rs {
			if _, taken := c.byGVR[r.GroupVersionResource()]; !taken {
				c.byGVR[r.GroupVersionResource()] = r
				c.groups[r.GroupVersion.Group] = true
			}
		}
	}
	c.revision++
	for _, w := range c.watchers {
		select {
		case w <- struct{}{}:
		default: // a change is already pending for this watcher
		}
	}
}

// Lookup finds the resource served at gvr.
func (c *Catalog) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	c.mu.RLock()
	r, ok := c.byGVR[gvr]
	c.mu.RUnlock()
	return r, ok
}

// ServesGroup reports whether any resource of the API group is served.
func (c *Catalog) ServesGroup(group string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.groups[group]
}

// Revision changes whenever the catalogue does; caches of derived documents key on it.
func (c *Catalog) Revision() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.revision
}

// All returns every served resource: built-ins in registration order, then custom resources
// ordered by group, version and name.
func (c *Catalog) All() []*Resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := append([]*Resource(nil), c.builtin...)
	var custom []*Resource
	for _, rs := range c.custom {
		for _, r := range rs {
			if c.byGVR[r.GroupVersionResource()] == r {
				custom = append(custom, r)
			}
		}
	}
	sort.Slice(custom, func(i, j int) bool {
		a, b := custom[i], custom[j]
		if a.GroupVersion.Group != b.GroupVersion.Group {
			return a.GroupVersion.Group < b.GroupVersion.Group
		}
		if a.GroupVersion.Version != b.GroupVersion.Version {
			return a.GroupVersion.Version < b.GroupVersion.Version
		}
		return a.Name < b.Name
	})
	return append(out, custom...)
}

// Stored returns the resources whose objects are stored (All without the virtual ones), for
// what walks every object: the garbage collector, namespace deletion.
func (c *Catalog) Stored() []*Resource {
	all := c.All()
	out := all[:0]
	for _, r := range all {
		if !r.Virtual {
			out = append(out, r)
		}
	}
	return out
}

// Changes returns a channel that receives a value after the catalogue changes. Several changes
// may be coalesced into one value.
func (c *Catalog) Changes() <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.watchers = append(c.watchers, ch)
	c.mu.Unlock()
	return ch
}
