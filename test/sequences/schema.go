package sequences

import (
	"fmt"
	"math/rand/v2"
)

// shape is one kind of schema node, named for the merge markers it carries.
type shape int

const (
	str        shape = iota // a string
	integer                 // an integer
	object                  // properties, merged field by field
	atomicObj               // properties, x-kubernetes-map-type: atomic
	granular                // additionalProperties (strings), merged key by key
	atomicMap               // additionalProperties (strings), x-kubernetes-map-type: atomic
	atomicList              // a list of strings, x-kubernetes-list-type: atomic (the default)
	set                     // a list of strings, x-kubernetes-list-type: set
	listMap                 // a list of objects keyed by the fields named in keys
	constant                // a fixed value (a built-in kind's selector, say)
)

// node is a schema node: its shape; the fields of objects and list-map items; the values a
// scalar takes (words or ints when empty).
type node struct {
	shape  shape
	fields []field
	keys   []string // listMap
	enum   []any    // str, integer, constant (its one value)
}

type field struct {
	name string
	node *node
	// required fields are in every full value (a create's).
	required bool
}

// Small vocabularies, so that managers meet on the same keys and values.
var (
	words = []any{"a", "b", "c"}
	ints  = []any{int64(1), int64(2), int64(3)}
)

// randomNode draws a custom resource's schema node; depth bounds nesting.
func randomNode(r *rand.Rand, depth int) *node {
	shapes := []shape{str, integer, granular, atomicMap, atomicList, set}
	if depth > 0 {
		shapes = append(shapes, object, atomicObj, listMap, object, listMap, listMap)
	}
	n := &node{shape: shapes[r.IntN(len(shapes))]}
	switch n.shape {
	case object, atomicObj:
		n.fields = randomFields(r, depth-1, "")
	case listMap:
		n.keys = []string{"name"}
		n.fields = []field{{name: "name", node: &node{shape: str}, required: true}}
		if r.IntN(2) == 0 {
			n.keys = append(n.keys, "port")
			n.fields = append(n.fields, field{name: "port", node: &node{shape: integer, enum: ints[:2]}, required: true})
		}
		n.fields = append(n.fields, randomFields(r, depth-1, "v")...)
	}
	return n
}

// randomFields draws one to three fields named prefix+"f0", prefix+"f1", ...
func randomFields(r *rand.Rand, depth int, prefix string) []field {
	fields := make([]field, 1+r.IntN(3))
	for i := range fields {
		fields[i] = field{name: fmt.Sprintf("%sf%d", prefix, i), node: randomNode(r, depth)}
	}
	return fields
}

// openAPI is the node's structural schema.
func (n *node) openAPI() map[string]any {
	switch n.shape {
	case str:
		return map[string]any{"type": "string"}
	case integer:
		return map[string]any{"type": "integer"}
	case object, atomicObj:
		props := map[string]any{}
		for _, f := range n.fields {
			props[f.name] = f.node.openAPI()
		}
		s := map[string]any{"type": "object", "properties": props}
		if n.shape == atomicObj {
			s["x-kubernetes-map-type"] = "atomic"
		}
		return s
	case granular, atomicMap:
		s := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
		if n.shape == atomicMap {
			s["x-kubernetes-map-type"] = "atomic"
		}
		return s
	case atomicList, set:
		s := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		if n.shape == set {
			s["x-kubernetes-list-type"] = "set"
		}
		return s
	case listMap:
		item := (&node{shape: object, fields: n.fields}).openAPI()
		item["required"] = n.keys
		return map[string]any{"type": "array", "items": item, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": n.keys}
	}
	panic(fmt.Sprintf("no schema for shape %d", n.shape))
}

// value draws a value of the node: full values have every required field.
func (n *node) value(r *rand.Rand, full bool) any {
	switch n.shape {
	case str, integer:
		return pick(r, n.vocabulary())
	case constant:
		return n.enum[0]
	case object, atomicObj:
		return n.objectValue(r, full, nil)
	case granular, atomicMap:
		m := map[string]any{}
		for _, k := range words {
			if r.IntN(2) == 0 {
				m[k.(string)] = pick(r, words)
			}
		}
		return m
	case atomicList, set:
		var l []any
		for _, w := range words {
			if r.IntN(2) == 0 {
				l = append(l, w)
			}
		}
		if n.shape == atomicList && len(l) > 1 && r.IntN(2) == 0 {
			l[0], l[1] = l[1], l[0]
		}
		return l
	case listMap:
		return n.listMapValue(r, full)
	}
	panic(fmt.Sprintf("no value for shape %d", n.shape))
}

func (n *node) vocabulary() []any {
	if len(n.enum) > 0 {
		return n.enum
	}
	if n.shape == integer {
		return ints
	}
	return words
}

// objectValue draws an object with a random subset of the fields (the required ones too
// when full), and the values in keep.
func (n *node) objectValue(r *rand.Rand, full bool, keep map[string]any) map[string]any {
	m := map[string]any{}
	for _, f := range n.fields {
		if v, ok := keep[f.name]; ok {
			m[f.name] = v
		} else if (full && f.required) || r.IntN(2) == 0 {
			m[f.name] = f.node.value(r, full)
		}
	}
	return m
}

// listMapValue draws up to three items with distinct keys; one at least when full.
func (n *node) listMapValue(r *rand.Rand, full bool) []any {
	var l []any
	seen := map[string]bool{}
	count := r.IntN(4)
	if full && count == 0 {
		count = 1
	}
	for range count {
		keys := map[string]any{}
		for _, f := range n.fields {
			if isKey(n.keys, f.name) {
				keys[f.name] = f.node.value(r, full)
			}
		}
		id := fmt.Sprint(keys)
		if seen[id] {
			continue
		}
		seen[id] = true
		l = append(l, n.objectValue(r, full, keys))
	}
	return l
}

func isKey(keys []string, name string) bool {
	for _, k := range keys {
		if k == name {
			return true
		}
	}
	return false
}

func pick(r *rand.Rand, from []any) any { return from[r.IntN(len(from))] }
