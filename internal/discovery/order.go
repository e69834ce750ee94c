package discovery

import (
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationhelper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	upstreamaggregator "github.com/lapis-dev/lapis/internal/upstream/aggregator"
)

// priority is a group version's place in discovery, as an APIService's groupPriorityMinimum and
// versionPriority say it.
type priority struct{ group, version int32 }

const (
	apiRegistrationGroup = "apiregistration.k8s.io"
	// kube's discovery manager lists apiregistration.k8s.io first (its APIRegistrationGroupPriority).
	apiRegistrationPriority = 20001
)

// Priorities of the group versions kube gives no APIService priority: the apiextensions
// discovery controller's for custom resources, the aggregated discovery's default otherwise.
var (
	customResourcePriority = priority{group: 1000, version: 100}
	defaultPriority        = priority{group: 1000, version: 15}
)

// priorities are kube-apiserver's APIService priorities of the built-in group versions.
type priorities map[schema.GroupVersion]upstreamaggregator.APIServicePriority

// local is the priority kube gives a group version lapis serves itself.
func (p priorities) local(gv schema.GroupVersion, custom bool) priority {
	switch {
	case gv.Group == apiRegistrationGroup:
		return priority{group: apiRegistrationPriority}
	case custom:
		return customResourcePriority
	}
	if b, ok := p[gv]; ok {
		return priority{group: b.Group, version: b.Version}
	}
	return defaultPriority
}

// aggregated is the priority of each group version in aggregated discovery: the extension
// servers' as their APIServices set them, the catalogue's own otherwise.
func (p priorities) aggregated(groups []*groupInfo, agg aggregationSnapshot) func(metav1.GroupVersion) priority {
	out := map[metav1.GroupVersion]priority{}
	for _, g := range groups {
		for _, v := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: v.version}
			out[groupVersion(gv)] = p.local(gv, g.custom)
		}
	}
	for gv := range agg.versions {
		if pr, ok := agg.priorities[gv]; ok {
			out[gv] = pr
		}
	}
	return func(gv metav1.GroupVersion) priority { return out[gv] }
}

// withRemoteVersions adds the extension servers' group versions to the catalogue's groups; a
// version the catalogue serves itself stays the catalogue's.
func withRemoteVersions(named []apidiscoveryv2.APIGroupDiscovery, agg aggregationSnapshot) []apidiscoveryv2.APIGroupDiscovery {
	index := map[string]int{}
	for i, g := range named {
		index[g.Name] = i
	}
	for gv, v := range agg.versions {
		i, ok := index[gv.Group]
		if !ok {
			named = append(named, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
			i = len(named) - 1
			index[gv.Group] = i
		}
		if !hasVersion(named[i], v.Version) {
			named[i].Versions = append(named[i].Versions, v)
		}
	}
	return named
}

func hasVersion(g apidiscoveryv2.APIGroupDiscovery, version string) bool {
	for _, v := range g.Versions {
		if v.Version == version {
			return true
		}
	}
	return false
}

// sortAggregated orders groups as kube's aggregated discovery does: versions by priority, then
// kube-aware version order; groups by their versions' highest group priority, then name.
func sortAggregated(groups []apidiscoveryv2.APIGroupDiscovery, prio func(metav1.GroupVersion) priority) {
	groupPriority := map[string]int32{}
	for _, g := range groups {
		for _, v := range g.Versions {
			if p := prio(metav1.GroupVersion{Group: g.Name, Version: v.Version}).group; p > groupPriority[g.Name] {
				groupPriority[g.Name] = p
			}
		}
		sort.SliceStable(g.Versions, func(i, j int) bool {
			pi := prio(metav1.GroupVersion{Group: g.Name, Version: g.Versions[i].Version}).version
			pj := prio(metav1.GroupVersion{Group: g.Name, Version: g.Versions[j].Version}).version
			if pi == pj {
				return version.CompareKubeAwareVersionStrings(g.Versions[i].Version, g.Versions[j].Version) > 0
			}
			return pi > pj
		})
	}
	sort.SliceStable(groups, func(i, j int) bool {
		pi, pj := groupPriority[groups[i].Name], groupPriority[groups[j].Name]
		if pi == pj {
			return groups[i].Name < groups[j].Name
		}
		return pi > pj
	})
}

// apiServiceOrder is /apis's list as kube's aggregator makes it: apiregistration.k8s.io first,
// then a group for each group of APIServices in their priority order, versions by priority.
// The catalogue's group versions stand for their local APIServices, so that a group is listed
// as soon as it is served (its APIService, made by the autoregister controllers, says the same).
func apiServiceOrder(groups []*groupInfo, agg aggregationSnapshot, prio priorities) []metav1.APIGroup {
	byName := map[string]*apiregistrationv1.APIService{}
	var out []metav1.APIGroup
	for _, g := range groups {
		for _, v := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: v.version}
			switch g.name {
			case "":
				continue
			case apiRegistrationGroup:
				out = appendVersion(out, gv)
				continue
			}
			p := prio.local(gv, g.custom)
			byName[v.version+"."+g.name] = &apiregistrationv1.APIService{
				ObjectMeta: metav1.ObjectMeta{Name: v.version + "." + g.name},
				Spec:       apiregistrationv1.APIServiceSpec{Group: g.name, Version: v.version, GroupPriorityMinimum: p.group, VersionPriority: p.version},
			}
		}
	}
	for _, s := range agg.apiServices {
		if s.Spec.Group != "" && s.Spec.Group != apiRegistrationGroup {
			byName[s.Name] = s
		}
	}
	all := make([]*apiregistrationv1.APIService, 0, len(byName))
	for _, s := range byName {
		all = append(all, s)
	}
	for _, group := range apiregistrationhelper.SortedByGroupAndVersion(all) {
		for _, s := range group {
			out = appendVersion(out, schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version})
		}
	}
	return out
}

// appendVersion adds gv to its group in groups (the last one, or a new one), its first version
// the preferred.
func appendVersion(groups []metav1.APIGroup, gv schema.GroupVersion) []metav1.APIGroup {
	entry := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	if n := len(groups); n > 0 && groups[n-1].Name == gv.Group {
		groups[n-1].Versions = append(groups[n-1].Versions, entry)
		return groups
	}
	return append(groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{entry}, PreferredVersion: entry})
}
