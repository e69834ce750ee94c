package fieldmanager

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lapis-dev/lapis/internal/fieldmanager/conventions"
)

// TestDecide: which lists of an untyped object become list maps, and by which key, from the
// objects a merge sees and the keys their managedFields use.
func TestDecide(t *testing.T) {
	item := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	spec := func(field string, items ...any) map[string]any {
		return map[string]any{"spec": map[string]any{field: items}}
	}
	for _, tc := range []struct {
		name    string
		objects []map[string]any
		managed string // fieldsV1 of one entry
		want    string // path=key, ...; key "" is atomic
	}{
		{name: "all named", objects: []map[string]any{spec("l", item("name", "a"), item("name", "b"))}, want: "spec.l=name"},
		{name: "order of precedence", objects: []map[string]any{spec("l", item("name", "a", "containerPort", int64(1)))}, want: "spec.l=containerPort"},
		{name: "union of objects", objects: []map[string]any{
			spec("l", item("name", "a", "port", int64(1))), spec("l", item("name", "b"))}, want: "spec.l=name"},
		{name: "repeated value", objects: []map[string]any{
			spec("l", item("containerPort", int64(53), "name", "a"), item("containerPort", int64(53), "name", "b"))}, want: "spec.l=name"},
		{name: "no conventional key", objects: []map[string]any{spec("l", item("id", "a"))}, want: ""},
		{name: "scalars", objects: []map[string]any{spec("l", "a", "b")}, want: ""},
		{name: "empty lists say nothing", objects: []map[string]any{spec("l"), spec("l", item("name", "a"))}, want: "spec.l=name"},
		{name: "pinned key kept", objects: []map[string]any{spec("l", item("name", "a", "port", int64(1)))},
			managed: `{"f:spec":{"f:l":{"k:{\"name\":\"a\"}":{".":{}}}}}`, want: "spec.l=name"},
		{name: "pinned key lost: atomic", objects: []map[string]any{spec("l", item("name", "a"), item("value", "x"))},
			managed: `{"f:spec":{"f:l":{"k:{\"name\":\"a\"}":{".":{}}}}}`, want: "spec.l="},
		{name: "pin without content", managed: `{"f:spec":{"f:l":{"k:{\"name\":\"a\"}":{".":{}}}}}`, want: "spec.l=name"},
		{name: "nested under a list map", objects: []map[string]any{spec("c", item("name", "a", "ports", []any{item("containerPort", int64(80))}))},
			want: "spec.c=name, spec.c[].ports=containerPort"},
		{name: "nested under an atomic list", objects: []map[string]any{spec("c", item("id", "a", "ports", []any{item("containerPort", int64(80))}))},
			want: ""},
		{name: "a list in one object, a map in another", objects: []map[string]any{
			spec("l", item("name", "a")), {"spec": map[string]any{"l": map[string]any{"name": "a"}}}}, want: ""},
		{name: "metadata is not the convention's", objects: []map[string]any{{"metadata": map[string]any{"ownerReferences": []any{item("uid", "u")}}}}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			facts := newListFactSet(conventions.MergeKeys())
			for _, o := range tc.objects {
				facts.addObject(o, nil)
			}
			if tc.managed != "" {
				facts.addManaged([]metav1.ManagedFieldsEntry{{Manager: "m", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(tc.managed)}}})
			}
			var got []string
			for _, d := range decide(facts, nil) {
				got = append(got, strings.ReplaceAll(strings.Join(d.path, "."), "."+itemSegment, "[]")+"="+d.key)
			}
			var want []string
			if tc.want != "" {
				want = strings.Split(tc.want, ", ")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
