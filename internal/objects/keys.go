package objects

import (
	"strings"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/upstream/storageprefix"
)

// Keys follow kube-apiserver's layout: /registry/[group/]resource/[namespace/]name.
func resourcePrefix(r *catalog.Resource) string {
	gr := r.StorageGroupResource
	if gr.Group == "" {
		return "/registry/" + gr.Resource + "/"
	}
	return "/registry/" + gr.Group + "/" + gr.Resource + "/"
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

// kubeKey is where kube-apiserver keeps an object in etcd, which its storage errors quote: a
// built-in resource under kube's prefix for it, a custom resource as lapis keeps it.
func kubeKey(r *catalog.Resource, namespace, name string) string {
	if r.CRD != nil {
		return objectKey(r, namespace, name)
	}
	prefix := storageprefix.Of(r.StorageGroupResource)
	if r.Namespaced {
		return "/registry/" + prefix + "/" + namespace + "/" + name
	}
	return "/registry/" + prefix + "/" + name
}
