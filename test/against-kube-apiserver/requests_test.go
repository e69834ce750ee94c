package againstkube

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// object creates (or replaces) an object on both servers, failing t if either refuses.
func object(t *testing.T, collection, name, manifest string) {
	t.Helper()
	lapis, kube := servers(t)
	for _, s := range []*target{lapis, kube} {
		s.must(t, request{method: "DELETE", path: collection + "/" + name}, http.StatusOK, http.StatusNotFound)
		s.must(t, request{method: "POST", path: collection, contentType: jsonType, body: manifest}, http.StatusCreated)
	}
}

// TestWatches compares watches with odd timeouts: a negative timeoutSeconds ends the watch at
// once (code and body compared), watch=true on a named GET, and a named watch.
func TestWatches(t *testing.T) {
	servers(t)
	object(t, configmaps, "kd-watch", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-watch"}}`)
	object(t, widgets, "kd-watch", `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-watch"}}`)
	const racy = "a watch whose deadline has passed races with its own start in kube"
	tests := []struct {
		name  string
		r     request
		allow allowance
	}{
		{"negative timeout, configmaps", request{method: "GET", path: configmaps + "?watch=true&timeoutSeconds=-5"}, allowance{kubeRacyWatch: racy}},
		{"negative timeout, custom resources", request{method: "GET", path: widgets + "?watch=true&timeoutSeconds=-5"}, allowance{kubeRacyWatch: racy}},
		{"negative timeout, /watch/ path", request{method: "GET", path: "/api/v1/watch/namespaces/" + ns + "/configmaps?timeoutSeconds=-5"}, allowance{kubeRacyWatch: racy}},
		{"named GET with watch=true, configmap", request{method: "GET", path: configmaps + "/kd-watch?watch=true"}, allowance{}},
		{"named GET with watch=true, custom resource", request{method: "GET", path: widgets + "/kd-watch?watch=true"}, allowance{}},
		{"named watch, /watch/ path", request{method: "GET", path: "/api/v1/watch/namespaces/" + ns + "/configmaps/kd-watch?timeoutSeconds=1"}, allowance{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.timeout = 5 * time.Second // a watch that is not ended in time is a difference
			compare(t, tt.r, send(tt.r, tt.r), tt.allow)
		})
	}
}

// TestListsAtAFutureResourceVersion compares lists at a resourceVersion neither server has
// reached: kube waits about 3 s for it, then answers 504.
func TestListsAtAFutureResourceVersion(t *testing.T) {
	servers(t)
	const future = "?resourceVersion=999999999"
	for _, query := range []string{
		"&limit=5",
		"&resourceVersionMatch=Exact",
		"&resourceVersionMatch=Exact&limit=5",
		"&resourceVersionMatch=NotOlderThan",
		"&resourceVersionMatch=NotOlderThan&limit=5",
	} {
		t.Run(query[1:], func(t *testing.T) {
			t.Parallel() // each waits about 3 s on both servers
			r := request{method: "GET", path: configmaps + future + query}
			x := send(r, r)
			compare(t, r, x, allowance{})
			// kube waits for the cache only where the cache serves the list; etcd answers at once.
			if fastL, fastK := x.lapis.elapsed < time.Second, x.kube.elapsed < time.Second; fastL != fastK {
				t.Errorf("%s: kube answered in %v, lapis in %v", r, x.kube.elapsed.Round(time.Millisecond), x.lapis.elapsed.Round(time.Millisecond))
			}
		})
	}
}

// TestJSONPatchEdgeCases compares JSON patches that kube refuses, or that would cost unbounded
// time or memory, on a small ConfigMap; afterwards its data must be the same on both servers.
func TestJSONPatchEdgeCases(t *testing.T) {
	lapis, kube := servers(t)
	object(t, configmaps, "kd-patch", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-patch"},"data":{"a":"`+strings.Repeat("x", 1024)+`"}}`)
	ops := func(n int, op func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = op(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	test := func(int) string { return `{"op":"test","path":"/metadata/name","value":"kd-patch"}` }
	copyData := func(i int) string { return fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/c%d"}`, i) }
	tests := []struct {
		name  string
		patch string
		allow allowance
	}{
		{"test of the root without value", `[{"op":"test","path":""}]`, allowance{kubeFails: "json-patch dereferences the missing value: nil pointer panic"}},
		{"replace of the root without value", `[{"op":"replace","path":""}]`, allowance{kubeFails: "json-patch dereferences the missing value: nil pointer panic"}},
		{"copy to the root", `[{"op":"copy","from":"/data","path":""}]`, allowance{}},
		{"unknown op", `[{"op":"bogus","path":"/data/a","value":"b"}]`, allowance{}},
		{"10 000 operations", ops(10000, test), allowance{}},
		{"10 001 operations", ops(10001, test), allowance{}},
		{"chained copy bomb, 25 operations", ops(25, copyData), allowance{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request{method: "PATCH", path: configmaps + "/kd-patch", contentType: jsonPatch, body: tt.patch}
			start := time.Now()
			x := send(r, r)
			t.Logf("answered in %v: kube %d, lapis %d", time.Since(start).Round(time.Millisecond), x.kube.code, x.lapis.code)
			compare(t, r, x, tt.allow)
			if dl, dk := data(t, lapis, "kd-patch"), data(t, kube, "kd-patch"); !reflect.DeepEqual(dl, dk) {
				t.Errorf("after %s the data differ:\n  kube:  %.200v\n  lapis: %.200v", r, dk, dl)
			}
		})
	}
}

func data(t *testing.T, s *target, name string) any {
	t.Helper()
	resp := s.must(t, request{method: "GET", path: configmaps + "/" + name}, http.StatusOK)
	var cm struct {
		Data any `json:"data"`
	}
	if err := json.Unmarshal(resp.body, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// TestStrategicMergeKeys compares strategic merge patches whose merge key (a ServiceAccount's
// secrets are merged by name) is not a scalar.
func TestStrategicMergeKeys(t *testing.T) {
	servers(t)
	const sas = "/api/v1/namespaces/" + ns + "/serviceaccounts"
	object(t, sas, "kd-sa", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"kd-sa"},"secrets":[{"name":"s1"}]}`)
	tests := []struct {
		name  string
		patch string
		allow allowance
	}{
		{"object as merge key", `{"secrets":[{"name":{}}]}`, allowance{kubeFails: "strategic merge compares merge keys with ==: panic on an uncomparable type"}},
		{"list as merge key", `{"secrets":[{"name":[]}]}`, allowance{kubeFails: "strategic merge compares merge keys with ==: panic on an uncomparable type"}},
		{"number as merge key", `{"secrets":[{"name":1}]}`, allowance{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request{method: "PATCH", path: sas + "/kd-sa", contentType: strategic, body: tt.patch}
			compare(t, r, send(r, r), tt.allow)
		})
	}
}

// TestPatchesWhoseResultDoesNotFit compares patches whose result is not an object of its kind
// (a value of the wrong type, an unknown field under Strict): kube answers 422 on "patch",
// quoting the patched object as it patched it, its own encoding of the object (or, for a
// strategic merge patch, the patch).
func TestPatchesWhoseResultDoesNotFit(t *testing.T) {
	servers(t)
	deployments := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	object(t, deployments, "kd-unfit", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"kd-unfit"},
 "spec":{"selector":{"matchLabels":{"app":"kd"}},"template":`+toJSON(t, podTemplate)+`}}`)
	object(t, configmaps, "kd-unfit", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-unfit"},"data":{"a":"b"}}`)
	object(t, widgets, "kd-unfit", `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-unfit"},"spec":{"size":1}}`)
	d, cm, w := deployments+"/kd-unfit", configmaps+"/kd-unfit", widgets+"/kd-unfit"
	const strict = "?fieldValidation=Strict"
	for _, r := range []request{
		{path: d, contentType: mergeType, body: `{"spec":{"replicas":"x"}}`},
		{path: d + "?fieldValidation=Ignore", contentType: mergeType, body: `{"spec":{"replicas":"x"}}`},
		{path: d, contentType: jsonPatch, body: `[{"op":"replace","path":"/spec/replicas","value":"x"}]`},
		{path: d, contentType: mergeType, body: `{"metadata":{"labels":"x"}}`},
		{path: d, contentType: strategic, body: `{"metadata":{"labels":"x"}}`},
		{path: d + strict, contentType: mergeType, body: `{"spec":{"bogus":1}}`},
		{path: d + strict, contentType: jsonPatch, body: `[{"op":"add","path":"/spec/bogus","value":1}]`},
		{path: d + strict, contentType: strategic, body: `{"spec":{"bogus":1}}`},
		{path: d + "/status", contentType: mergeType, body: `{"status":{"replicas":"x"}}`},
		{path: d + "/scale", contentType: mergeType, body: `{"spec":{"replicas":"x"}}`},
		{path: cm, contentType: mergeType, body: `{"data":{"a":5}}`},
		{path: cm + strict, contentType: mergeType, body: `{"extra":1}`},
		{path: w, contentType: mergeType, body: `{"metadata":{"labels":"x"}}`},
	} {
		r.method = "PATCH"
		compare(t, r, send(r, r), allowance{})
	}
}

// TestBodiesThatNameSomethingElse compares bodies that do not name what the URL names (a PUT
// without a name, or with another name or namespace, on objects and their scale; an apiVersion
// and kind kube's schemes do not know; a known kind that is not the URL's), and deletes whose
// UID precondition fails, and PUTs of an object with another uid (kube's storage precondition),
// on built-in and custom resources.
func TestBodiesThatNameSomethingElse(t *testing.T) {
	servers(t)
	deployments := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	object(t, deployments, "kd-named", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"kd-named"},
 "spec":{"selector":{"matchLabels":{"app":"kd"}},"template":`+toJSON(t, podTemplate)+`}}`)
	object(t, configmaps, "kd-named", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-named"}}`)
	object(t, widgets, "kd-named", `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-named"}}`)
	d, cm, w := deployments+"/kd-named", configmaps+"/kd-named", widgets+"/kd-named"
	scale := func(meta string) string {
		return `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":` + meta + `,"spec":{"replicas":1}}`
	}
	for _, r := range []request{
		{method: "PUT", path: cm, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
		{method: "PUT", path: configmaps + "/kd-missing", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
		{method: "PUT", path: cm, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-named","namespace":"other"}}`},
		{method: "PUT", path: w, body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{}}`},
		{method: "PUT", path: d + "/scale", body: scale(`{}`)},
		{method: "PUT", path: d + "/scale", body: scale(`{"name":"other"}`)},
		{method: "PUT", path: d + "/scale", body: scale(`{"name":"kd-named","namespace":"other"}`)},
		{method: "PUT", path: d + "/status", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other"}}`},
		{method: "POST", path: configmaps + "?dryRun=All", body: `{"apiVersion":"v9","kind":"ConfigMap","metadata":{"name":"x"}}`},
		{method: "POST", path: configmaps + "?dryRun=All", body: `{"apiVersion":"v1","kind":"Gadget","metadata":{"name":"x"}}`},
		{method: "POST", path: configmaps + "?dryRun=All", body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`},
		{method: "POST", path: configmaps + "?dryRun=All", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"x"}}`},
		{method: "POST", path: deployments + "?dryRun=All", body: `{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"x"}}`},
		{method: "POST", path: "/apis/autoscaling/v2/namespaces/" + ns + "/horizontalpodautoscalers?dryRun=All",
			body: `{"apiVersion":"autoscaling/v2beta2","kind":"HorizontalPodAutoscaler","metadata":{"name":"x"}}`},
		{method: "POST", path: crds + "?dryRun=All", body: `{"apiVersion":"apiextensions.k8s.io/v9","kind":"CustomResourceDefinition","metadata":{"name":"x"}}`},
		{method: "POST", path: widgets + "?dryRun=All", body: `{"apiVersion":"kubediff.example.com/v9","kind":"Widget","metadata":{"name":"x"}}`},
		{method: "PUT", path: d + "/scale", body: `{"apiVersion":"apps/v1","kind":"Scale","metadata":{"name":"kd-named"}}`},
		{method: "PUT", path: cm, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-named","uid":"x"}}`},
		{method: "PUT", path: d, body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"kd-named","uid":"x"}}`},
		{method: "PUT", path: w, body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-named","uid":"x"}}`},
		{method: "DELETE", path: cm, body: `{"preconditions":{"uid":"x"}}`},
		{method: "DELETE", path: d, body: `{"preconditions":{"uid":"x"}}`},
		{method: "DELETE", path: w, body: `{"preconditions":{"uid":"x"}}`},
	} {
		r.contentType = jsonType
		compare(t, r, send(r, r), allowance{})
	}
}

// TestPathsServedByNothing compares paths no API serves: kube-apiserver answers a group it does
// not serve, and any other unknown path, with Go's plain-text 404, an unknown version of a
// served group with a Status, and an unknown OpenAPI v3 group-version with an empty 404.
func TestPathsServedByNothing(t *testing.T) {
	servers(t)
	for _, r := range []request{
		{method: "GET", path: "/nope"},
		{method: "DELETE", path: "/nope/deeper"},
		{method: "GET", path: "/apis/unknown.example.com"},
		{method: "GET", path: "/apis/unknown.example.com/v1"},
		{method: "GET", path: "/apis/unknown.example.com/v1/namespaces/" + ns + "/things/x"},
		{method: "POST", path: "/apis/unknown.example.com/v1/namespaces/" + ns + "/things", contentType: jsonType, body: `{}`},
		{method: "GET", path: "/apis/v1"},
		{method: "GET", path: "/apis/apps/v9"},
		{method: "GET", path: "/apis/apps/v9/deployments"},
		{method: "GET", path: "/api/v9/pods"},
		{method: "GET", path: "/version/x"},
		{method: "GET", path: "/healthz/bogus"},
		{method: "GET", path: "/openapi/v9"},
		{method: "GET", path: "/openapi/v3/apis/unknown.example.com/v1"},
	} {
		compare(t, r, send(r, r), allowance{})
	}
}

// TestAppliedConfigurationsAsRead compares applied configurations kube reads in its own way:
// repeated keys (lenient read, then strict under Warn and Strict), YAML and JSON that do not
// parse, bodies that are not a configuration, and configurations or patches that leave an
// object without a name.
func TestAppliedConfigurationsAsRead(t *testing.T) {
	servers(t)
	object(t, configmaps, "kd-read", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-read"},"data":{"a":"1"}}`)
	cm := configmaps + "/kd-read"
	repeated := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kd-read\ndata:\n  a: \"1\"\n  a: \"2\"\n"
	for _, r := range []request{
		{path: cm + "?fieldManager=kd&fieldValidation=Strict", body: repeated},
		{path: cm + "?fieldManager=kd", body: repeated},
		{path: cm + "?fieldManager=kd&fieldValidation=Ignore", body: repeated},
		{path: cm + "?fieldManager=kd&fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-read"},"data":{"a":"3","a":"4"}}`},
		{path: cm + "?fieldManager=kd", body: "kind: [ConfigMap\n"},
		{path: cm + "?fieldManager=kd", body: `{"kind":`},
		{path: cm + "?fieldManager=kd", body: "- a\n"},
		{path: cm + "?fieldManager=kd", body: ""},
		{path: cm + "?fieldManager=kd", body: `{"kind":"ConfigMap"}`},
		{path: cm + "?fieldManager=kd", body: "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"5\"\n"},
		{path: configmaps + "/kd-unnamed?fieldManager=kd", body: "apiVersion: v1\nkind: ConfigMap\n"},
		{path: cm, contentType: mergeType, body: `{"metadata":{"name":null}}`},
	} {
		r.method = "PATCH"
		if r.contentType == "" {
			r.contentType = applyType
		}
		compare(t, r, send(r, r), allowance{})
	}
}

// TestProtectedGroupCRDs compares CRDs of the groups kube protects (*.k8s.io, *.kubernetes.io),
// which need its approval annotation, dry run.
func TestProtectedGroupCRDs(t *testing.T) {
	servers(t)
	crd := func(group, annotations string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"foos.` + group + `"` + annotations + `},
 "spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"foos","kind":"Foo"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`
	}
	approval := func(v string) string { return `,"annotations":{"api-approved.kubernetes.io":"` + v + `"}` }
	for _, body := range []string{
		crd("k8s.io", ""),
		crd("x.kubernetes.io", ""),
		crd("x.k8s.io", approval("yes")),
		crd("x.k8s.io", approval("unapproved, testing")),
		crd("x.k8s.io", approval("https://github.com/kubernetes/kubernetes/pull/1")),
		crd("example.com", approval("https://github.com/kubernetes/kubernetes/pull/1")),
	} {
		r := request{method: "POST", path: crds + "?dryRun=All", contentType: jsonType, body: body}
		compare(t, r, send(r, r), allowance{})
	}
}

// TestScaleValuesOfCustomResources compares writes of the values a custom resource's scale
// subresource reads (replicas out of range or of the wrong type), through the object and its
// status.
func TestScaleValuesOfCustomResources(t *testing.T) {
	servers(t)
	object(t, widgets, "kd-scaled", `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-scaled"},"spec":{"replicas":1}}`)
	w := widgets + "/kd-scaled"
	for _, r := range []request{
		{method: "POST", path: widgets + "?dryRun=All", contentType: jsonType, body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"replicas":-1}}`},
		{method: "POST", path: widgets + "?dryRun=All", contentType: jsonType, body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"replicas":3000000000}}`},
		{method: "POST", path: widgets + "?dryRun=All", contentType: jsonType, body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"replicas":"two"}}`},
		{method: "PATCH", path: w, contentType: mergeType, body: `{"spec":{"replicas":-2}}`},
		{method: "PATCH", path: w + "/status", contentType: mergeType, body: `{"status":{"replicas":-1}}`},
		{method: "PATCH", path: w + "/status", contentType: mergeType, body: `{"status":{"replicas":"x"}}`},
	} {
		compare(t, r, send(r, r), allowance{})
	}
}
