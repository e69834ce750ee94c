package objects

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/upstream/storageprefix"
)

func builtinCatalog() *catalog.Catalog {
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{})...)
	return cat
}

// TestObjectKey: keys are kube-apiserver 1.37's, as etcdctl shows them on a kube cluster.
func TestObjectKey(t *testing.T) {
	cat := builtinCatalog()
	tests := []struct {
		gvr  schema.GroupVersionResource
		want string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "/registry/configmaps/ns/n"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "/registry/deployments/ns/n"},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "/registry/services/specs/ns/n"},
		{schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, "/registry/services/endpoints/ns/n"},
		{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "/registry/minions/n"},
		{schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, "/registry/controllers/ns/n"},
		{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, "/registry/ingress/ns/n"},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "/registry/clusterroles/n"},
		{schema.GroupVersionResource{Version: "v1", Resource: "events"}, "/registry/events/ns/n"},
		{schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, "/registry/events/ns/n"},
		{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "/registry/leases/ns/n"},
		{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "/registry/apiextensions.k8s.io/customresourcedefinitions/n"},
	}
	for _, tt := range tests {
		r, ok := cat.Lookup(tt.gvr)
		if !ok {
			t.Errorf("%v: not in the catalog", tt.gvr)
			continue
		}
		ns := "ns"
		if !r.Namespaced {
			ns = ""
		}
		if got := NewKeys(DefaultPrefix).object(r, ns, "n"); got != tt.want {
			t.Errorf("objectKey(%v) = %q, want %q", tt.gvr, got, tt.want)
		}
	}
	custom := &catalog.Resource{StorageGroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"},
		Namespaced: true, CRD: &apiextensionsv1.CustomResourceDefinition{}}
	if got, want := NewKeys(DefaultPrefix).object(custom, "ns", "n"), "/registry/example.com/widgets/ns/n"; got != want {
		t.Errorf("custom resource: objectKey = %q, want %q", got, want)
	}
}

// TestBuiltinPrefixes: every built-in resource is under kube's prefix for it, and no list of one
// resource reads another's objects (cohabiting versions and groups share a storage resource).
func TestBuiltinPrefixes(t *testing.T) {
	owner := map[string]schema.GroupResource{}
	k := NewKeys(DefaultPrefix)
	for _, r := range builtinCatalog().Stored() {
		gr := r.StorageGroupResource
		want := "/registry/" + storageprefix.Of(gr) + "/"
		if ownStorageFactory[gr] {
			want = "/registry/" + gr.Group + "/" + gr.Resource + "/"
		}
		if got := k.resource(r); got != want {
			t.Errorf("%v: prefix %q, want kube's %q", r.GroupVersionResource(), got, want)
		}
		owner[k.resource(r)] = gr
	}
	for a, ga := range owner {
		for b, gb := range owner {
			if a != b && strings.HasPrefix(b, a) {
				t.Errorf("%v's prefix %q holds %v's %q", ga, a, gb, b)
			}
		}
	}
	keys := NewKeyResources(k, builtinCatalog().Stored())
	for prefix, gr := range owner {
		if got := keys.Of(prefix + "ns/n"); got != gr {
			t.Errorf("KeyResources.Of(%q) = %v, want %v", prefix+"ns/n", got, gr)
		}
	}
}

// TestEtcdPrefix: --etcd-prefix is read as kube's etcd3 store reads it, and every key, list and
// key-to-resource answer is below it.
func TestEtcdPrefix(t *testing.T) {
	cat := builtinCatalog()
	deployments, _ := cat.Lookup(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	nodes, _ := cat.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
	widgets := &catalog.Resource{StorageGroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"},
		Namespaced: true, CRD: &apiextensionsv1.CustomResourceDefinition{}}
	tests := []struct {
		prefix, root string
	}{
		{"/registry", "/registry/"},
		{"registry", "/registry/"},
		{"/registry/", "/registry/"},
		{"/tenants//b/", "/tenants/b/"},
		{"/a/../b", "/b/"},
		{"", "/"},
		{"/", "/"},
	}
	for _, tt := range tests {
		k := NewKeys(tt.prefix)
		if k.Root() != tt.root {
			t.Errorf("NewKeys(%q).Root() = %q, want %q", tt.prefix, k.Root(), tt.root)
		}
		want := map[string]string{
			k.object(deployments, "ns", "web"): tt.root + "deployments/ns/web",
			k.list(deployments, "ns"):          tt.root + "deployments/ns/",
			k.list(deployments, ""):            tt.root + "deployments/",
			k.object(nodes, "ns", "n1"):        tt.root + "minions/n1",
			k.object(widgets, "ns", "w"):       tt.root + "example.com/widgets/ns/w",
			k.namespace("default"):             tt.root + "namespaces/default",
			k.Under("ranges/servicenodeports"): tt.root + "ranges/servicenodeports",
		}
		for got, w := range want {
			if got != w {
				t.Errorf("prefix %q: key %q, want %q", tt.prefix, got, w)
			}
		}
		if ns, name := namespaceAndName(deployments, k.resource(deployments), k.object(deployments, "ns", "web")); ns != "ns" || name != "web" {
			t.Errorf("prefix %q: namespaceAndName = %q, %q", tt.prefix, ns, name)
		}
		resources := NewKeyResources(k, cat.Stored())
		for key, gr := range map[string]schema.GroupResource{
			tt.root + "deployments/ns/web":       {Group: "apps", Resource: "deployments"},
			tt.root + "services/specs/ns/s":      {Resource: "services"},
			tt.root + "example.com/widgets/ns/w": {Group: "example.com", Resource: "widgets"},
			tt.root + "configmaps/":              {Resource: "configmaps"},
		} {
			if got := resources.Of(key); got != gr {
				t.Errorf("prefix %q: KeyResources.Of(%q) = %v, want %v", tt.prefix, key, got, gr)
			}
		}
	}
	// Keys below another prefix are no resource's.
	if got := NewKeyResources(NewKeys("/a"), cat.Stored()).Of("/registry/deployments/ns/web"); got != (schema.GroupResource{}) {
		t.Errorf("a key below another prefix is %v's", got)
	}
}
