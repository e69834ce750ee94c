package sharedetcd

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// diff lists where got differs from want, one line per differing path ("path: want → got",
// "absent" for a missing value), sorted, at most limit lines (and a count of the rest).
func diff(want, got any, limit int) []string {
	var lines []string
	walkDiff("", want, got, &lines)
	slices.Sort(lines)
	if len(lines) > limit {
		lines = append(lines[:limit], fmt.Sprintf("… and %d more", len(lines)-limit))
	}
	return lines
}

func walkDiff(path string, want, got any, lines *[]string) {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		for k := range wm {
			if _, ok := gm[k]; !ok {
				*lines = append(*lines, fmt.Sprintf("%s: %s → absent", join(path, k), shorten(wm[k], 160)))
				continue
			}
			walkDiff(join(path, k), wm[k], gm[k], lines)
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				*lines = append(*lines, fmt.Sprintf("%s: absent → %s", join(path, k), shorten(gm[k], 160)))
			}
		}
		return
	}
	wa, wok := want.([]any)
	ga, gok := got.([]any)
	if wok && gok && len(wa) == len(ga) {
		for i := range wa {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), wa[i], ga[i], lines)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*lines = append(*lines, fmt.Sprintf("%s: %s → %s", orRoot(path), shorten(want, 240), shorten(got, 240)))
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(whole value)"
	}
	return path
}

// decode is JSON as generic values; what is not JSON is kept as a string.
func decode(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "not JSON: " + string(b)
	}
	return v
}

func TestDiff(t *testing.T) {
	for _, c := range []struct {
		name      string
		want, got string
		lines     []string
	}{
		{"equal", `{"a":1,"b":[1,{"c":"x"}]}`, `{"b":[1,{"c":"x"}],"a":1}`, nil},
		{"changed leaf", `{"a":{"b":"x"}}`, `{"a":{"b":"y"}}`, []string{`a.b: "x" → "y"`}},
		{"missing and extra", `{"a":1}`, `{"b":2}`, []string{`a: 1 → absent`, `b: absent → 2`}},
		{"list item", `{"l":[{"n":1},{"n":2}]}`, `{"l":[{"n":1},{"n":3}]}`, []string{`l[1].n: 2 → 3`}},
		{"list length", `{"l":[1]}`, `{"l":[1,2]}`, []string{`l: [1] → [1,2]`}},
		{"type", `{"a":"1"}`, `{"a":1}`, []string{`a: "1" → 1`}},
		{"root", `1`, `2`, []string{`(whole value): 1 → 2`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := diff(decode([]byte(c.want)), decode([]byte(c.got)), 10)
			if strings.Join(got, "\n") != strings.Join(c.lines, "\n") {
				t.Errorf("diff = %q, want %q", got, c.lines)
			}
		})
	}
	if got := diff(decode([]byte(`{"a":1,"b":1,"c":1}`)), decode([]byte(`{}`)), 2); len(got) != 3 || got[2] != "… and 1 more" {
		t.Errorf("limited diff = %q", got)
	}
}

func TestMaskTable(t *testing.T) {
	leases := resource{group: "coordination.k8s.io", version: "v1", name: "leases", namespaced: true}
	table := decode([]byte(`{"kind":"Table","metadata":{"resourceVersion":"9"},
		"columnDefinitions":[{"name":"Name"},{"name":"Age"}],
		"rows":[{"cells":["a","5s","6s"],"object":{"metadata":{"name":"a","namespace":"sd"}}},
		        {"cells":["apiserver-x","1s"],"object":{"metadata":{"name":"apiserver-x","namespace":"kube-system","labels":{"apiserver.kubernetes.io/identity":"kube-apiserver"}}}}]}`)).(map[string]any)
	want := decode([]byte(`{"kind":"Table","metadata":{},
		"columnDefinitions":[{"name":"Name"},{"name":"Age"}],
		"rows":[{"cells":["a","(age)","(age)"],"object":{"metadata":{"name":"a","namespace":"sd"}}}]}`))
	if d := diff(want, decode(mustJSON(t, maskTable(leases, table))), 10); len(d) > 0 {
		t.Errorf("maskTable: %q", d)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
