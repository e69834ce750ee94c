package objects

import (
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/upstream/storageprefix"
)

// Keys follow kube-apiserver 1.37's layout, so that an etcd written by one is read by the other:
// <etcd prefix>/<prefix>/[namespace/]name, where a built-in resource's prefix is kube's storage
// factory's (no group: deployments, services/specs, minions, ...) and a custom resource's is
// <group>/<resource>.

// DefaultPrefix is kube-apiserver's default --etcd-prefix.
const DefaultPrefix = "/registry"

// Keys is where one server keeps everything in etcd: below its --etcd-prefix, so that servers
// with different prefixes share an etcd without seeing each other's objects.
type Keys struct {
	root string // the prefix, with a slash before and after: "/registry/"
}

// NewKeys returns the layout below etcdPrefix, read as kube's etcd3 store reads it (k8s.io/apiserver
// v0.37.2 pkg/storage/etcd3/store.go, New): path.Join("/", prefix) and a trailing slash, so
// "registry", "/registry" and "/registry/" are one prefix and "" or "/" is etcd's root.
func NewKeys(etcdPrefix string) Keys {
	root := path.Join("/", etcdPrefix)
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return Keys{root: root}
}

// Root is the prefix every key starts with, ending in a slash.
func (k Keys) Root() string { return k.root }

// Under is the key of rest below the prefix, for what kube keeps there besides objects
// (ranges/servicenodeports).
func (k Keys) Under(rest string) string { return k.root + rest }

// ownStorageFactory are the built-in resources kube serves from apiextensions-apiserver and
// kube-aggregator, whose storage factory (k8s.io/apiserver pkg/server/options
// SimpleStorageFactory.ResourcePrefix) keeps the group in the prefix, as for custom resources.
var ownStorageFactory = map[schema.GroupResource]bool{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:             true,
}

// StoragePrefix is the etcd prefix, below the etcd prefix and without slashes around it, of
// the objects of a resource stored as gr: custom says whether it is a custom resource.
func StoragePrefix(gr schema.GroupResource, custom bool) string {
	if custom || ownStorageFactory[gr] {
		return gr.Group + "/" + gr.Resource
	}
	return storageprefix.Of(gr)
}

func (k Keys) resource(r *catalog.Resource) string {
	return k.root + StoragePrefix(r.StorageGroupResource, r.CRD != nil) + "/"
}

func (k Keys) object(r *catalog.Resource, namespace, name string) string {
	if r.Namespaced {
		return k.resource(r) + namespace + "/" + name
	}
	return k.resource(r) + name
}

// namespace is the key of the named Namespace.
func (k Keys) namespace(name string) string {
	return k.root + storageprefix.Of(namespacesResource) + "/" + name
}

// list is where a list of the resource in namespace ("" for all) reads.
func (k Keys) list(r *catalog.Resource, namespace string) string {
	if r.Namespaced && namespace != "" {
		return k.resource(r) + namespace + "/"
	}
	return k.resource(r)
}

// namespaceAndName recovers the namespace and name from a key under prefix, r's resource prefix.
func namespaceAndName(r *catalog.Resource, prefix, key string) (namespace, name string) {
	rest := strings.TrimPrefix(key, prefix)
	if !r.Namespaced {
		return "", rest
	}
	namespace, name, _ = strings.Cut(rest, "/")
	return namespace, name
}

// KeyResources tells the stored resource of a key or prefix (what metrics label etcd requests
// and object counts with): a built-in resource's by its prefix, which carries no group, a
// custom resource's by its <group>/<resource>.
type KeyResources struct {
	root     string
	byPrefix map[string]schema.GroupResource // StoragePrefix → storage GroupResource
}

// NewKeyResources indexes the prefixes, below keys' root, of the built-in resources among rs.
func NewKeyResources(keys Keys, rs []*catalog.Resource) *KeyResources {
	k := &KeyResources{root: keys.root, byPrefix: map[string]schema.GroupResource{}}
	for _, r := range rs {
		if r.CRD == nil {
			k.byPrefix[StoragePrefix(r.StorageGroupResource, false)] = r.StorageGroupResource
		}
	}
	return k
}

// Of is the resource stored under key, or none. Prefixes have one segment or two
// (services/specs, apiextensions.k8s.io/customresourcedefinitions): the longer is tried first.
// Another key is read as <group>/<resource>/... when its first segment has a dot (a custom
// resource's group), else as <resource>/... (ranges/servicenodeports).
func (k *KeyResources) Of(key string) schema.GroupResource {
	rest, ok := strings.CutPrefix(key, k.root)
	if !ok {
		return schema.GroupResource{}
	}
	first, rest, _ := strings.Cut(rest, "/")
	second, _, _ := strings.Cut(rest, "/")
	if gr, ok := k.byPrefix[first+"/"+second]; ok {
		return gr
	}
	if gr, ok := k.byPrefix[first]; ok {
		return gr
	}
	if strings.Contains(first, ".") {
		return schema.GroupResource{Group: first, Resource: second}
	}
	return schema.GroupResource{Resource: first}
}
