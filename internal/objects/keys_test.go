package objects

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func TestKubeKey(t *testing.T) {
	tests := []struct {
		gr         schema.GroupResource
		namespaced bool
		crd        bool
		want       string
	}{
		{schema.GroupResource{Resource: "configmaps"}, true, false, "/registry/configmaps/ns/n"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, true, false, "/registry/deployments/ns/n"},
		{schema.GroupResource{Resource: "services"}, true, false, "/registry/services/specs/ns/n"},
		{schema.GroupResource{Resource: "nodes"}, false, false, "/registry/minions/n"},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, true, false, "/registry/ingress/ns/n"},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, true, true, "/registry/example.com/widgets/ns/n"},
	}
	for _, tt := range tests {
		r := &catalog.Resource{StorageGroupResource: tt.gr, Namespaced: tt.namespaced}
		if tt.crd {
			r.CRD = &apiextensionsv1.CustomResourceDefinition{}
		}
		if got := kubeKey(r, "ns", "n"); got != tt.want {
			t.Errorf("kubeKey(%v) = %q, want %q", tt.gr, got, tt.want)
		}
	}
}
