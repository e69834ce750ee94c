package storageprefix

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOf(t *testing.T) {
	tests := []struct {
		gr   schema.GroupResource
		want string
	}{
		{schema.GroupResource{Resource: "configmaps"}, "configmaps"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "deployments"},
		{schema.GroupResource{Resource: "services"}, "services/specs"},
		{schema.GroupResource{Resource: "endpoints"}, "services/endpoints"},
		{schema.GroupResource{Resource: "nodes"}, "minions"},
		{schema.GroupResource{Resource: "replicationcontrollers"}, "controllers"},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, "ingress"},
		{schema.GroupResource{Group: "extensions", Resource: "ingresses"}, "ingress"},
		{schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "endpointslices"},
	}
	for _, tt := range tests {
		if got := Of(tt.gr); got != tt.want {
			t.Errorf("Of(%v) = %q, want %q", tt.gr, got, tt.want)
		}
	}
}
