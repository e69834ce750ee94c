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
		if got := objectKey(r, ns, "n"); got != tt.want {
			t.Errorf("objectKey(%v) = %q, want %q", tt.gvr, got, tt.want)
		}
	}
	custom := &catalog.Resource{StorageGroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"},
		Namespaced: true, CRD: &apiextensionsv1.CustomResourceDefinition{}}
	if got, want := objectKey(custom, "ns", "n"), "/registry/example.com/widgets/ns/n"; got != want {
		t.Errorf("custom resource: objectKey = %q, want %q", got, want)
	}
}

// TestBuiltinPrefixes: every built-in resource is under kube's prefix for it, and no list of one
// resource reads another's objects (cohabiting versions and groups share a storage resource).
func TestBuiltinPrefixes(t *testing.T) {
	owner := map[string]schema.GroupResource{}
	for _, r := range builtinCatalog().Stored() {
		gr := r.StorageGroupResource
		want := "/registry/" + storageprefix.Of(gr) + "/"
		if ownStorageFactory[gr] {
			want = "/registry/" + gr.Group + "/" + gr.Resource + "/"
		}
		if got := resourcePrefix(r); got != want {
			t.Errorf("%v: prefix %q, want kube's %q", r.GroupVersionResource(), got, want)
		}
		owner[resourcePrefix(r)] = gr
	}
	for a, ga := range owner {
		for b, gb := range owner {
			if a != b && strings.HasPrefix(b, a) {
				t.Errorf("%v's prefix %q holds %v's %q", ga, a, gb, b)
			}
		}
	}
	keys := NewKeyResources(builtinCatalog().Stored())
	for prefix, gr := range owner {
		if got := keys.Of(prefix + "ns/n"); got != gr {
			t.Errorf("KeyResources.Of(%q) = %v, want %v", prefix+"ns/n", got, gr)
		}
	}
}
