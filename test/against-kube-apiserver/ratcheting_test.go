package againstkube

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCRDValidationRatcheting: once a CRD's schema tightens, an update that leaves an invalid
// value alone where the old object correlates (a field, a struct's field, a keyed list's item,
// a map's value) passes, for OpenAPI schema errors and CEL rules alike; a changed invalid value
// or one that cannot be correlated (inside an atomic list) is refused; a create is checked in
// full, and schema errors keep CEL rules from running. Every answer is compared with kube's.
func TestCRDValidationRatcheting(t *testing.T) {
	lapis, kube := servers(t)
	const name = "ratchets.kubediff.example.com"
	crd := func(schema string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},
 "spec":{"group":"kubediff.example.com","scope":"Namespaced",
  "names":{"plural":"ratchets","singular":"ratchet","kind":"Ratchet","listKind":"RatchetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + schema + `}}]}}`
	}
	const loose = `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`
	const strict = `{"type":"object","properties":{"spec":{"type":"object","properties":{
  "field":{"type":"string","enum":["ok"]},
  "struct":{"type":"object","properties":{"field":{"type":"string","enum":["ok"]}}},
  "list":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["key"],
   "items":{"type":"object","required":["key"],"properties":{"key":{"type":"string"},"field":{"type":"string","enum":["ok"]}}}},
  "values":{"type":"object","additionalProperties":{"type":"object","properties":{"field":{"type":"string","enum":["ok"]}}}},
  "atomic":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"object","properties":{"field":{"type":"string","enum":["ok"]}}}},
  "rule":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'ok'","message":"rule must be ok"}]},
  "ruled":{"type":"object","properties":{"field":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.field == 'ok'"}]},
  "other":{"type":"string"}}}}}`
	ratchets := "/apis/kubediff.example.com/v1/namespaces/" + ns + "/ratchets"
	for _, s := range []*target{lapis, kube} {
		s.do(request{method: "DELETE", path: crds + "/" + name})
	}
	for _, s := range []*target{lapis, kube} {
		eventually(t, s, "the CRD created", func() bool {
			return s.do(request{method: "POST", path: crds, contentType: jsonType, body: crd(loose)}).code == http.StatusCreated
		})
		eventually(t, s, "ratchets served", func() bool { return s.do(request{method: "GET", path: ratchets}).code == http.StatusOK })
	}
	t.Cleanup(func() {
		for _, s := range []*target{lapis, kube} {
			s.do(request{method: "DELETE", path: crds + "/" + name})
		}
	})

	apply := func(obj, spec string) request {
		return request{method: "PATCH", path: ratchets + "/" + obj + "?fieldManager=test&force=true", contentType: applyType,
			body: fmt.Sprintf("apiVersion: kubediff.example.com/v1\nkind: Ratchet\nmetadata: {name: %s}\nspec: %s\n", obj, spec)}
	}
	const invalid = `{field: bad, struct: {field: bad}, list: [{key: a, field: bad}, {key: b, field: ok}], values: {a: {field: bad}}, rule: bad, ruled: {field: bad}, other: x}`
	for _, s := range []*target{lapis, kube} {
		s.must(t, apply("correlated", invalid), http.StatusCreated)
		s.must(t, apply("uncorrelated", `{atomic: [{field: bad}], other: x}`), http.StatusCreated)
	}

	// Tighten the schema; the new one is in force once a create of an invalid object fails.
	for _, s := range []*target{lapis, kube} {
		current := s.must(t, request{method: "GET", path: crds + "/" + name}, http.StatusOK)
		rv := nested(decodeObject(t, current.body), "metadata", "resourceVersion")
		body := strings.Replace(crd(strict), `"metadata":{"name":"`+name+`"}`, fmt.Sprintf(`"metadata":{"name":%q,"resourceVersion":%q}`, name, rv), 1)
		s.must(t, request{method: "PUT", path: crds + "/" + name, contentType: jsonType, body: body}, http.StatusOK)
		eventually(t, s, "the strict schema in force", func() bool {
			probe := request{method: "POST", path: ratchets + "?dryRun=All", contentType: jsonType,
				body: `{"apiVersion":"kubediff.example.com/v1","kind":"Ratchet","metadata":{"name":"probe"},"spec":{"field":"bad"}}`}
			return s.do(probe).code == http.StatusUnprocessableEntity
		})
	}

	steps := []struct {
		what string
		r    request
	}{
		{"an unchanged invalid field ratchets", apply("correlated", strings.Replace(invalid, "other: x", "other: changed", 1))},
		{"a label change ratchets too", request{method: "PATCH", path: ratchets + "/correlated", contentType: mergeType, body: `{"metadata":{"labels":{"l":"v"}}}`}},
		{"a changed invalid field is refused", apply("correlated", strings.Replace(invalid, "field: bad, struct", "field: worse, struct", 1))},
		{"a changed invalid struct field is refused", apply("correlated", strings.Replace(invalid, "struct: {field: bad}", "struct: {field: worse}", 1))},
		{"a changed invalid list item is refused", apply("correlated", strings.Replace(invalid, "{key: a, field: bad}", "{key: a, field: worse}", 1))},
		{"a changed invalid map value is refused", apply("correlated", strings.Replace(invalid, "values: {a: {field: bad}}", "values: {a: {field: worse}}", 1))},
		{"a changed value under a CEL rule is refused", apply("correlated", strings.Replace(invalid, "rule: bad", "rule: worse", 1))},
		{"a changed object under a CEL rule is refused", apply("correlated", strings.Replace(invalid, "ruled: {field: bad}", "ruled: {field: worse}", 1))},
		{"an atomic list's invalid item does not correlate", apply("uncorrelated", `{atomic: [{field: bad}], other: changed}`)},
		{"a create is checked in full", apply("created", `{rule: bad, other: x}`)},
		{"schema errors keep CEL rules from running", apply("blocked", `{field: bad, rule: bad}`)},
		{"a made-valid field passes", apply("correlated", strings.Replace(invalid, "field: bad, struct", "field: ok, struct", 1))},
	}
	for _, st := range steps {
		t.Run(st.what, func(t *testing.T) {
			compare(t, st.r, send(st.r, st.r), allowance{})
		})
	}
}

// eventually polls ok for up to 30 s.
func eventually(t *testing.T, s *target, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s: not after 30 s", s.name, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func decodeObject(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}
