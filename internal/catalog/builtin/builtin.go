package builtin

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
)

// Resources returns the built-in resources in kube-apiserver's discovery order: every type kube
// 1.37 stores, driven by kube's own code, and CustomResourceDefinitions.
func Resources(d kube.Deps) []*catalog.Resource {
	crds := schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}
	rs, err := kube.Resources(d, map[schema.GroupResource]*catalog.Resource{crds: customResourceDefinitions()})
	if err != nil {
		// The data is compiled in and tested: this cannot happen in a build that passed its tests.
		panic(fmt.Sprintf("built-in resources: %v", err))
	}
	return rs
}
