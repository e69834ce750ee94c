package objects

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/upstream/storageprefix"
)

// Keys follow kube-apiserver 1.37's layout, so that an etcd written by one is read by the other:
// /registry/<prefix>/[namespace/]name, where a built-in resource's prefix is kube's storage
// factory's (no group: deployments, services/specs, minions, ...) and a custom resource's is
// <group>/<resource>.

// ownStorageFactory are the built-in resources kube serves from apiextensions-apiserver and
// kube-aggregator, whose storage factory (k8s.io/apiserver pkg/server/options
// SimpleStorageFactory.ResourcePrefix) keeps the group in the prefix, as for custom resources.
var ownStorageFactory = map[schema.GroupResource]bool{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:             true,
}

// StoragePrefix is the etcd prefix, below /registry/ and without slashes around it, of the
// objects of a resource stored as gr: custom says whether it is a custom resource.
func StoragePrefix(gr schema.GroupResource, custom bool) string {
	if custom || ownStorageFactory[gr] {
		return gr.Group + "/" + gr.Resource
	}
	return storageprefix.Of(gr)
}

func resourcePrefix(r *catalog.Resource) string {
	return "/registry/" + StoragePrefix(r.StorageGroupResource, r.CRD != nil) + "/"
}

func objectKey(r *catalog.Resource, namespace, name string) string {
	if r.Namespaced {
		return resourcePrefix(r) + namespace + "/" + name
	}
	return resourcePrefix(r) + name
}

// listPrefix is where a list of the resource in namespace ("" for all) reads.
func listPrefix(r *catalog.Resource, namespace string) string {
	if r.Namespaced && namespace != "" {
		return resourcePrefix(r) + namespace + "/"
	}
	return resourcePrefix(r)
}

// namespaceAndName recovers the namespace and name from a key under resourcePrefix(r).
func namespaceAndName(r *catalog.Resource, key string) (namespace, name string) {
	rest := strings.TrimPrefix(key, resourcePrefix(r))
	if !r.Namespaced {
		return "", rest
	}
	namespace, name, _ = strings.Cut(rest, "/")
	return namespace, name
}

// KeyResources tells the stored resource of a key or prefix of built-in resources, whose
// prefixes carry no group (what metrics label etcd requests and object counts with).
type KeyResources struct {
	byPrefix map[string]schema.GroupResource // StoragePrefix → storage GroupResource
}

// NewKeyResources indexes the prefixes of the built-in resources among rs.
func NewKeyResources(rs []*catalog.Resource) *KeyResources {
	k := &KeyResources{byPrefix: map[string]schema.GroupResource{}}
	for _, r := range rs {
		if r.CRD == nil {
			k.byPrefix[StoragePrefix(r.StorageGroupResource, false)] = r.StorageGroupResource
		}
	}
	return k
}

// Of is the built-in resource stored under key, or none. Prefixes have one segment or two
// (services/specs, apiextensions.k8s.io/customresourcedefinitions): the longer is tried first.
func (k *KeyResources) Of(key string) schema.GroupResource {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return schema.GroupResource{}
	}
	first, rest, _ := strings.Cut(rest, "/")
	second, _, _ := strings.Cut(rest, "/")
	if gr, ok := k.byPrefix[first+"/"+second]; ok {
		return gr
	}
	return k.byPrefix[first]
}
