package openapi

import (
	"maps"

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

// ScaleModels returns the v3 schemas of autoscaling/v1 Scale and what it refers to, with its
// x-kubernetes-group-version-kind: what the scale subresource's field manager works with.
func ScaleModels() map[string]*spec.Schema {
	defs := builtin(v3)
	out := map[string]*spec.Schema{}
	var include func(model string)
	include = func(model string) {
		d, ok := defs[model]
		if _, done := out[model]; done || !ok {
			return
		}
		s := d.schema
		out[model] = &s
		for _, dep := range d.deps {
			include(dep)
		}
	}
	include(scaleModel)
	if s, ok := out[scaleModel]; ok {
		scale := *s
		scale.Extensions = maps.Clone(scale.Extensions)
		scale.AddExtension(gvkExtension, gvkList{{Group: "autoscaling", Version: "v1", Kind: "Scale"}}.extension())
		out[scaleModel] = &scale
	}
	return out
}
