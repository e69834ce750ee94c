package discovery

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// terminatingVerbs are what the apiextensions discovery controller advertises for the custom
// resources of a CRD being deleted (updates are still served, for finalizers to be removed).
var terminatingVerbs = []string{"delete", "deletecollection", "get", "list", "watch"}

const (
	aggregatedGroup = "apidiscovery.k8s.io"
	aggregatedKind  = "APIGroupDiscoveryList"
)

// aggregatedVersions are the apidiscovery.k8s.io versions served; their JSON forms are identical
// apart from apiVersion.
var aggregatedVersions = []string{"v2", "v2beta1"}

// documents holds every discovery document for one catalogue revision, encoded.
type documents struct {
	revision uint64              // the catalogue's
	agg      aggregationSnapshot // what the aggregation layer added
	// coreVersions are the versions listed by /api (which embeds the request's host, so it is
	// encoded per request).
	coreVersions []string
	// legacy maps a path ("/apis", "/apis/apps", "/api/v1", "/apis/apps/v1") to its document.
	legacy map[string][]byte
	// aggregated maps "/api" and "/apis" to their aggregated documents.
	aggregated map[string]*aggregatedDoc
}

type aggregatedDoc struct {
	etag      string            // quoted, as sent in the ETag header
	byVersion map[string][]byte // apidiscovery.k8s.io version -> document
}

type groupInfo struct {
	name     string
	custom   bool // served by the apiextensions server (custom resources) alone
	versions []*versionInfo
}

type versionInfo struct {
	version   string
	resources []*catalog.Resource
}

// build encodes every document for the given resources and aggregation.
func build(revision uint64, all []*catalog.Resource, agg aggregationSnapshot, prio priorities) *documents {
	d := &documents{
		revision:   revision,
		agg:        agg,
		legacy:     map[string][]byte{},
		aggregated: map[string]*aggregatedDoc{},
	}
	groups := groupResources(all)
	storage := builtinStorageVersions(all)

	var core []apidiscoveryv2.APIGroupDiscovery
	var named []apidiscoveryv2.APIGroupDiscovery
	for _, g := range groups {
		group := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		for _, v := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: v.version}
			list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			versionDoc := apidiscoveryv2.APIVersionDiscovery{Version: v.version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, r := range v.resources {
				legacy, aggregated := describe(r, storage)
				list.APIResources = append(list.APIResources, legacy...)
				versionDoc.Resources = append(versionDoc.Resources, aggregated)
			}
			group.Versions = append(group.Versions, versionDoc)
			if g.name == "" {
				list.APIVersion = "" // kube strips apiVersion from core discovery documents
				d.coreVersions = append(d.coreVersions, v.version)
				d.legacy["/api/"+v.version] = encode(list)
			} else {
				d.legacy["/apis/"+gv.String()] = encode(list)
			}
		}
		if g.name == "" {
			core = append(core, group)
			continue
		}
		named = append(named, group)
	}
	named = withRemoteVersions(named, agg)
	sortAggregated(named, prio.aggregated(groups, agg))
	d.addGroupDocuments(apiServiceOrder(groups, agg, prio))
	d.aggregated["/api"] = encodeAggregated(core)
	d.aggregated["/apis"] = encodeAggregated(named)
	return d
}

// addGroupDocuments encodes /apis and each /apis/GROUP from the groups in their order.
func (d *documents) addGroupDocuments(groups []metav1.APIGroup) {
	groupList := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, g := range groups {
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		d.legacy["/apis/"+g.Name] = encode(g)
		g.TypeMeta = metav1.TypeMeta{} // list entries carry no type
		groupList.Groups = append(groupList.Groups, g)
	}
	d.legacy["/apis"] = encode(groupList)
}

// groupResources groups resources by group and version, in order of first appearance (built-ins
// in catalogue order, then custom groups). Versions of custom groups are ordered as kube orders
// CRD versions (kube-aware version order, so the preferred version is the highest); resources
// within a version are ordered by name.
func groupResources(all []*catalog.Resource) []*groupInfo {
	var groups []*groupInfo
	byGroup := map[string]*groupInfo{}
	byGV := map[schema.GroupVersion]*versionInfo{}
	custom := map[string]bool{}
	for _, r := range all {
		gv := r.GroupVersion
		g := byGroup[gv.Group]
		if g == nil {
			g = &groupInfo{name: gv.Group}
			byGroup[gv.Group] = g
			groups = append(groups, g)
			custom[gv.Group] = true
		}
		if !r.ServedByAPIExtensions {
			custom[gv.Group] = false
		}
		v := byGV[gv]
		if v == nil {
			v = &versionInfo{version: gv.Version}
			byGV[gv] = v
			g.versions = append(g.versions, v)
		}
		v.resources = append(v.resources, r)
	}
	for _, g := range groups {
		g.custom = custom[g.name]
		if g.custom {
			sort.SliceStable(g.versions, func(i, j int) bool {
				return version.CompareKubeAwareVersionStrings(g.versions[i].version, g.versions[j].version) > 0
			})
		}
		for _, v := range g.versions {
			sort.SliceStable(v.resources, func(i, j int) bool { return v.resources[i].Name < v.resources[j].Name })
		}
	}
	return groups
}

// builtinStorageVersions maps each built-in storage group/resource to the version its objects are
// stored at: the first version the catalogue registers for it, which is the preferred version.
func builtinStorageVersions(all []*catalog.Resource) map[schema.GroupResource]schema.GroupVersionKind {
	out := map[schema.GroupResource]schema.GroupVersionKind{}
	for _, r := range all {
		if r.ServedByAPIExtensions || r.StorageGroupResource.Empty() {
			continue
		}
		if _, seen := out[r.StorageGroupResource]; !seen {
			out[r.StorageGroupResource] = r.GroupVersionKind()
		}
	}
	return out
}

// describe returns a resource's entries in its APIResourceList (the resource, then its
// subresources) and its aggregated discovery entry.
func describe(r *catalog.Resource, storage map[schema.GroupResource]schema.GroupVersionKind) ([]metav1.APIResource, apidiscoveryv2.APIResourceDiscovery) {
	singular := r.Singular
	if singular == "" {
		singular = strings.ToLower(r.Kind)
	}
	scope := apidiscoveryv2.ScopeCluster
	if r.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	// Built-in resources leave group and version empty in responseKind (meaning "this group
	// version"); the apiextensions controller fills them in for custom resources.
	kind := &metav1.GroupVersionKind{Kind: r.Kind}
	verbs := r.Verbs()
	if r.ServedByAPIExtensions {
		kind.Group, kind.Version = r.GroupVersion.Group, r.GroupVersion.Version
	}
	if r.Terminating() {
		verbs = terminatingVerbs
	}

	main := metav1.APIResource{
		Name:               r.Name,
		SingularName:       singular,
		Namespaced:         r.Namespaced,
		Kind:               r.Kind,
		Verbs:              verbs,
		ShortNames:         r.ShortNames,
		Categories:         r.Categories,
		StorageVersionHash: storageVersionHash(r, storage),
	}
	aggregated := apidiscoveryv2.APIResourceDiscovery{
		Resource:         r.Name,
		ResponseKind:     kind,
		Scope:            scope,
		SingularResource: singular,
		Verbs:            verbs,
		ShortNames:       r.ShortNames,
		Categories:       r.Categories,
	}

	type sub struct {
		name  string
		kind  metav1.GroupVersionKind
		verbs []string
	}
	var subs []sub
	for _, s := range r.Subresources { // a built-in type's, as kube's discovery lists them
		subs = append(subs, sub{s.Name, metav1.GroupVersionKind{Group: s.Kind.Group, Version: s.Kind.Version, Kind: s.Kind.Kind}, s.Verbs})
	}
	status := sub{"status", *kind, r.SubresourceVerbs("status")}
	scale := sub{"scale", metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, r.SubresourceVerbs("scale")}
	switch {
	case r.Subresources != nil:
	case r.ServedByAPIExtensions: // the apiextensions controller lists status before scale
		if r.HasStatus {
			subs = append(subs, status)
		}
		if r.Scale != nil {
			subs = append(subs, scale)
		}
	default: // built-in subresources are listed by name
		if r.Scale != nil {
			subs = append(subs, scale)
		}
		if r.HasStatus {
			subs = append(subs, status)
		}
	}

	legacy := []metav1.APIResource{main}
	for _, s := range subs {
		entry := metav1.APIResource{Name: r.Name + "/" + s.name, Namespaced: r.Namespaced, Kind: s.kind.Kind, Verbs: s.verbs}
		if s.name == "scale" || (s.kind.Group != "" && s.kind.Group != r.GroupVersion.Group) { // a kind from another group (Scale, Eviction)
			entry.Group, entry.Version = s.kind.Group, s.kind.Version
		}
		legacy = append(legacy, entry)
		responseKind := s.kind
		aggregated.Subresources = append(aggregated.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: s.name, ResponseKind: &responseKind, Verbs: s.verbs,
		})
	}
	return legacy, aggregated
}

// storageVersionHash is kube's hash of the group/version/kind objects are stored as: the first 8
// bytes of its SHA-256, base64-encoded. Clients compare it across versions to tell whether two
// served versions share storage.
func storageVersionHash(r *catalog.Resource, storage map[schema.GroupResource]schema.GroupVersionKind) string {
	gvk := r.GroupVersionKind()
	if r.CRD != nil {
		for _, v := range r.CRD.Spec.Versions {
			if v.Storage {
				gvk = schema.GroupVersionKind{Group: r.CRD.Spec.Group, Version: v.Name, Kind: r.CRD.Spec.Names.Kind}
			}
		}
		if gvk.Kind == "" {
			gvk.Kind = r.Kind
		}
	} else if s, ok := storage[r.StorageGroupResource]; ok {
		gvk = s
	}
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

func encodeAggregated(groups []apidiscoveryv2.APIGroupDiscovery) *aggregatedDoc {
	if groups == nil {
		groups = []apidiscoveryv2.APIGroupDiscovery{}
	}
	list := apidiscoveryv2.APIGroupDiscoveryList{Items: groups}
	// kube's ETag is the SHA-512 of the v2 document without type information.
	sum := sha512.Sum512(encode(list))
	doc := &aggregatedDoc{etag: strconv.Quote(fmt.Sprintf("%X", sum)), byVersion: map[string][]byte{}}
	for _, v := range aggregatedVersions {
		list.TypeMeta = metav1.TypeMeta{Kind: aggregatedKind, APIVersion: aggregatedGroup + "/" + v}
		doc.byVersion[v] = encode(list)
	}
	return doc
}

// encode marshals a discovery document, newline-terminated as kube's encoder writes it. The
// documents are plain data, so marshalling cannot fail.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("discovery: encoding %T: %v", v, err))
	}
	return append(b, '\n')
}
