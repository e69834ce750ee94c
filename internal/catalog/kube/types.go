package kube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"

	// Installed groups: their types, defaults and conversions in legacyscheme.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// Types are the built-in types driven through kube's code, one row each.
func Types() []Type {
	appsV1 := schema.GroupVersion{Group: "apps", Version: "v1"}
	return []Type{
		{Resource: appsV1.WithResource("deployments"), Kind: "Deployment", StorageVersion: appsV1,
			Strategy: deployment.Strategy, StatusStrategy: deployment.StatusStrategy},
	}
}
