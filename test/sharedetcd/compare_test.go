package sharedetcd

import (
	"slices"
	"strings"
	"testing"
)

// compareRecordings fails t for every difference between what the first server served
// (want) and what the second served of the same etcd (got): each object's GET, each list's
// items and their order, each list's Table, and the kubernetes Service's endpoints. A diff
// line reads "path: first server's value → second server's value".
func compareRecordings(t *testing.T, rs []resource, want, got *recording) {
	t.Helper()
	each := func(check func(t *testing.T, r resource, w, g *listRecord)) func(t *testing.T) {
		return func(t *testing.T) {
			for _, r := range rs {
				w, g := want.lists[r.id()], got.lists[r.id()]
				switch {
				case w == nil || g == nil:
					t.Errorf("%s: not recorded from both servers", r.id())
				case w.failed != "":
					t.Errorf("%s: %s refused the list: %s", r.id(), want.server, w.failed)
				case g.failed != "":
					t.Errorf("%s: GET %s: %s answered %s, %s 200", r.id(), r.listPath(), got.server, g.failed, want.server)
				default:
					check(t, r, w, g)
				}
			}
		}
	}
	pair := want.server + " → " + got.server
	t.Run("objects", each(func(t *testing.T, r resource, w, g *listRecord) { compareObjects(t, r, w, g, pair) }))
	t.Run("lists", each(func(t *testing.T, r resource, w, g *listRecord) { compareLists(t, r, w, g, pair) }))
	t.Run("tables", each(func(t *testing.T, r resource, w, g *listRecord) { compareTables(t, r, w, g, pair) }))
	t.Run("kubernetes endpoints", each(func(t *testing.T, r resource, w, g *listRecord) {
		if (r.name != "endpoints" || r.group != "") && (r.name != "endpointslices" || r.group != "discovery.k8s.io") {
			return
		}
		wo, _ := w.objects["default/kubernetes"].(map[string]any)
		gob, _ := g.objects["default/kubernetes"].(map[string]any)
		if wo == nil || gob == nil {
			t.Errorf("%s default/kubernetes: served by %s: %t, by %s: %t", r.id(), want.server, wo != nil, got.server, gob != nil)
			return
		}
		if d := diff(kubernetesEndpoints(r, wo), kubernetesEndpoints(r, gob), 10); len(d) > 0 {
			t.Errorf("%s default/kubernetes: where it sends clients differs (%s):\n\t%s", r.id(), pair, strings.Join(d, "\n\t"))
		}
	}))
}

// compareObjects compares each object's GET; it reports objects only one server served.
func compareObjects(t *testing.T, r resource, w, g *listRecord, pair string) {
	t.Helper()
	for _, key := range sortedKeys(w.objects) {
		wo := w.objects[key]
		if own(r, wo) {
			continue
		}
		gob, ok := g.objects[key]
		if !ok {
			t.Errorf("%s %s: missing (%s): the first served it, the second does not list it", r.id(), key, pair)
			continue
		}
		if d := diff(wo, gob, 20); len(d) > 0 {
			t.Errorf("%s %s: GET %s differs (%s):\n\t%s", r.id(), key, pathOf(r, key), pair, strings.Join(d, "\n\t"))
		}
	}
	var extra []string
	for _, key := range sortedKeys(g.objects) {
		if _, ok := w.objects[key]; !ok && !own(r, g.objects[key]) {
			extra = append(extra, key)
		}
	}
	if len(extra) > 0 {
		t.Errorf("%s: extra (%s): only the second server lists %s; the first of them: %s", r.id(), pair, strings.Join(extra, " "), shorten(g.objects[extra[0]], 600))
	}
}

// compareLists compares the order of each list's items and each item; object-level
// differences already reported by compareObjects show here again only as a count.
func compareLists(t *testing.T, r resource, w, g *listRecord, pair string) {
	t.Helper()
	wn, gn := itemKeys(r, w.items), itemKeys(r, g.items)
	if !slices.Equal(wn, gn) {
		t.Errorf("%s: GET %s lists other items or another order (%s):\n\tfirst:  %s\n\tsecond: %s", r.id(), r.listPath(), pair,
			strings.Join(wn, " "), strings.Join(gn, " "))
		return
	}
	differing := 0
	var first []string
	for i, item := range ownless(r, w.items) {
		if d := diff(item, ownless(r, g.items)[i], 5); len(d) > 0 {
			if differing == 0 {
				first = append([]string{wn[i]}, d...)
			}
			differing++
		}
	}
	if differing > 0 {
		t.Errorf("%s: GET %s: %d items differ (%s); the first, %s:\n\t%s", r.id(), r.listPath(), differing, pair, first[0], strings.Join(first[1:], "\n\t"))
	}
}

// compareTables compares each list's Table, but for Age cells: first the objects of its rows
// and their order, then the whole Table.
func compareTables(t *testing.T, r resource, w, g *listRecord, pair string) {
	t.Helper()
	wt, gt := maskTable(r, w.table), maskTable(r, g.table)
	if wn, gn := rowKeys(wt), rowKeys(gt); !slices.Equal(wn, gn) {
		t.Errorf("%s: GET %s as Table has rows of other objects or in another order (%s):\n\tfirst:  %s\n\tsecond: %s", r.id(), r.listPath(), pair,
			strings.Join(wn, " "), strings.Join(gn, " "))
		return
	}
	if d := diff(wt, gt, 20); len(d) > 0 {
		t.Errorf("%s: GET %s as Table differs (%s), but for Age cells:\n\t%s", r.id(), r.listPath(), pair, strings.Join(d, "\n\t"))
	}
}

// rowKeys are the objectKeys of a Table's rows' objects, in order.
func rowKeys(table map[string]any) []string {
	var keys []string
	rows, _ := table["rows"].([]any)
	for _, row := range rows {
		rm, _ := row.(map[string]any)
		obj, _ := rm["object"].(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		keys = append(keys, objectKey(md))
	}
	return keys
}

// own tells whether a recorded object is server-own (serverOwn).
func own(r resource, obj any) bool {
	o, _ := obj.(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	return md != nil && serverOwn(r, md)
}

// ownless are the items but the server-own ones.
func ownless(r resource, items []map[string]any) []map[string]any {
	var out []map[string]any
	for _, item := range items {
		if !own(r, item) {
			out = append(out, item)
		}
	}
	return out
}

// itemKeys are the objectKeys of the items but the server-own ones, in list order.
func itemKeys(r resource, items []map[string]any) []string {
	var keys []string
	for _, item := range ownless(r, items) {
		md, _ := item["metadata"].(map[string]any)
		keys = append(keys, objectKey(md))
	}
	return keys
}

func pathOf(r resource, key string) string {
	namespace, name, ok := strings.Cut(key, "/")
	if !ok {
		namespace, name = "", key
	}
	return r.objectPath(namespace, name)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
