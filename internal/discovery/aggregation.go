package discovery

import (
	"maps"
	"net/http"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// aggregation is what the aggregation layer adds to the catalogue's discovery: the APIServices,
// which name and order the groups of /apis and /apis/GROUP as kube's aggregator lists them, and
// the extension servers' group versions with their priorities, which kube's discovery manager
// fetches (Handler implements its aggregated.ResourceManager).
type aggregation struct {
	mu          sync.Mutex
	revision    uint64
	apiServices []*apiregistrationv1.APIService
	versions    map[metav1.GroupVersion]apidiscoveryv2.APIVersionDiscovery
	priorities  map[metav1.GroupVersion]priority
	invalidated []func()
}

// aggregationSnapshot is the aggregation at one revision, for building documents.
type aggregationSnapshot struct {
	revision    uint64
	apiServices []*apiregistrationv1.APIService
	versions    map[metav1.GroupVersion]apidiscoveryv2.APIVersionDiscovery
	priorities  map[metav1.GroupVersion]priority
}

func (a *aggregation) snapshot() aggregationSnapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return aggregationSnapshot{revision: a.revision, apiServices: a.apiServices,
		versions: maps.Clone(a.versions), priorities: maps.Clone(a.priorities)}
}

func (a *aggregation) currentRevision() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.revision
}

// change applies f under the lock and moves to a new revision.
func (a *aggregation) change(f func()) {
	a.mu.Lock()
	if a.versions == nil {
		a.versions = map[metav1.GroupVersion]apidiscoveryv2.APIVersionDiscovery{}
		a.priorities = map[metav1.GroupVersion]priority{}
	}
	f()
	a.revision++
	callbacks := a.invalidated
	a.mu.Unlock()
	for _, cb := range callbacks {
		cb()
	}
}

// SetAPIServices tells discovery every APIService there is, local and remote: kube's aggregator
// lists /apis and /apis/GROUP from them.
func (h *Handler) SetAPIServices(apiServices []*apiregistrationv1.APIService) {
	h.agg.change(func() { h.agg.apiServices = apiServices })
}

// AddGroupVersion adds or replaces an extension server's group version.
func (h *Handler) AddGroupVersion(groupName string, value apidiscoveryv2.APIVersionDiscovery) {
	h.agg.change(func() {
		gv := metav1.GroupVersion{Group: groupName, Version: value.Version}
		h.agg.versions[gv] = value
		if _, ok := h.agg.priorities[gv]; !ok {
			h.agg.priorities[gv] = priority{group: 1000, version: 15} // kube's default
		}
	})
}

// SetGroupVersionPriority sets the priority of a group version.
func (h *Handler) SetGroupVersionPriority(gv metav1.GroupVersion, groupPriority, versionPriority int) {
	h.agg.change(func() { h.agg.priorities[gv] = priority{group: int32(groupPriority), version: int32(versionPriority)} })
}

// RemoveGroup removes every version of an extension server's group.
func (h *Handler) RemoveGroup(groupName string) {
	h.agg.change(func() {
		for gv := range h.agg.versions {
			if gv.Group == groupName {
				delete(h.agg.versions, gv)
				delete(h.agg.priorities, gv)
			}
		}
	})
}

// RemoveGroupVersion removes an extension server's group version.
func (h *Handler) RemoveGroupVersion(gv metav1.GroupVersion) {
	h.agg.change(func() {
		delete(h.agg.versions, gv)
		delete(h.agg.priorities, gv)
	})
}

// SetGroups replaces the extension servers' group versions.
func (h *Handler) SetGroups(groups []apidiscoveryv2.APIGroupDiscovery) {
	h.agg.change(func() {
		clear(h.agg.versions)
		for _, g := range groups {
			for _, v := range g.Versions {
				h.agg.versions[metav1.GroupVersion{Group: g.Name, Version: v.Version}] = v
			}
		}
	})
}

// WithSource returns h: the aggregation layer is the only source lapis's discovery takes group
// versions from (the catalogue is the other, read directly).
func (h *Handler) WithSource(aggregated.Source) aggregated.ResourceManager { return h }

// AddInvalidationCallback calls callback whenever the aggregation changes.
func (h *Handler) AddInvalidationCallback(callback func()) {
	h.agg.mu.Lock()
	defer h.agg.mu.Unlock()
	h.agg.invalidated = append(h.agg.invalidated, callback)
}

var _ aggregated.ResourceManager = (*Handler)(nil)
var _ http.Handler = (*Handler)(nil)

// servesGroup reports whether discovery lists group: the catalogue serves it, or an APIService
// names it.
func (h *Handler) servesGroup(group string, agg aggregationSnapshot) bool {
	if h.cat.ServesGroup(group) {
		return true
	}
	for _, s := range agg.apiServices {
		if s.Spec.Group == group {
			return true
		}
	}
	return false
}

// groupVersion is a group version's pair, as the maps key it.
func groupVersion(gv schema.GroupVersion) metav1.GroupVersion {
	return metav1.GroupVersion{Group: gv.Group, Version: gv.Version}
}
