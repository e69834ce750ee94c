package patch

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPatches(t *testing.T) {
	const (
		cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}`
		sa = `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"s","finalizers":["a/b"]},"secrets":[{"name":"s1"}]}`
	)
	copies := make([]string, 24)
	for i := range copies {
		copies[i] = fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/c%d"}`, i)
	}
	tests := []struct {
		name, kind, doc, patch string
		want                   string // the patched document, or "error <Kind>: <message prefix>"
	}{
		{"JSON patch", "json", cm, `[{"op":"add","path":"/data/b","value":null}]`, `{"apiVersion":"v1","data":{"a":"1","b":null},"kind":"ConfigMap","metadata":{"name":"c"}}`},
		{"copy bomb", "json", cm, "[" + strings.Join(copies, ",") + "]", "error 3: Unable to complete the copy, the accumulated size increase of copy is"},
		{"operations over the limit", "json", cm, "[" + strings.Repeat(`{"op":"test","path":"/data/a","value":"1"},`, MaxJSONPatchOperations) + `{"op":"remove","path":"/data/a"}]`,
			"error 1: The allowed maximum operations in a JSON patch is 10000, got 10001"},
		{"root replace without a value", "json", cm, `[{"op":"replace","path":""}]`, `error 2: invalid JSON patch operation 0: replace: missing "value"`},
		{"root test without a value", "json", cm, `[{"op":"test","path":""}]`, `error 2: invalid JSON patch operation 0: test: missing "value"`},
		{"move without from", "json", cm, `[{"op":"move","path":"/data/x","from":null}]`, `error 2: invalid JSON patch operation 0: move: "from" must be a string`},
		{"not a list", "json", cm, `{}`, "error 0: json: cannot unmarshal object"},
		{"merge patch that is not an object", "merge", cm, `1`, "error 0: Invalid JSON Patch"},
		{"merge patch", "merge", cm, `{"data":{"a":null}}`, `{"apiVersion":"v1","data":{},"kind":"ConfigMap","metadata":{"name":"c"}}`},
		{"strategic merge patch", "strategic", sa, `{"secrets":[{"name":"s2"}]}`, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"finalizers":["a/b"],"name":"s"},"secrets":[{"name":"s2"},{"name":"s1"}]}`},
		{"null strategic merge patch", "strategic", sa, `null`, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"finalizers":["a/b"],"name":"s"},"secrets":[{"name":"s1"}]}`},
		{"object merge key", "strategic", sa, `{"secrets":[{"name":{}}]}`, "error 0: invalid strategic merge patch: secrets[0].name: the merge key must be"},
		{"list merge key", "strategic", sa, `{"secrets":[{"name":[]}]}`, "error 0: invalid strategic merge patch: secrets[0].name: the merge key must be"},
		{"object merge key ordered", "strategic", sa, `{"$setElementOrder/secrets":[{"name":{}}],"secrets":[{"name":{}}]}`, "error 0: invalid strategic merge patch: $setElementOrder/secrets[0].name"},
		{"scalar where objects are merged", "strategic", sa, `{"secrets":["s2"]}`, `error 0: invalid strategic merge patch: secrets[0]: want an object (merged by its "name"), got a string`},
		{"object deleted from a list of scalars", "strategic", sa, `{"metadata":{"$deleteFromPrimitiveList/finalizers":[{}]}}`, "error 0: invalid strategic merge patch: metadata.$deleteFromPrimitiveList/finalizers[0]: want a string"},
		{"object kept by $retainKeys", "strategic", sa, `{"$retainKeys":[{}]}`, "error 0: invalid strategic merge patch: $retainKeys[0]"},
		{"list of lists", "strategic", sa, `{"secrets":[[1]]}`, "error 0: invalid strategic merge patch: secrets[0]: want an object"},
		{"library error", "strategic", sa, `{"secrets":[{"namespace":"x"}]}`, "error 3: map: map[namespace:x] does not contain declared merge key: name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out []byte
			var err error
			switch tt.kind {
			case "json":
				out, err = JSON([]byte(tt.doc), []byte(tt.patch))
			case "merge":
				out, err = Merge([]byte(tt.doc), []byte(tt.patch))
			case "strategic":
				out, err = Strategic([]byte(tt.doc), []byte(tt.patch), &corev1.ServiceAccount{})
			}
			got := string(out)
			if err != nil {
				e, ok := AsError(err)
				if !ok {
					t.Fatalf("error %T is not an *Error: %v", err, err)
				}
				got = fmt.Sprintf("error %d: %s", e.Kind, e.Message)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
