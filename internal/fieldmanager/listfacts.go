package fieldmanager

import (
	"bytes"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// A pattern names a list (or any node) of an object the way a schema does: by field names,
// with itemSegment for "an item of the list", whatever its index or key. SMD's schema is per
// type, so a decision about the list at .spec.containers[*].ports holds for every container.
type pattern []string

// itemSegment stands for a list item in a pattern; no JSON field name is spelled like it.
const itemSegment = "\x00[]"

func (p pattern) key() string { return strings.Join(p, "\x01") }

func (p pattern) child(name string) pattern {
	out := make(pattern, len(p), len(p)+1)
	copy(out, p)
	return append(out, name)
}

// listFacts is what the objects of one merge show about the lists at one pattern.
type listFacts struct {
	path pattern
	// seen: some list at the pattern had items. common then holds the conventional keys that
	// every item of every such list carries (a scalar, distinct within its list); until then
	// nothing is known and every key is possible.
	seen   bool
	common map[string]bool
	// pinned are the conventional keys managedFields address the pattern's items by
	// (k:{"name":...}): the list was a list map keyed by them when those entries were written.
	pinned map[string]bool
	// notList: some object has something else than a list there (a type change under
	// preserve-unknown-fields); the schema must then stay silent about the node.
	notList bool
}

// listFactSet gathers listFacts by pattern over every object a merge sees.
type listFactSet struct {
	keys   []string // the conventional keys, in order of precedence
	byPath map[string]*listFacts
}

func newListFactSet(keys []string) *listFactSet {
	return &listFactSet{keys: keys, byPath: map[string]*listFacts{}}
}

func (s *listFactSet) at(p pattern) *listFacts {
	k := p.key()
	f, ok := s.byPath[k]
	if !ok {
		f = &listFacts{path: p}
		s.byPath[k] = f
	}
	return f
}

// addList records one list found at p (one the schema says nothing about).
func (s *listFactSet) addList(p pattern, items []any) {
	if len(items) == 0 {
		return // an empty list fits any key
	}
	shared := map[string]bool{}
	for _, k := range s.keys {
		if carriedByAll(items, k) {
			shared[k] = true
		}
	}
	f := s.at(p)
	if !f.seen {
		f.seen, f.common = true, shared
		return
	}
	for k := range f.common {
		if !shared[k] {
			delete(f.common, k)
		}
	}
}

// carriedByAll reports whether every item is an object with a scalar value for key, no two
// alike: the list could be a list map keyed by it (SMD refuses duplicate keys in an applied
// configuration, so a repeated value keeps the list atomic rather than failing the apply).
func carriedByAll(items []any, key string) bool {
	values := make(map[any]bool, len(items))
	for _, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			return false
		}
		v, ok := obj[key]
		if !ok {
			return false
		}
		switch v.(type) {
		case string, bool, int64, float64, int, int32, float32:
		default:
			return false
		}
		if values[v] {
			return false
		}
		values[v] = true
	}
	return true
}

// addManaged records the keys by which managedFields (at any version of the resource) address
// list items: entries written while a list was a list map keep it one.
func (s *listFactSet) addManaged(entries []metav1.ManagedFieldsEntry) {
	conventional := map[string]bool{}
	for _, k := range s.keys {
		conventional[k] = true
	}
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue
		}
		s.pinsIn(set, nil, conventional)
	}
}

func (s *listFactSet) pinsIn(set *fieldpath.Set, at pattern, conventional map[string]bool) {
	visit := func(pe fieldpath.PathElement) (pattern, bool) {
		switch {
		case pe.FieldName != nil:
			if len(at) == 0 && *pe.FieldName == "metadata" {
				return nil, false // kube's ObjectMeta: typed, never by convention
			}
			return at.child(*pe.FieldName), true
		case pe.Key != nil:
			if len(*pe.Key) == 1 && conventional[(*pe.Key)[0].Name] {
				f := s.at(at)
				if f.pinned == nil {
					f.pinned = map[string]bool{}
				}
				f.pinned[(*pe.Key)[0].Name] = true
			}
		}
		return at.child(itemSegment), true
	}
	set.Children.Iterate(func(pe fieldpath.PathElement) {
		child, ok := visit(pe)
		if !ok {
			return
		}
		if sub, found := set.Children.Get(pe); found {
			s.pinsIn(sub, child, conventional)
		}
	})
	set.Members.Iterate(func(pe fieldpath.PathElement) { visit(pe) })
}

// addObject walks an object's content along its version's schema, recording the lists the
// schema says nothing about: those under x-kubernetes-preserve-unknown-fields (or with no
// schema at all, root nil), and typed lists with no x-kubernetes-list-type. Lists marked
// atomic, atomic maps, and metadata (kube's ObjectMeta) are not the convention's.
func (s *listFactSet) addObject(content map[string]any, root *spec.Schema) {
	for name, v := range content {
		if name == "metadata" || name == "apiVersion" || name == "kind" {
			continue
		}
		child, preserve, ok := childSchema(root, root == nil, name)
		if ok {
			s.walk(v, child, preserve, pattern{name})
		}
	}
}

func (s *listFactSet) walk(v any, sch *spec.Schema, preserve bool, at pattern) {
	if _, isList := v.([]any); !isList && v != nil && sch == nil {
		// Only untyped nodes can hold a list in one object and something else in another.
		s.at(at).notList = true
	}
	switch v := v.(type) {
	case map[string]any:
		if sch != nil && extString(sch, "x-kubernetes-map-type") == "atomic" {
			return
		}
		preserve = preserve || extBool(sch, "x-kubernetes-preserve-unknown-fields")
		for name, c := range v {
			child, p, ok := childSchema(sch, preserve, name)
			if ok {
				s.walk(c, child, p, at.child(name))
			}
		}
	case []any:
		silent, granular := listKind(sch)
		if silent {
			s.addList(at, v)
		} else if !granular {
			return
		}
		var items *spec.Schema
		if sch != nil && sch.Items != nil {
			items = sch.Items.Schema
		}
		p := preserve || extBool(sch, "x-kubernetes-preserve-unknown-fields")
		for _, item := range v {
			s.walk(item, items, p || items == nil, at.child(itemSegment))
		}
	}
}

// childSchema is the schema of field name of an object of schema sch: nil with preserve set
// when unknown fields are kept untyped there; ok is false when the field has no place.
func childSchema(sch *spec.Schema, preserve bool, name string) (child *spec.Schema, childPreserve, ok bool) {
	if sch == nil {
		return nil, true, preserve
	}
	preserve = preserve || extBool(sch, "x-kubernetes-preserve-unknown-fields")
	if p, found := sch.Properties[name]; found {
		return &p, preserve, true
	}
	if ap := sch.AdditionalProperties; ap != nil {
		if ap.Schema != nil {
			return ap.Schema, preserve, true
		}
		if ap.Allows {
			return nil, true, true
		}
	}
	if preserve || len(sch.Properties) == 0 {
		return nil, true, true
	}
	return nil, false, false
}

// listKind says what a list's schema declares: silent (no list type: the convention decides),
// or granular (a map or set list, whose items merge one by one); neither means atomic.
func listKind(sch *spec.Schema) (silent, granular bool) {
	if sch == nil {
		return true, false
	}
	switch extString(sch, "x-kubernetes-list-type") {
	case "":
	case "map", "set":
		return false, true
	default:
		return false, false
	}
	if ps := extString(sch, "x-kubernetes-patch-strategy"); ps != "" {
		return false, strings.HasPrefix(ps, "merge")
	}
	return true, false
}

func extString(sch *spec.Schema, name string) string {
	if sch == nil {
		return ""
	}
	s, _ := sch.Extensions.GetString(name)
	return s
}

func extBool(sch *spec.Schema, name string) bool {
	if sch == nil {
		return false
	}
	b, _ := sch.Extensions.GetBool(name)
	return b
}
