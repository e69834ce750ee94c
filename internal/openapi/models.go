package openapi

import (
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Models returns the OpenAPI v3 schemas, by model name, of resources rs and of everything they
// refer to, with x-kubernetes-group-version-kind on their kinds. Server-side apply builds its
// type converter for custom resources from them, as kube-apiserver does from the same documents.
func Models(rs []*catalog.Resource) map[string]*spec.Schema {
	_, schemas := assemble(v3, rs)
	out := make(map[string]*spec.Schema, len(schemas))
	for name, s := range schemas {
		out[name] = &s
	}
	return out
}
