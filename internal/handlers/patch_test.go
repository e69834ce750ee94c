package handlers_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	mergePatch     = "Content-Type: application/merge-patch+json"
	jsonPatch      = "Content-Type: application/json-patch+json"
	strategicPatch = "Content-Type: application/strategic-merge-patch+json"
)

func TestPatch(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("p", map[string]string{"a": "1"})})
	f.must(http.StatusCreated, call{method: "POST", path: secrets, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"YQ=="}}`})
	f.must(http.StatusCreated, call{method: "POST", path: widgetsURL, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"x":1}}`})

	const (
		cm     = configMaps + "/p"
		secret = secrets + "/s"
		widget = widgetsURL + "/w"
		// What kube-apiserver answers for a patch type a custom resource does not take.
		crPatchTypes = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
		conflict     = `Operation cannot be fulfilled on configmaps "p": the object has been modified; please apply your changes to the latest version and try again`
	)
	// The rows run in order against the same objects.
	tests := []struct {
		name    string
		call    call
		want    want
		field   string // a dotted path checked in the answer when the patch applies
		value   string
		warning string
	}{
		{"merge patch", call{method: "PATCH", path: cm, body: `{"data":{"b":"2"}}`, headers: []string{mergePatch}}, want{code: 200}, "data.b", "2", ""},
		{"JSON patch", call{method: "PATCH", path: cm, body: `[{"op":"add","path":"/data/c","value":"3"}]`, headers: []string{jsonPatch}}, want{code: 200}, "data.c", "3", ""},
		{"JSON patch with a failing test", call{method: "PATCH", path: cm, body: `[{"op":"test","path":"/data/a","value":"wrong"},{"op":"add","path":"/data/z","value":"z"}]`, headers: []string{jsonPatch}},
			// kube-apiserver: NewGenericServerResponse(422, ...) around the jsonpatch error.
			want{code: 422, reason: metav1.StatusReasonInvalid, message: "the server rejected our request due to an error in our request"}, "", "", ""},
		{"JSON patch that is not a list", call{method: "PATCH", path: cm, body: `{"op":"add"}`, headers: []string{jsonPatch}},
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "cannot unmarshal"}, "", "", ""},
		{"strategic merge patch of a ConfigMap", call{method: "PATCH", path: cm, body: `{"data":{"d":"4"}}`, headers: []string{strategicPatch}}, want{code: 200}, "data.d", "4", ""},
		{"strategic merge patch of a Secret", call{method: "PATCH", path: secret, body: `{"data":{"b":"Yg=="}}`, headers: []string{strategicPatch}}, want{code: 200}, "data.a", "YQ==", ""},
		{"strategic merge patch of a custom resource", call{method: "PATCH", path: widget, body: `{"spec":{"y":2}}`, headers: []string{strategicPatch}},
			want{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: crPatchTypes}, "", "", ""},
		{"merge patch of a custom resource", call{method: "PATCH", path: widget, body: `{"spec":{"y":"2"}}`, headers: []string{mergePatch}}, want{code: 200}, "spec.y", "2", ""},
		{"text/plain patch of a custom resource", call{method: "PATCH", path: widget, body: `{}`, headers: []string{"Content-Type: text/plain"}},
			want{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: crPatchTypes}, "", "", ""},
		// kube's go-restful route answers this one itself ("415: Unsupported Media Type").
		{"text/plain patch of a ConfigMap", call{method: "PATCH", path: cm, body: `{}`, headers: []string{"Content-Type: text/plain"}},
			want{code: 415, reason: metav1.StatusReasonUnsupportedMediaType}, "", "", ""},
		{"merge patch with a stale resourceVersion", call{method: "PATCH", path: cm, body: `{"metadata":{"resourceVersion":"1"},"data":{"e":"5"}}`, headers: []string{mergePatch}},
			want{code: 409, reason: metav1.StatusReasonConflict, message: conflict}, "", "", ""},
		{"JSON patch with a stale resourceVersion", call{method: "PATCH", path: cm, body: `[{"op":"replace","path":"/metadata/resourceVersion","value":"1"}]`, headers: []string{jsonPatch}},
			want{code: 409, reason: metav1.StatusReasonConflict, message: conflict}, "", "", ""},
		{"merge patch of a missing object", call{method: "PATCH", path: configMaps + "/missing", body: `{"data":{"a":"1"}}`, headers: []string{mergePatch}},
			want{code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "missing" not found`}, "", "", ""},
		{"strategic merge patch of a missing object", call{method: "PATCH", path: configMaps + "/missing", body: `{}`, headers: []string{strategicPatch}},
			want{code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "missing" not found`}, "", "", ""},
		{"unknown field warns by default", call{method: "PATCH", path: cm, body: `{"x":1,"data":{"f":"6"}}`, headers: []string{mergePatch}},
			want{code: 200}, "data.f", "6", `299 - "unknown field \"x\""`},
		// kube decodes the patched object strictly and answers 422 with a "patch" field error.
		{"Strict unknown field", call{method: "PATCH", path: cm + "?fieldValidation=Strict", body: `{"x":1}`, headers: []string{mergePatch}},
			want{code: 422, reason: metav1.StatusReasonInvalid, contains: `strict decoding error: unknown field "x"`}, "", "", ""},
		{"Strict duplicate field", call{method: "PATCH", path: cm + "?fieldValidation=Strict", body: `{"data":{"a":"1"},"data":{"a":"1"}}`, headers: []string{mergePatch}},
			want{code: 422, reason: metav1.StatusReasonInvalid, contains: `strict decoding error: duplicate field "data"`}, "", "", ""},
		{"invalid fieldValidation", call{method: "PATCH", path: cm + "?fieldValidation=Bogus", body: `{}`, headers: []string{mergePatch}},
			want{code: 422, reason: metav1.StatusReasonInvalid, message: `PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			tt.want.check(t, r)
			if tt.field != "" {
				if got := nested(r.object(t), tt.field); got != tt.value {
					t.Errorf("%s = %q, want %q: %s", tt.field, got, tt.value, r.body)
				}
			}
			checkWarnings(t, r, tt.warning)
		})
	}

	// Every applied patch landed and nothing else did.
	got := f.must(200, call{method: "GET", path: cm})["data"]
	if want := map[string]any{"a": "1", "b": "2", "c": "3", "d": "4", "f": "6"}; !deepEqualJSON(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
	if got := f.must(200, call{method: "GET", path: secret})["data"]; !deepEqualJSON(got, map[string]any{"a": "YQ==", "b": "Yg=="}) {
		t.Errorf("secret data = %v", got)
	}
}

// A patch naming the current resourceVersion applies, and moves the resourceVersion on.
func TestPatchWithCurrentResourceVersion(t *testing.T) {
	f := newFixture(t)
	created := f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("p", nil)})
	rv := nested(created, "metadata.resourceVersion")
	patched := f.must(200, call{method: "PATCH", path: configMaps + "/p", body: `{"metadata":{"resourceVersion":"` + rv + `"},"data":{"a":"1"}}`, headers: []string{mergePatch}})
	if nested(patched, "data.a") != "1" || nested(patched, "metadata.resourceVersion") == rv {
		t.Fatalf("patch with the current resourceVersion: %v", patched)
	}
}

// Patches that would cost unbounded memory, or that crash the patch libraries, are refused with
// a 4xx and leave the object as it was; the limits let through what kube-apiserver lets through.
func TestPatchLimitsAndMalformedPatches(t *testing.T) {
	f := newFixture(t)
	const serviceAccounts = "/api/v1/namespaces/default/serviceaccounts"
	data := map[string]string{}
	for i := range 16 {
		data[fmt.Sprintf("key%02d", i)] = strings.Repeat("v", 60)
	}
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("p", data)}) // ~1 KB
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("big", map[string]string{"a": strings.Repeat("x", 100<<10)})})
	f.must(http.StatusCreated, call{method: "POST", path: serviceAccounts,
		body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","finalizers":["x.example.com/f"]},"secrets":[{"name":"s1"},{"name":"s2"}],"imagePullSecrets":[{"name":"r1"},{"name":"r2"}]}`})
	const (
		cm  = configMaps + "/p"
		big = configMaps + "/big"
		sa  = serviceAccounts + "/sa"
		// kube-apiserver: NewGenericServerResponse(422, ...) around json-patch's error, also for
		// incomplete operations (asked of kube 1.37).
		notApplied = "the server rejected our request due to an error in our request"
		mergeKey   = "the merge key must be a string, number, boolean or null"
	)
	// The copy bomb: each copy doubles the document (2^17 KB = 128 MB on a 1 KB
	// ConfigMap); kube stops it at 3 MB copied.
	copies := func(n int, from string) string {
		var ops []string
		for i := range n {
			ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"%s","path":"/data/c%d"}`, from, i))
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	tests := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/data/key00","value":"`+data["key00"]+`"},`, n), ",") + "]"
	}
	rows := []struct {
		name, path, contentType, body string
		want                          want
	}{
		{"copy bomb", cm, jsonPatch, copies(17, "/data"), want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		// Nine copies of 100 KB (a ConfigMap holds at most 1 MB).
		{"copies within the limit", big, jsonPatch, copies(9, "/data/a"), want{code: 200}},
		{"more than 10000 operations", cm, jsonPatch, tests(10001),
			want{code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, message: "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"}},
		{"10000 operations", cm, jsonPatch, tests(10000), want{code: 200}},
		{"test of the root without a value", cm, jsonPatch, `[{"op":"test","path":""}]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"replace of the root without a value", cm, jsonPatch, `[{"op":"replace","path":""}]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"add without a value", cm, jsonPatch, `[{"op":"test","path":"/data/key00","value":"` + data["key00"] + `"},{"op":"add","path":"/data/x"}]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"copy without from", cm, jsonPatch, `[{"op":"copy","path":"/data/x"}]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"remove without a path", cm, jsonPatch, `[{"op":"remove"}]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"unknown operation", cm, jsonPatch, `[{"op":"frobnicate","path":"/data"}]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"operation that is not an object", cm, jsonPatch, `[null]`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: notApplied}},
		{"object as a merge key", sa, strategicPatch, `{"secrets":[{"name":{}}]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid strategic merge patch: secrets[0].name: ` + mergeKey + `, got an object`}},
		{"array as a merge key", sa, strategicPatch, `{"secrets":[{"name":[]}]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: `invalid strategic merge patch: secrets[0].name: ` + mergeKey + `, got an array`}},
		// kube converts the patched object into its Go type: a value of the wrong type is a 422 on the patch.
		{"number as a merge key of strings", sa, strategicPatch, `{"secrets":[{"name":1}]}`,
			want{code: 422, reason: metav1.StatusReasonInvalid, message: ` "" is invalid: patch: Invalid value: "map[secrets:[map[name:1]]]": cannot convert int64 to string`}},
		{"object as a merge key to delete", sa, strategicPatch, `{"secrets":[{"$patch":"delete","name":{}}]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `secrets[0].name: ` + mergeKey}},
		{"object as a merge key in $setElementOrder", sa, strategicPatch, `{"$setElementOrder/secrets":[{"name":{}}],"secrets":[{"name":{}}]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `$setElementOrder/secrets[0].name: ` + mergeKey}},
		{"$setElementOrder of a list that is not merged", sa, strategicPatch, `{"$setElementOrder/imagePullSecrets":[{"name":"a"}],"imagePullSecrets":[{"name":"a"}]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `$setElementOrder/imagePullSecrets: imagePullSecrets is a list of objects without a merge key`}},
		// Found by FuzzRequest: strategicpatch orders the live objects by value (a panic).
		{"empty $setElementOrder of live objects without a merge key", sa, strategicPatch, `{"$setElementOrder/imagePullSecrets":[]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `imagePullSecrets is a list of objects without a merge key`}},
		{"$deleteFromPrimitiveList of live objects", sa, strategicPatch, `{"$deleteFromPrimitiveList/imagePullSecrets":["r1"]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `imagePullSecrets is not a list of scalars`}},
		{"object in $setElementOrder of a list of scalars", sa, strategicPatch, `{"metadata":{"$setElementOrder/finalizers":[{},{}],"finalizers":["a/b"]}}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `metadata.$setElementOrder/finalizers[0]: want a string, number or boolean, got an object`}},
		{"objects in a merged list of scalars", sa, strategicPatch, `{"metadata":{"finalizers":[{},{}]}}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `metadata.finalizers[0]: want a string, number or boolean, got an object`}},
		{"object in $retainKeys", sa, strategicPatch, `{"$retainKeys":[{},{}]}`,
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `$retainKeys[0]: $retainKeys lists field names: want a string, got an object`}},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			before := f.must(200, call{method: "GET", path: tt.path})
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			start := time.Now()
			r := f.do(call{method: "PATCH", path: tt.path, body: tt.body, headers: []string{tt.contentType}})
			elapsed := time.Since(start)
			runtime.ReadMemStats(&m1)
			tt.want.check(t, r)
			// The copy bomb is stopped after about 3 MB copied; the others cost next to nothing.
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 256<<20 || elapsed > 5*time.Second {
				t.Errorf("the patch cost %d MB allocated and %v", alloc>>20, elapsed)
			}
			if tt.want.code >= 300 {
				if got := f.must(200, call{method: "GET", path: tt.path}); !deepEqualJSON(got, before) {
					t.Errorf("the object changed:\n got: %v\nwant: %v", got, before)
				}
			}
		})
	}
}

// A patch whose result is not an object of its kind (a value of the wrong type, an unknown field
// under Strict) is kube-apiserver's 422 on "patch", whatever the fieldValidation. kube quotes the
// patched object as it patched it, its own encoding of the object (fields in their Go order,
// not sorted), or, for a strategic merge patch, the patch as a Go map.
func TestPatchResultThatDoesNotFit(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("p", map[string]string{"a": "1"})})
	const (
		cm = configMaps + "/p"
		// kube's encoding of the ConfigMap begins so: metadata's name, namespace and uid first.
		kubeOrder   = `{"apiVersion":"v1","data":%s,"kind":"ConfigMap","metadata":{"name":"p","namespace":"default","uid":"`
		wrongType   = "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
		unknownX    = `strict decoding error: unknown field "x"`
		strictQuery = "?fieldValidation=Strict"
	)
	tests := []struct {
		name        string
		call        call
		valuePrefix string
		detail      string
	}{
		{"merge patch, wrong type", call{method: "PATCH", path: cm, body: `{"data":{"a":5}}`, headers: []string{mergePatch}},
			fmt.Sprintf(kubeOrder, `{"a":5}`), wrongType},
		{"merge patch, wrong type, fieldValidation=Ignore", call{method: "PATCH", path: cm + "?fieldValidation=Ignore", body: `{"data":{"a":5}}`, headers: []string{mergePatch}},
			fmt.Sprintf(kubeOrder, `{"a":5}`), wrongType},
		{"JSON patch, wrong type", call{method: "PATCH", path: cm, body: `[{"op":"replace","path":"/data/a","value":5}]`, headers: []string{jsonPatch}},
			fmt.Sprintf(kubeOrder, `{"a":5}`), wrongType},
		{"merge patch, unknown field, Strict", call{method: "PATCH", path: cm + strictQuery, body: `{"x":1}`, headers: []string{mergePatch}},
			fmt.Sprintf(kubeOrder, `{"a":"1"}`), unknownX},
		{"JSON patch, unknown field, Strict", call{method: "PATCH", path: cm + strictQuery, body: `[{"op":"add","path":"/x","value":1}]`, headers: []string{jsonPatch}},
			fmt.Sprintf(kubeOrder, `{"a":"1"}`), unknownX},
		{"strategic merge patch, unknown field, Strict", call{method: "PATCH", path: cm + strictQuery, body: `{"x":1}`, headers: []string{strategicPatch}},
			"map[x:1]", unknownX},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			want{code: 422, reason: metav1.StatusReasonInvalid, contains: `"" is invalid: patch: Invalid value: `}.check(t, r)
			s := r.status(t)
			if s.Details == nil || len(s.Details.Causes) != 1 {
				t.Fatalf("causes: %s", r.body)
			}
			c := s.Details.Causes[0]
			value, detail, ok := strings.Cut(strings.TrimPrefix(c.Message, "Invalid value: "), `": `)
			if c.Field != "patch" || !ok || !strings.HasPrefix(value, strings.TrimSuffix(strconv.Quote(tt.valuePrefix), `"`)) || detail != tt.detail {
				t.Errorf("cause %s %q\nwant the value to begin %s and the detail %q", c.Field, c.Message, tt.valuePrefix, tt.detail)
			}
		})
	}
	if got := f.must(200, call{method: "GET", path: cm})["data"]; !deepEqualJSON(got, map[string]any{"a": "1"}) {
		t.Errorf("data = %v after refused patches", got)
	}
}

// An applied configuration is read as kube-apiserver reads it: YAML leniently (a repeated key's
// last value kept), then strictly unless fieldValidation is Ignore, its problems warnings or,
// under Strict, a 400; bodies that are not a configuration get kube's words; and a configuration
// without a name applies to an existing object but cannot create one, as no patch can leave an
// object without its name.
func TestApplyDecoding(t *testing.T) {
	f := newFixture(t)
	const (
		apply    = "Content-Type: application/apply-patch+yaml"
		cm       = configMaps + "/applied"
		repeated = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n  a: \"2\"\n"
		dupLine  = `line 7: key "a" already set in map`
	)
	applied := func(query, body string) call {
		return call{method: "PATCH", path: cm + "?fieldManager=t" + query, body: body, headers: []string{apply}}
	}
	tests := []struct {
		name    string
		call    call
		want    want
		a       string // data.a after an apply that succeeds
		warning string
	}{
		{"repeated key, Strict", applied("&fieldValidation=Strict", repeated),
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  " + dupLine}, "", ""},
		{"repeated key warns by default, the last value kept", applied("", repeated), want{code: 201}, "2", `299 - "` + strings.ReplaceAll(dupLine, `"`, `\"`) + `"`},
		{"repeated key, Ignore", applied("&fieldValidation=Ignore", repeated), want{code: 200}, "2", ""},
		{"repeated key in JSON, Strict", applied("&fieldValidation=Strict", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"a":"3","a":"4"}}`),
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"a\" already set in map"}, "", ""},
		{"YAML that does not parse", applied("", "kind: [ConfigMap\n"),
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "error encoding patch: yaml: line 1: did not find expected ',' or ']'"}, "", ""},
		{"JSON that does not parse", applied("", `{"kind":`),
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding patch: error converting YAML to JSON: yaml: line 1: did not find expected node content"}, "", ""},
		{"a list", applied("", "- a\n"),
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding patch: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"}, "", ""},
		{"nothing", applied("", ""), want{code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid object type: /, Kind="}, "", ""},
		{"no apiVersion", applied("", `{"kind":"ConfigMap"}`), want{code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid object type: /, Kind=ConfigMap"}, "", ""},
		{"no name, existing object", applied("", "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"5\"\n"), want{code: 200}, "5", ""},
		{"no name, new object", call{method: "PATCH", path: configMaps + "/new?fieldManager=t", body: "apiVersion: v1\nkind: ConfigMap\n", headers: []string{apply}},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "the name of the object (new based on URL) was undeterminable: name must be provided"}, "", ""},
		{"merge patch removing the name", call{method: "PATCH", path: cm, body: `{"metadata":{"name":null}}`, headers: []string{mergePatch}},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "the name of the object (applied based on URL) was undeterminable: name must be provided"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			tt.want.check(t, r)
			if tt.a != "" {
				if got := nested(r.object(t), "data.a"); got != tt.a {
					t.Errorf("data.a = %q, want %q", got, tt.a)
				}
			}
			checkWarnings(t, r, tt.warning)
		})
	}
	f.must(404, call{method: "GET", path: configMaps + "/new"})
}
