package openapi

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// route is one path and its operations, independent of the OpenAPI version it is rendered in.
type route struct {
	path   string
	params []param // path-level: name, namespace, pretty
	ops    []operation
}

type param struct {
	name, in, typ, description string
	required                   bool
}

// operation is one HTTP method on a route.
type operation struct {
	method       string // lower case: get, put, post, delete, patch
	id, tag      string
	description  string
	action       string // x-kubernetes-action
	gvk          schema.GroupVersionKind
	query        []param
	body         string // model of the request body, if any
	bodyRequired bool
	consumes     []string
	produces     []string
	responses    []response
}

type response struct {
	code        int
	description string
	model       string // empty for none
}

var (
	prettyParam = param{name: "pretty", in: "query", typ: "string",
		description: "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."}
	namespaceParam = param{name: "namespace", in: "path", typ: "string", required: true,
		description: "object name and auth scope, such as for teams and projects"}

	produces      = []string{"application/json", "application/yaml"}
	listProduces  = []string{"application/json", "application/yaml", "application/json;stream=watch"}
	anyConsumes   = []string{"*/*"}
	patchConsumes = []string{"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}
	// Built-in types also take strategic merge patches; kubectl apply looks for this media type
	// on the patch operation to decide whether to send one.
	builtinPatchConsumes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

	unauthorized = response{code: 401, description: "Unauthorized"}
)

// queryParams lists the query parameters of each action, described as the options types
// (ListOptions, CreateOptions, ...) describe their fields. fieldValidation on writes is what tells
// kubectl the server validates fields itself.
var queryParams = sync.OnceValue(func() map[string][]param {
	defs := builtin(v2)
	from := func(model string, names ...string) []param {
		var out []param
		for _, name := range names {
			prop, ok := defs[model].schema.Properties[name]
			if !ok {
				continue
			}
			typ := "string"
			if len(prop.Type) == 1 && prop.Type[0] != "array" {
				typ = prop.Type[0]
			}
			out = append(out, param{name: name, in: "query", typ: typ, description: prop.Description})
		}
		return out
	}
	list := from(listOptionsModel, "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
		"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
	write := from(createOptionsModel, "dryRun", "fieldManager", "fieldValidation")
	patch := from(patchOptionsModel, "dryRun", "fieldManager", "fieldValidation", "force")
	del := from(deleteOptionsModel, "dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
		"orphanDependents", "propagationPolicy")
	deleteCollection := slices.Concat(del, from(listOptionsModel, "continue", "fieldSelector", "labelSelector", "limit",
		"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"))
	slices.SortFunc(deleteCollection, func(a, b param) int { return strings.Compare(a.name, b.name) })
	return map[string][]param{"list": list, "post": write, "put": write, "patch": patch, "delete": del,
		"deletecollection": deleteCollection}
})

// resourceRoutes returns the routes kube-apiserver installs for a resource (watch paths aside):
// the collection, the object and its status and scale subresources.
func resourceRoutes(r *catalog.Resource, kindModel, listModel string) []route {
	b := routeBuilder{r: r, gvk: r.GroupVersionKind()}
	gv := r.GroupVersion
	group, prefix := gv.Group, "/apis/"+gv.Group+"/"+gv.Version
	if group == "" {
		group, prefix = "core", "/api/"+gv.Version
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	b.opPrefix = operationID(group) + operationID(gv.Version)
	b.tag = camelCase(group) + "_" + camelCase(gv.Version)

	var out []route
	scope, collection := "", prefix+"/"+r.Name
	if r.Namespaced {
		out = append(out, route{path: collection, params: []param{prettyParam},
			ops: []operation{b.list(listModel, r.Kind+"ForAllNamespaces")}})
		scope, collection = "Namespaced", prefix+"/namespaces/{namespace}/"+r.Name
	}
	collectionParams := func() []param {
		if r.Namespaced {
			return []param{namespaceParam, prettyParam}
		}
		return []param{prettyParam}
	}
	objectParams := func() []param {
		name := param{name: "name", in: "path", typ: "string", required: true, description: "name of the " + r.Kind}
		return append([]param{name}, collectionParams()...)
	}

	out = append(out, route{path: collection, params: collectionParams(), ops: []operation{
		b.list(listModel, scope+r.Kind),
		b.op("post", "create", "post", scope+r.Kind, "create"+article(r.Kind)+r.Kind, kindModel,
			response{200, "OK", kindModel}, response{201, "Created", kindModel}, response{202, "Accepted", kindModel}),
		b.op("delete", "delete", "deletecollection", "Collection"+scope+r.Kind, "delete collection of "+r.Kind, deleteOptionsModel,
			response{200, "OK", statusModel}),
	}})
	object := collection + "/{name}"
	out = append(out, route{path: object, params: objectParams(), ops: []operation{
		b.op("get", "read", "get", scope+r.Kind, "read the specified "+r.Kind, "", response{200, "OK", kindModel}),
		b.op("put", "replace", "put", scope+r.Kind, "replace the specified "+r.Kind, kindModel,
			response{200, "OK", kindModel}, response{201, "Created", kindModel}),
		b.op("delete", "delete", "delete", scope+r.Kind, "delete"+article(r.Kind)+r.Kind, deleteOptionsModel,
			response{200, "OK", statusModel}, response{202, "Accepted", statusModel}),
		b.op("patch", "patch", "patch", scope+r.Kind, "partially update the specified "+r.Kind, patchModel,
			response{200, "OK", kindModel}, response{201, "Created", kindModel}),
	}})
	if r.HasStatus {
		out = append(out, b.subresource(object, "status", scope+r.Kind+"Status", kindModel, objectParams()))
	}
	if r.Scale != nil {
		sb := b
		if !r.ServedByAPIExtensions { // built-in scale endpoints are described as autoscaling/v1 Scale
			sb.gvk = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
		}
		out = append(out, sb.subresource(object, "scale", scope+r.Kind+"Scale", scaleModel, objectParams()))
	}
	return servedOnly(r, out)
}

// verbOfAction is the API verb of an x-kubernetes-action.
var verbOfAction = map[string]string{"get": "get", "list": "list", "post": "create", "put": "update",
	"patch": "patch", "delete": "delete", "deletecollection": "deletecollection"}

// servedOnly keeps the operations the resource serves (a review is create-only, namespaces have
// no deletecollection), as kube's documents have them.
func servedOnly(r *catalog.Resource, routes []route) []route {
	out := routes[:0]
	for _, rt := range routes {
		sub := ""
		if i := strings.LastIndex(rt.path, "}/"); i >= 0 && strings.HasSuffix(rt.path[:i+1], "{name}") {
			sub = rt.path[i+2:]
		}
		ops := rt.ops[:0]
		for _, op := range rt.ops {
			if r.Serves(sub, verbOfAction[op.action]) {
				ops = append(ops, op)
			}
		}
		if len(ops) > 0 {
			rt.ops = ops
			out = append(out, rt)
		}
	}
	return out
}

type routeBuilder struct {
	r             *catalog.Resource
	gvk           schema.GroupVersionKind
	opPrefix, tag string
}

func (b routeBuilder) list(listModel, name string) operation {
	return b.op("get", "list", "list", name, "list or watch objects of kind "+b.r.Kind, "", response{200, "OK", listModel})
}

func (b routeBuilder) subresource(object, sub, name, model string, params []param) route {
	return route{path: object + "/" + sub, params: params, ops: []operation{
		b.op("get", "read", "get", name, "read "+sub+" of the specified "+b.r.Kind, "", response{200, "OK", model}),
		b.op("put", "replace", "put", name, "replace "+sub+" of the specified "+b.r.Kind, model,
			response{200, "OK", model}, response{201, "Created", model}),
		b.op("patch", "patch", "patch", name, "partially update "+sub+" of the specified "+b.r.Kind, patchModel,
			response{200, "OK", model}, response{201, "Created", model}),
	}}
}

// op builds an operation; verb starts its ID (readCoreV1NamespacedConfigMap), action is its
// x-kubernetes-action and selects its query parameters.
func (b routeBuilder) op(method, verb, action, name, description, body string, responses ...response) operation {
	o := operation{
		method:      method,
		id:          verb + b.opPrefix + name,
		tag:         b.tag,
		description: description,
		action:      action,
		gvk:         b.gvk,
		query:       queryParams()[action],
		body:        body,
		produces:    produces,
		responses:   append(responses, unauthorized),
	}
	switch method {
	case "post", "put":
		o.bodyRequired, o.consumes = true, anyConsumes
	case "patch":
		o.bodyRequired, o.consumes = true, patchConsumes
		if !b.r.Unstructured { // strategic merge patches need Go types
			o.consumes = builtinPatchConsumes
		}
	case "delete":
		o.consumes = anyConsumes
	}
	if action == "list" {
		o.produces = listProduces
	}
	return o
}

func article(noun string) string {
	if noun != "" && strings.ContainsRune("AEIOU", unicode.ToUpper(rune(noun[0]))) {
		return " an "
	}
	return " a "
}

// camelCase makes s part of an operation's tag the way kube-apiserver does: punctuation
// dropped, the letter after it capitalised ("rbac.authorization" becomes "rbacAuthorization").
func camelCase(s string) string {
	var sb strings.Builder
	capitalize := false
	for i, r := range s {
		if unicode.IsLetter(r) || r == '_' || (i != 0 && unicode.IsDigit(r)) {
			if capitalize {
				r = unicode.ToUpper(r)
				capitalize = false
			}
			sb.WriteRune(r)
		} else {
			capitalize = true
		}
	}
	return sb.String()
}

// operationID makes s part of an operation ID the way kube-apiserver does: camelCase with the
// first letter capitalised too ("rbac.authorization" becomes "RbacAuthorization").
func operationID(s string) string {
	c := camelCase(s)
	first, size := utf8.DecodeRuneInString(c)
	if size == 0 {
		return c
	}
	return string(unicode.ToUpper(first)) + c[size:]
}
