package fieldmanager

import (
	"sort"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// listDecision makes the list at path a list map keyed by key, or, with no key, an atomic list
// spelled out in the schema: a list whose items managedFields address by key but which can no
// longer be keyed. Spelled out, SMD reconciles those entries into ownership of the whole list
// (its reconciliation skips untyped maps, so a list left to the deduced type would keep
// entries for items that no longer exist, and their owners would be forgotten).
type listDecision struct {
	path pattern
	key  string
}

// decide turns what a merge has seen into the lists that merge as list maps, checked against
// one version's schema (root; nil when the resource has none), shortest paths first.
//
// A list is a list map keyed by K when every item seen at its pattern (in the live object, the
// applied configuration, and every object the merge converts) is an object carrying K, and K
// is, of the conventional keys all items carry, the one managedFields already address the
// items by, else the first in the convention's order. The pin keeps a decision stable when
// items gain another conventional key that comes first. A list whose items do not all carry a
// key stays atomic, whatever managedFields say: SMD reconciles the per-item entries into
// ownership of the whole list, so no owner is forgotten. Only lists the schema is silent about
// qualify, and only where every list above them merges item by item.
func decide(facts *listFactSet, root *spec.Schema) []listDecision {
	all := make([]*listFacts, 0, len(facts.byPath))
	for _, f := range facts.byPath {
		all = append(all, f)
	}
	sort.Slice(all, func(i, j int) bool {
		if len(all[i].path) != len(all[j].path) {
			return len(all[i].path) < len(all[j].path)
		}
		return all[i].path.key() < all[j].path.key()
	})
	keyed := map[string]bool{}
	var out []listDecision
	for _, f := range all {
		key := chooseKey(f, facts.keys)
		if f.notList || (key == "" && len(f.pinned) == 0) || !reachable(f.path, root, keyed) {
			continue
		}
		if key != "" {
			keyed[f.path.key()] = true
		}
		out = append(out, listDecision{path: f.path, key: key})
	}
	return out
}

func chooseKey(f *listFacts, order []string) string {
	possible := func(k string) bool { return !f.seen || f.common[k] }
	for _, k := range order {
		if f.pinned[k] && possible(k) {
			return k
		}
	}
	if !f.seen {
		return ""
	}
	for _, k := range order {
		if f.common[k] {
			return k
		}
	}
	return ""
}

// reachable reports whether the list at path is one the schema is silent about, below nothing
// atomic: every list above it is granular (a map or set list, or one already decided keyed).
func reachable(path pattern, root *spec.Schema, keyed map[string]bool) bool {
	if len(path) == 0 || path[0] == "metadata" || path[0] == itemSegment {
		return false
	}
	sch, preserve := root, root == nil
	for i, seg := range path {
		if seg == itemSegment {
			silent, granular := listKind(sch)
			if !granular && !(silent && keyed[path[:i].key()]) {
				return false
			}
			p := preserve || extBool(sch, "x-kubernetes-preserve-unknown-fields")
			if sch != nil && sch.Items != nil && sch.Items.Schema != nil {
				sch, preserve = sch.Items.Schema, p
			} else {
				sch, preserve = nil, true
			}
			continue
		}
		if sch != nil && extString(sch, "x-kubernetes-map-type") == "atomic" {
			return false
		}
		child, p, ok := childSchema(sch, preserve, seg)
		if !ok {
			return false
		}
		sch, preserve = child, p
	}
	silent, _ := listKind(sch)
	return silent
}

// signature names a set of decisions: equal sets, equal signatures, so a merge's objects share
// one cached schema.
func signature(ds []listDecision) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.path.key() + "\x02" + d.key
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x03")
}
