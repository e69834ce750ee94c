package openapi

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/lapis-dev/lapis/internal/catalog"
)

var info = &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: "unversioned"}}

const bearerToken = "BearerToken"

// assemble gathers what a document for resources rs holds: their routes and every definition
// the routes refer to, directly or not, with x-kubernetes-group-version-kind on the definitions
// of the kinds served.
func assemble(f flavour, rs []*catalog.Resource) ([]route, map[string]spec.Schema) {
	defs := builtin(f)
	custom := map[string]definition{}
	gvks := map[string]gvkList{
		statusModel: {{Version: "v1", Kind: "Status"}},
		scaleModel:  {{Group: "autoscaling", Version: "v1", Kind: "Scale"}},
	}
	var routes []route
	for _, r := range rs {
		var kindModel, listModel string
		if !r.Unstructured {
			kindModel, listModel = builtinModel(r.GroupVersion, r.Kind), builtinModel(r.GroupVersion, listKind(r))
		}
		if kindModel == "" {
			kindModel = customModel(r.GroupVersion, r.Kind)
			custom[kindModel] = customKind(r, f)
		}
		if listModel == "" {
			listModel = customModel(r.GroupVersion, listKind(r))
			custom[listModel] = customList(r, kindModel, f)
		}
		gvks[kindModel] = gvks[kindModel].add(r.GroupVersionKind())
		gvks[listModel] = gvks[listModel].add(r.GroupVersion.WithKind(listKind(r)))
		gvks[deleteOptionsModel] = gvks[deleteOptionsModel].add(r.GroupVersion.WithKind("DeleteOptions"))
		routes = append(routes, resourceRoutes(r, kindModel, listModel)...)
	}

	schemas := map[string]spec.Schema{}
	var include func(model string)
	include = func(model string) {
		if _, done := schemas[model]; done || model == "" {
			return
		}
		d, ok := custom[model]
		if !ok {
			if d, ok = defs[model]; !ok {
				return
			}
		}
		s := d.schema
		if l := gvks[model]; len(l) > 0 {
			s.Extensions = maps.Clone(s.Extensions)
			s.AddExtension(gvkExtension, l.extension())
		}
		schemas[model] = s
		for _, dep := range d.deps {
			include(dep)
		}
	}
	for _, rt := range routes {
		for _, o := range rt.ops {
			include(o.body)
			for _, resp := range o.responses {
				include(resp.model)
			}
		}
	}
	return routes, schemas
}

// buildV2 builds the swagger 2.0 document served at /openapi/v2.
func buildV2(rs []*catalog.Resource) *spec.Swagger {
	routes, schemas := assemble(v2, rs)
	doc := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        info,
		Paths:       &spec.Paths{Paths: make(map[string]spec.PathItem, len(routes))},
		Definitions: schemas,
		SecurityDefinitions: spec.SecurityDefinitions{bearerToken: {SecuritySchemeProps: spec.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication"}}},
		Security: []map[string][]string{{bearerToken: {}}},
	}}
	for _, rt := range routes {
		var item spec.PathItem
		for _, p := range rt.params {
			item.Parameters = append(item.Parameters, p.v2())
		}
		for _, o := range rt.ops {
			*byMethod(o.method, &item.Get, &item.Put, &item.Post, &item.Delete, &item.Patch) = o.v2()
		}
		doc.Paths.Paths[rt.path] = item
	}
	return doc
}

// byMethod is the one of a path's operations (v2's or v3's) that method names; a method
// without one gets a place that is not in the path.
func byMethod[Op any](method string, get, put, post, del, patch *Op) *Op {
	switch method {
	case "get":
		return get
	case "put":
		return put
	case "post":
		return post
	case "delete":
		return del
	case "patch":
		return patch
	}
	return new(Op)
}

func (p param) v2() spec.Parameter {
	sp := spec.Parameter{
		ParamProps:   spec.ParamProps{Name: p.name, In: p.in, Description: p.description, Required: p.required},
		SimpleSchema: spec.SimpleSchema{Type: p.typ},
	}
	sp.UniqueItems = true
	return sp
}

func (o operation) v2() *spec.Operation {
	op := &spec.Operation{OperationProps: spec.OperationProps{
		Description: o.description,
		Consumes:    o.consumes,
		Produces:    o.produces,
		Schemes:     []string{"https"},
		Tags:        []string{o.tag},
		ID:          o.id,
		Responses:   &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
	}}
	if o.body != "" {
		op.Parameters = append(op.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: o.bodyRequired, Schema: v2.refSchema(o.body)}})
	}
	for _, p := range o.query {
		op.Parameters = append(op.Parameters, p.v2())
	}
	for _, r := range o.responses {
		resp := spec.Response{ResponseProps: spec.ResponseProps{Description: r.description}}
		if r.model != "" {
			resp.Schema = v2.refSchema(r.model)
		}
		op.Responses.StatusCodeResponses[r.code] = resp
	}
	op.Extensions = o.extensions()
	return op
}

func (o operation) extensions() spec.Extensions {
	return spec.Extensions{"x-kubernetes-action": o.action, gvkExtension: gvkValue(o.gvk)}
}

// buildV3 builds the OpenAPI v3 document of one group-version (/openapi/v3/apis/GROUP/VERSION).
func buildV3(rs []*catalog.Resource) *spec3.OpenAPI {
	routes, schemas := assemble(v3, rs)
	doc := &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    info,
		Paths:   &spec3.Paths{Paths: make(map[string]*spec3.Path, len(routes))},
		Components: &spec3.Components{
			Schemas: make(map[string]*spec.Schema, len(schemas)),
			SecuritySchemes: spec3.SecuritySchemes{bearerToken: {SecuritySchemeProps: spec3.SecuritySchemeProps{
				Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication"}}},
		},
		SecurityRequirement: []map[string][]string{{bearerToken: {}}},
	}
	for name, s := range schemas {
		doc.Components.Schemas[name] = &s
	}
	for _, rt := range routes {
		path := &spec3.Path{}
		for _, p := range rt.params {
			path.Parameters = append(path.Parameters, p.v3())
		}
		for _, o := range rt.ops {
			*byMethod(o.method, &path.Get, &path.Put, &path.Post, &path.Delete, &path.Patch) = o.v3()
		}
		doc.Paths.Paths[rt.path] = path
	}
	return doc
}

func (p param) v3() *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: p.name, In: p.in, Description: p.description, Required: p.required,
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{p.typ}, UniqueItems: true}},
	}}
}

func (o operation) v3() *spec3.Operation {
	op := &spec3.Operation{OperationProps: spec3.OperationProps{
		Tags:        []string{o.tag},
		Description: o.description,
		OperationId: o.id,
		Responses:   &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
	}}
	for _, p := range o.query {
		op.Parameters = append(op.Parameters, p.v3())
	}
	if o.body != "" {
		consumes := o.consumes
		if slices.Equal(consumes, anyConsumes) {
			consumes = []string{"application/json"} // how kube describes "*/*" bodies in v3
		}
		op.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{
			Content: content(consumes, o.body), Required: o.bodyRequired}}
	}
	for _, r := range o.responses {
		resp := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: r.description}}
		if r.model != "" {
			resp.Content = content(o.produces, r.model)
		}
		op.Responses.StatusCodeResponses[r.code] = resp
	}
	op.Extensions = o.extensions()
	return op
}

func content(mediaTypes []string, model string) map[string]*spec3.MediaType {
	out := make(map[string]*spec3.MediaType, len(mediaTypes))
	for _, mt := range mediaTypes {
		out[mt] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: v3.refSchema(model)}}
	}
	return out
}

// gvPath is a group-version's key in the OpenAPI v3 discovery document: "api/v1", "apis/apps/v1".
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
