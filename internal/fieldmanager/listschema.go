package fieldmanager

import (
	"maps"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// markLists returns a copy of root (a version's OpenAPI schema of the custom resource, nil for
// none) in which the decided lists carry x-kubernetes-list-type: map and their key (or atomic), so that the
// SMD schema built from it (schemaconv, as for any CRD) merges them as list maps. Nodes below
// x-kubernetes-preserve-unknown-fields that the schema does not spell out are added as untyped
// nodes that preserve unknown fields: the same SMD type as before (deduced), with room for a
// marked list below. root is not modified; unchanged subtrees are shared.
func markLists(root *spec.Schema, ds []listDecision) *spec.Schema {
	if root == nil {
		root = untypedNode()
		root.Type = spec.StringOrArray{"object"}
	}
	keyed := map[string]bool{}
	for _, d := range ds {
		if !reachable(d.path, root, keyed) {
			continue // another version's schema, where the list is marked or atomic
		}
		if d.key != "" {
			keyed[d.path.key()] = true
		}
		root = markAt(root, root == nil, d.path, d.key)
	}
	return root
}

// markAt returns a copy of sch with the list at path (relative to sch) keyed by key.
func markAt(sch *spec.Schema, preserve bool, path pattern, key string) *spec.Schema {
	c := copyNode(sch)
	if len(path) == 0 {
		// A list and nothing else (an untyped node would be a map too, and SMD's reconciliation
		// of managedFields takes such nodes for maps): the merge saw only lists here.
		c.Type = spec.StringOrArray{"array"}
		if c.Items == nil || c.Items.Schema == nil {
			// Items of any type; those of a list map merge one by one (the items of an
			// untyped list are atomic, those of an atomic list go with it anyway).
			c.Items = &spec.SchemaOrArray{Schema: untypedNode()}
		}
		if key == "" {
			c.Extensions["x-kubernetes-list-type"] = "atomic"
			return c
		}
		c.Extensions["x-kubernetes-list-type"] = "map"
		c.Extensions["x-kubernetes-list-map-keys"] = []any{key}
		return c
	}
	if path[0] == itemSegment {
		items := untypedNode()
		if c.Items != nil && c.Items.Schema != nil {
			items = c.Items.Schema
		}
		p := preserve || extBool(c, "x-kubernetes-preserve-unknown-fields")
		c.Items = &spec.SchemaOrArray{Schema: markAt(items, p || c.Items == nil, path[1:], key)}
		return c
	}
	name := path[0]
	child, p, _ := childSchema(c, preserve, name)
	if child == nil {
		child = untypedNode()
	}
	c.Properties = maps.Clone(c.Properties)
	if c.Properties == nil {
		c.Properties = map[string]spec.Schema{}
	}
	c.Properties[name] = *markAt(child, p, path[1:], key)
	return c
}

// copyNode copies a schema node, with its own extensions.
func copyNode(sch *spec.Schema) *spec.Schema {
	c := *sch
	c.Extensions = maps.Clone(sch.Extensions)
	if c.Extensions == nil {
		c.Extensions = spec.Extensions{}
	}
	return &c
}

// untypedNode is a node of any type that keeps unknown fields: SMD's deduced type.
func untypedNode() *spec.Schema {
	return &spec.Schema{VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{
		"x-kubernetes-preserve-unknown-fields": true,
	}}}
}
