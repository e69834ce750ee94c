package handlers

// Go native fuzz tests of the decode → patch → apply pipeline. Each target asserts that nothing
// panics, that every refusal is an API status with a 4xx code, and that what comes out is
// bounded by what went in. Seeds are realistic requests and the inputs that once crashed
// lapis; crashers found by fuzzing live in testdata/fuzz/<Target>, which plain `go test`
// replays. Run one for longer with
//
//	go test ./internal/handlers/ -run '^$' -fuzz '^FuzzJSONPatch$' -fuzztime 3m

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/crd"
	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
	"github.com/lapis-dev/lapis/internal/patch"
	"github.com/lapis-dev/lapis/internal/routing"
)

// fuzzDoc is an object as stored, and the Go type strategic merge patch reads its patch
// metadata from (none for a custom resource).
type fuzzDoc struct {
	gvk  schema.GroupVersionKind
	json string
}

var fuzzDocs = []fuzzDoc{
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default","uid":"0b1c7c36-4e44-4f4c-9f0a-2f1d1c3c0a11","resourceVersion":"12","creationTimestamp":"2025-01-01T00:00:00Z","labels":{"app":"web","tier":"front"},"annotations":{"note":"x"},"finalizers":["example.com/keep"],"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"3e0c5a57-1f44-4e4c-8b1c-6b1f0e2d7a22"}],"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{},"f:b":{}}}}]},"data":{"a":"1","b":"two","c.json":"{\"k\":[1,2]}"},"binaryData":{"bin":"AAEC"}}`},
	{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","namespace":"default","uid":"5d3f1b2a-6c7d-4e8f-9a0b-1c2d3e4f5a6b","resourceVersion":"7","finalizers":["example.com/a","example.com/b"]},"secrets":[{"name":"s1"},{"name":"s2","namespace":"default"}],"imagePullSecrets":[{"name":"registry"}],"automountServiceAccountToken":false}`},
	{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default","labels":{"a":"b"}},"type":"Opaque","data":{"user":"YWRtaW4=","pass":"c2VjcmV0"},"immutable":false}`},
	{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team","labels":{"kubernetes.io/metadata.name":"team"}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active","conditions":[{"type":"NamespaceDeletionDiscoveryFailure","status":"False","reason":"ResourcesDiscovered"}]}}`},
	// Not served by lapis, but its Go type has every strategic merge marker: merge keys of
	// strings and of integers, retainKeys, lists of scalars merged.
	{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","finalizers":["a/b"]},"spec":{"containers":[{"name":"app","image":"nginx","args":["-v"],"ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}],"env":[{"name":"A","value":"1"},{"name":"B","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],"volumeMounts":[{"name":"data","mountPath":"/data"}]}],"volumes":[{"name":"data","emptyDir":{}},{"name":"cfg","configMap":{"name":"cm","items":[{"key":"a","path":"a"}]}}],"tolerations":[{"key":"k","operator":"Exists"}],"imagePullSecrets":[{"name":"r"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`},
	{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets","singular":"widget","shortNames":["wd"]},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}},"additionalPrinterColumns":[{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}]}]},"status":{"acceptedNames":{"kind":"Widget","plural":"widgets"},"storedVersions":["v1"],"conditions":[{"type":"Established","status":"True"}]}}`},
	{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default","labels":{"a":"b"}},"spec":{"replicas":3,"ports":[{"name":"http","port":80},{"name":"https","port":443}],"tags":["a","b"],"nested":{"deep":{"list":[1,[2,3],{"x":null}],"s":"~/x"}}},"status":{"ready":true}}`},
}

// fuzzTyped knows the Go types of built-in kinds, as the handlers' does.
var fuzzTyped = New(nil).typed

// requireClientError fails unless err is an API status with a 4xx code.
func requireClientError(t *testing.T, what string, err error) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%s: error is not an API status (it would be a 500): %T: %v", what, err, err)
	}
	if code := status.Status().Code; code < 400 || code > 499 {
		t.Fatalf("%s: code %d: %v", what, code, err)
	}
}

// maxGrowth bounds what a patch may make of a document: its bytes and the patch's (each may
// be re-encoded up to six times longer: "<" becomes "\u003c"), plus what copies may add.
func maxGrowth(doc, body []byte, copies int) int {
	return 6*(len(doc)+len(body)) + 6*copies + 4096
}

// fuzzPatch applies a patch as the handlers do (applyPatchAs, then decodeObject) and checks
// the outcome.
func fuzzPatch(t *testing.T, pt types.PatchType, which uint8, body []byte) {
	d := fuzzDocs[int(which)%len(fuzzDocs)]
	if pt == types.StrategicMergePatchType && !fuzzTyped.Recognizes(d.gvk) {
		d = fuzzDocs[0]
	}
	doc := []byte(d.json)
	var ops []jsonPatchOp
	if pt == types.JSONPatchType && json.Unmarshal(body, &ops) != nil {
		return // the handler answers 400 before patching
	}
	var out []byte
	var err error
	switch pt {
	case types.JSONPatchType:
		out, err = patch.JSON(doc, body)
	case types.MergePatchType:
		out, err = patch.Merge(doc, body)
	case types.StrategicMergePatchType:
		typed, terr := fuzzTyped.New(d.gvk)
		if terr != nil {
			t.Fatal(terr)
		}
		out, err = patch.Strategic(doc, body, typed)
	}
	if err != nil {
		if _, ok := patch.AsError(err); !ok {
			t.Fatalf("%s: unclassified error %T: %v", pt, err, err)
		}
		requireClientError(t, string(pt), patchError(pt, d.gvk, "x", body, err))
		return
	}
	copies := 0
	if pt == types.JSONPatchType {
		copies = patch.MaxCopyBytes
	}
	if limit := maxGrowth(doc, body, copies); len(out) > limit {
		t.Fatalf("%s: %d bytes of document and %d of patch made %d bytes (limit %d)", pt, len(doc), len(body), len(out), limit)
	}
	if _, _, err := decodeObject(out, d.gvk.Kind); err != nil {
		requireClientError(t, "decoding the patched object", err)
	}
}

// The cases of issue 7 and realistic patches of each type.
var (
	jsonPatchSeeds = []string{
		`[{"op":"test","path":""}]`,
		`[{"op":"replace","path":""}]`,
		`[{"op":"add","path":""}]`,
		`[{"op":"test","path":"","value":null}]`,
		`[{"op":"replace","path":"","value":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}}]`,
		`[{"op":"add","path":"/data/x","value":"1"},{"op":"remove","path":"/data/a"},{"op":"replace","path":"/metadata/labels/app","value":"api"}]`,
		`[{"op":"move","from":"/data/a","path":"/data/z"},{"op":"copy","from":"/metadata/labels","path":"/metadata/annotations"}]`,
		`[{"op":"test","path":"/metadata/resourceVersion","value":"12"},{"op":"add","path":"/metadata/finalizers/-","value":"x/y"}]`,
		`[{"op":"remove","path":"/metadata/finalizers/-1"},{"op":"add","path":"/spec/ports/0","value":{"name":"g","port":1}}]`,
		`[{"op":"add","path":"/metadata/annotations/a~1b~0c","value":"v"}]`,
		`[{"op":"frobnicate","path":"/a"},null,{"op":"copy","path":"/x"}]`,
		`[{"op":"add","path":"/secrets/-","value":{"name":{}}}]`,
		`[{"op":"add","path":"/spec/nested/deep/list/1/0","value":[[[[]]]]}]`,
	}
	mergePatchSeeds = []string{
		`{"data":{"x":"1","a":null}}`,
		`{"metadata":{"labels":{"app":null,"new":"v"},"finalizers":[]}}`,
		`{"spec":{"ports":[{"name":"only"}],"nested":null}}`,
		`{"secrets":[{"name":{}}]}`,
		`null`, `[]`, `1`, `"s"`, `{}`,
		`{"metadata":{"name":{"a":[1,{"b":null}]}}}`,
	}
	strategicPatchSeeds = []string{
		`{"secrets":[{"name":{}}]}`,
		`{"secrets":[{"name":[]}]}`,
		`{"secrets":[{"$patch":"delete","name":{}}]}`,
		`{"$setElementOrder/secrets":[{"name":{}}],"secrets":[{"name":{}}]}`,
		`{"$setElementOrder/imagePullSecrets":[{"name":"a"}],"imagePullSecrets":[{"name":"a"}]}`,
		`{"metadata":{"$setElementOrder/finalizers":[{},{}],"finalizers":["a/b"]}}`,
		`{"metadata":{"$deleteFromPrimitiveList/finalizers":[{},{}]}}`,
		`{"metadata":{"finalizers":[null]}}`,
		`{"$retainKeys":[{},{}]}`,
		`{"data":{"x":"1","a":null},"metadata":{"labels":{"new":"v"}}}`,
		`{"secrets":[{"name":"s3"},{"$patch":"delete","name":"s1"}],"$setElementOrder/secrets":[{"name":"s3"},{"name":"s2"}]}`,
		`{"metadata":{"finalizers":["example.com/c"],"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}`,
		`{"spec":{"containers":[{"name":"app","ports":[{"containerPort":8080}],"env":[{"name":"A","$patch":"delete"}]}],"volumes":[{"name":"data","$retainKeys":["name","hostPath"],"hostPath":{"path":"/x"}}]}}`,
		`{"spec":{"containers":[{"name":"app","ports":[{"containerPort":{}}]}]}}`,
		`{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"name":"app","$setElementOrder/env":[{"name":{}}],"env":[{"name":{}}]}]}}`,
		`{"spec":{"tolerations":[{"$patch":"replace"}],"volumes":[{"name":"cfg","$retainKeys":[[]]}]}}`,
		`{"spec":{"versions":[{"name":"v1","served":false}]}}`,
		`{"$patch":"replace","metadata":{"name":"x"}}`,
		`{"$patch":{}}`,
		`null`,
	}
)

func FuzzJSONPatch(f *testing.F) {
	for i, s := range jsonPatchSeeds {
		f.Add(uint8(i), []byte(s))
	}
	var bomb []string
	for i := range 17 {
		bomb = append(bomb, fmt.Sprintf(`{"op":"copy","from":"/metadata","path":"/metadata/c%d"}`, i))
	}
	f.Add(uint8(0), []byte("["+strings.Join(bomb, ",")+"]"))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		fuzzPatch(t, types.JSONPatchType, which, body)
	})
}

func FuzzMergePatch(f *testing.F) {
	for i, s := range mergePatchSeeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		fuzzPatch(t, types.MergePatchType, which, body)
	})
}

func FuzzStrategicMergePatch(f *testing.F) {
	for i, s := range strategicPatchSeeds {
		for which := range fuzzDocs {
			if strings.Contains(s, "spec") == (which >= 3) || which == i%len(fuzzDocs) {
				f.Add(uint8(which), []byte(s))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		fuzzPatch(t, types.StrategicMergePatchType, which, body)
	})
}

// fuzzMediaTypes are the Content-Types the body decoders see.
var fuzzMediaTypes = []string{"application/json", "application/yaml", protobufMediaType, "", "text/plain", "application/json;charset=utf-8"}

// FuzzDecodeBody decodes request bodies as the create/update handlers (readObject: JSON, YAML,
// Protobuf) and the delete handler (deleteOptions) do.
func FuzzDecodeBody(f *testing.F) {
	h := New(nil)
	for _, d := range fuzzDocs {
		f.Add(uint8(0), []byte(d.json))
		y, err := yaml.JSONToYAML([]byte(d.json))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(1), y)
	}
	for _, s := range []string{
		"a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: 1, a: 2}\n",
		"- 1\n- 2\n", "null", "", "{", "{\"metadata\":[]}", "---\na: 1\n---\nb: 2\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: !!binary aGVsbG8=\n",
		`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan","gracePeriodSeconds":-1,"preconditions":{"uid":"u"}}`,
	} {
		f.Add(uint8(1), []byte(s))
	}
	f.Add(uint8(2), []byte("k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12\x00"))
	f.Fuzz(func(t *testing.T, mt uint8, body []byte) {
		mediaType := fuzzMediaTypes[int(mt)%len(fuzzMediaTypes)]
		for _, gvk := range []schema.GroupVersionKind{fuzzDocs[0].gvk, fuzzDocs[6].gvk} {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			req.Header.Set("Content-Type", mediaType)
			obj, _, err := h.readObject(req, gvk)
			if err != nil {
				requireClientError(t, "readObject "+mediaType, err)
				continue
			}
			out, err := json.Marshal(obj.Object)
			if err != nil {
				t.Fatalf("the decoded object does not encode: %v", err)
			}
			// YAML aliases may repeat what they name; go-yaml bounds the repetition.
			if limit := 400*len(body) + 1<<20; len(out) > limit {
				t.Fatalf("%d bytes of %s decoded to %d bytes of JSON (limit %d)", len(body), mediaType, len(out), limit)
			}
		}
		req := httptest.NewRequest(http.MethodDelete, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", mediaType)
		if _, err := deleteOptions(req); err != nil {
			requireClientError(t, "deleteOptions "+mediaType, err)
		}
	})
}

// applyFuzzKinds are the built-in resources FuzzApply applies to, each with the configuration
// that made its live object.
var applyFuzzKinds = []struct {
	resource schema.GroupVersionResource
	live     string
}{
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default, labels: {a: b}, finalizers: [f/g]}\ndata: {a: '1', b: '2'}\n"},
	{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x, namespace: default}\nsecrets: [{name: s1}, {name: s2}]\nimagePullSecrets: [{name: r}]\n"},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "apiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: default}\ntype: Opaque\ndata: {a: YQ==}\n"},
	{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nspec: {finalizers: [kubernetes]}\n"},
}

// FuzzApply merges server-side apply configurations (YAML, decoded as the apply handler
// decodes them) into live built-in objects through their field managers.
func FuzzApply(f *testing.F) {
	managers := fieldmanager.NewManagers()
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{})...)
	type target struct {
		r    *catalog.Resource
		live *unstructured.Unstructured
	}
	var targets []target
	for i, k := range applyFuzzKinds {
		r, ok := cat.Lookup(k.resource)
		if !ok {
			f.Fatalf("%s is not served", k.resource)
		}
		fm, err := managers.For(r, "")
		if err != nil {
			f.Fatal(err)
		}
		config := decodeYAMLObject(f, []byte(k.live))
		live, err := objects.MergeApplied(fm, managers.Empty(r), config, "seed", false)
		if err != nil {
			f.Fatal(err)
		}
		targets = append(targets, target{r, live})
		f.Add(uint8(i), false, []byte(k.live))
		f.Add(uint8(i), true, []byte(strings.ReplaceAll(k.live, "{name: x", "{name: x, labels: {z: y}")))
	}
	for _, s := range []string{
		"secrets: [{name: {}}]\n", "secrets: [{name: []}, {name: []}]\n", "secrets: [{name: s1}, {name: s1}]\n",
		"metadata: {finalizers: [a/b, a/b]}\n", "metadata: {finalizers: [{}, []]}\n", "data: {a: null}\n",
		"data: [1, 2]\n", "metadata: {labels: {a: {b: c}}}\n", "imagePullSecrets: [{}]\n", "spec: {finalizers: [null]}\n",
		"metadata: {ownerReferences: [{apiVersion: v1, kind: Secret, name: s, uid: u}, {apiVersion: v1, kind: Secret, name: s, uid: u}]}\n",
	} {
		f.Add(uint8(1), false, []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, force bool, body []byte) {
		tg := targets[int(which)%len(targets)]
		data, err := toJSON("application/yaml", body)
		if err != nil {
			requireClientError(t, "YAML", err)
			return
		}
		config, _, err := decodeObject(data, tg.r.Kind)
		if err != nil {
			requireClientError(t, "decodeObject", err)
			return
		}
		// What objects.Service.Apply requires of a configuration before merging it.
		config.SetGroupVersionKind(tg.r.GroupVersionKind())
		config.SetName(tg.live.GetName())
		config.SetNamespace(tg.live.GetNamespace())
		unstructured.RemoveNestedField(config.Object, "metadata", "managedFields")
		fm, err := managers.For(tg.r, "")
		if err != nil {
			t.Fatal(err)
		}
		merged, err := objects.MergeApplied(fm, tg.live.DeepCopy(), config, "fuzz", force)
		if err != nil {
			requireClientError(t, "apply", err)
			return
		}
		out, err := json.Marshal(merged.Object)
		if err != nil {
			t.Fatalf("the merged object does not encode: %v", err)
		}
		// The merge may add managedFields naming each field of the configuration.
		if live, _ := json.Marshal(tg.live.Object); len(out) > 16*(len(live)+len(data))+4096 {
			t.Fatalf("%d bytes of configuration made %d bytes", len(data), len(out))
		}
	})
}

func decodeYAMLObject(t testing.TB, y []byte) *unstructured.Unstructured {
	t.Helper()
	data, err := toJSON("application/yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := decodeObject(data, "")
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// FuzzRequest sends patch, apply and update requests (all dry-run) through Handler.Serve: the
// whole pipeline from body decoding to validation and encoding. No answer may be a 5xx.
func FuzzRequest(f *testing.F) {
	h := newFuzzHandler(f)
	for _, s := range jsonPatchSeeds {
		f.Add(uint8(0), []byte(s))
	}
	for _, s := range mergePatchSeeds {
		f.Add(uint8(1), []byte(s))
	}
	for _, s := range strategicPatchSeeds {
		f.Add(uint8(2), []byte(s))
	}
	for _, k := range applyFuzzKinds[:2] {
		f.Add(uint8(3), []byte(k.live))
	}
	f.Add(uint8(4), []byte(fuzzDocs[0].json))
	f.Add(uint8(3), []byte("apiVersion: diff.example.com/v1\nkind: Marked\nmetadata: {name: m}\nspec: {ports: [{name: a, port: 1}, {name: {}}], tags: [a, a], settings: {a: b}}\n"))
	f.Add(uint8(1), []byte(`{"spec":{"ports":[{"name":"a"},{"name":"a"}],"tags":[{},[]],"endpoint":[]}}`))
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		for _, path := range []string{
			"/api/v1/namespaces/default/configmaps/cm",
			"/api/v1/namespaces/default/serviceaccounts/sa",
			"/apis/diff.example.com/v1/namespaces/default/marked/m",
		} {
			method, contentType := http.MethodPatch, ""
			switch kind % 5 {
			case 0:
				contentType = string(types.JSONPatchType)
			case 1:
				contentType = string(types.MergePatchType)
			case 2:
				contentType = string(types.StrategicMergePatchType)
			case 3:
				contentType = string(types.ApplyYAMLPatchType)
				path += "?fieldManager=fuzz&force=true"
			case 4:
				method, contentType = http.MethodPut, "application/json"
			}
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			req := httptest.NewRequest(method, path+sep+"dryRun=All", bytes.NewReader(body))
			req.Header.Set("Content-Type", contentType)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s (%s): %d: %s", method, path, contentType, rec.Code, rec.Body)
			}
			if limit := maxGrowth(nil, body, patch.MaxCopyBytes) + 1<<20; rec.Body.Len() > limit {
				t.Fatalf("%s %s: %d bytes of body made a %d-byte answer", method, path, len(body), rec.Body.Len())
			}
		}
	})
}

// newFuzzHandler serves the built-in resources and the scenario CRDs over embedded etcd, with
// the objects FuzzRequest patches.
func newFuzzHandler(t testing.TB) http.Handler {
	svc, cat := objectstest.NewService(t, "default")
	for _, doc := range objectstest.ScenarioCRDs {
		def := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(doc), def); err != nil {
			t.Fatal(err)
		}
		cat.SetCustom(def.Name, crd.ResourcesFor(def))
	}
	h := New(svc)
	mux := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.Serve(w, req, routing.Parse(req))
	})
	for _, c := range []struct{ path, body string }{
		{"/api/v1/namespaces/default/configmaps", fuzzDocs[0].json},
		{"/api/v1/namespaces/default/serviceaccounts", fuzzDocs[1].json},
		{"/apis/diff.example.com/v1/namespaces/default/marked", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"m"},"spec":{"replicas":1,"ports":[{"name":"a","port":1}],"tags":["x"],"args":["y"],"settings":{"k":"v"},"endpoint":{"host":"h","port":2}}}`},
	} {
		body := strings.NewReplacer(`"resourceVersion":"12",`, "", `"resourceVersion":"7",`, "", `"uid":"0b1c7c36-4e44-4f4c-9f0a-2f1d1c3c0a11",`, "", `"uid":"5d3f1b2a-6c7d-4e8f-9a0b-1c2d3e4f5a6b",`, "").Replace(c.body)
		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, c.path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("creating %s: %d: %s", c.path, rec.Code, rec.Body)
		}
	}
	return mux
}
