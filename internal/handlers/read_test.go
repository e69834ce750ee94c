package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestGetAndList(t *testing.T) {
	f := newFixture(t)
	for i := range 5 {
		f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON(fmt.Sprintf("cm%d", i), nil)})
	}
	f.must(http.StatusCreated, call{method: "POST", path: secrets, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`})
	// kube-apiserver's answer for paths no route serves (go-restful's 404, as a Status).
	const noRoute = "the server could not find the requested resource"
	tests := []struct {
		name  string
		path  string
		want  want
		check func(t *testing.T, answer map[string]any)
	}{
		{name: "get", path: configMaps + "/cm1", want: want{code: 200}, check: func(t *testing.T, obj map[string]any) {
			if obj["kind"] != "ConfigMap" || obj["apiVersion"] != "v1" || nested(obj, "metadata.name") != "cm1" || nested(obj, "metadata.resourceVersion") == "" {
				t.Errorf("got %v", obj)
			}
		}},
		{name: "get of a missing object", path: configMaps + "/x",
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "x" not found`}},
		{name: "list", path: configMaps, want: want{code: 200}, check: func(t *testing.T, list map[string]any) {
			if list["kind"] != "ConfigMapList" || list["apiVersion"] != "v1" || nested(list, "metadata.resourceVersion") == "" {
				t.Errorf("list header: %v %v %v", list["kind"], list["apiVersion"], list["metadata"])
			}
			if got := itemNames(list); !slices.Equal(got, []string{"cm0", "cm1", "cm2", "cm3", "cm4"}) {
				t.Errorf("items %v", got)
			}
			// kube's typed lists leave out each item's kind and apiVersion.
			item := list["items"].([]any)[0].(map[string]any)
			if _, has := item["kind"]; has {
				t.Errorf("item %v", item)
			}
			if _, has := item["apiVersion"]; has {
				t.Errorf("item %v", item)
			}
		}},
		{name: "list across namespaces", path: "/api/v1/configmaps", want: want{code: 200}, check: func(t *testing.T, list map[string]any) {
			if len(itemNames(list)) != 5 {
				t.Errorf("items %v", itemNames(list))
			}
		}},
		{name: "field selector on metadata.name", path: configMaps + "?fieldSelector=metadata.name%3Dcm3", want: want{code: 200}, check: func(t *testing.T, list map[string]any) {
			if got := itemNames(list); !slices.Equal(got, []string{"cm3"}) {
				t.Errorf("items %v", got)
			}
		}},
		{name: "field selector on a Secret's type", path: secrets + "?fieldSelector=type%3DOpaque", want: want{code: 200}, check: func(t *testing.T, list map[string]any) {
			if got := itemNames(list); !slices.Equal(got, []string{"s"}) {
				t.Errorf("items %v", got)
			}
		}},
		{name: "unknown field selector on Secrets", path: secrets + "?fieldSelector=x%3Dy",
			want: want{code: 400, reason: metav1.StatusReasonBadRequest, message: "field label not supported: x"}},
		// ConfigMaps register no field label conversion in kube, so the scheme's default answers.
		{name: "unknown field selector on ConfigMaps", path: configMaps + "?fieldSelector=x%3Dy",
			want: want{code: 400, reason: metav1.StatusReasonBadRequest, message: `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`}},
		{name: "bad label selector", path: configMaps + "?labelSelector=" + url.QueryEscape("a in ("),
			want: want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "unable to parse requirement"}},
		{name: "bad continue token", path: configMaps + "?continue=garbage",
			want: want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "continue key is not valid"}},
		{name: "unknown resource", path: "/api/v1/namespaces/default/widgets",
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: noRoute}},
		// kube's apiextensions handler delegates this to a plain-text "404 page not found".
		{name: "unknown group", path: "/apis/nope.example.com/v1/namespaces/default/things/x",
			want: want{code: 404, text: "404 page not found\n"}},
		{name: "namespaced resource without a namespace", path: "/api/v1/configmaps/cm1",
			want: want{code: 404, reason: metav1.StatusReasonNotFound}},
		{name: "unknown subresource", path: configMaps + "/cm1/status",
			want: want{code: 404, reason: metav1.StatusReasonNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(call{method: "GET", path: tt.path})
			tt.want.check(t, r)
			if tt.check != nil {
				tt.check(t, r.object(t))
			}
		})
	}
}

func TestListPaging(t *testing.T) {
	f := newFixture(t)
	for i := range 5 {
		f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON(fmt.Sprintf("cm%d", i), nil)})
	}
	type page struct {
		items     []string
		more      bool
		remaining any // float64 from JSON, nil when absent
	}
	want := []page{
		{[]string{"cm0", "cm1"}, true, float64(3)},
		{[]string{"cm2", "cm3"}, true, float64(1)},
		{[]string{"cm4"}, false, nil},
	}
	var firstRV, token string
	for i, w := range want {
		path := configMaps + "?limit=2"
		if token != "" {
			path += "&continue=" + url.QueryEscape(token)
		}
		list := f.must(200, call{method: "GET", path: path})
		meta, _ := list["metadata"].(map[string]any)
		token = nested(list, "metadata.continue")
		got := page{itemNames(list), token != "", meta["remainingItemCount"]}
		if !slices.Equal(got.items, w.items) || got.more != w.more || got.remaining != w.remaining {
			t.Fatalf("page %d: got %+v, want %+v (metadata %v)", i, got, w, meta)
		}
		// Every page is read at the first page's resourceVersion.
		if rv := nested(list, "metadata.resourceVersion"); i == 0 {
			firstRV = rv
			// A write between pages is not seen by the rest of the list.
			f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("cm9", nil)})
		} else if rv != firstRV {
			t.Errorf("page %d at resourceVersion %s, first page at %s", i, rv, firstRV)
		}
	}
}

func TestNegotiation(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("a", map[string]string{"k": "v"})})
	const (
		table         = "application/json;as=Table;g=meta.k8s.io;v=v1"
		notAcceptable = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
		// kube-apiserver's routes answer a media type they never produce before it negotiates.
		noRoute     = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
		noListRoute = noRoute + ", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
	)
	tests := []struct {
		name   string
		call   call
		want   want
		ctype  string // the Content-Type of the answer
		kind   string // the kind of the decoded answer
		isYAML bool
	}{
		{"YAML object", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: application/yaml"}}, want{code: 200}, "application/yaml", "ConfigMap", true},
		{"YAML list", call{method: "GET", path: configMaps, headers: []string{"Accept: application/yaml"}}, want{code: 200}, "application/yaml", "ConfigMapList", true},
		{"YAML error", call{method: "GET", path: configMaps + "/missing", headers: []string{"Accept: application/yaml"}}, want{code: 404, reason: metav1.StatusReasonNotFound}, "application/yaml", "Status", true},
		{"YAML create", call{method: "POST", path: configMaps, body: configMapJSON("b", nil), headers: []string{"Accept: application/yaml"}}, want{code: 201}, "application/yaml", "ConfigMap", true},
		{"no Accept", call{method: "GET", path: configMaps + "/a"}, want{code: 200}, "application/json", "ConfigMap", false},
		{"any type", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: */*"}}, want{code: 200}, "application/json", "ConfigMap", false},
		{"Table, then JSON", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: " + table + ", application/json"}}, want{code: 200}, "application/json", "Table", false},
		{"Table, then JSON, for a list", call{method: "GET", path: configMaps, headers: []string{"Accept: " + table + ", application/json"}}, want{code: 200}, "application/json", "Table", false},
		{"unknown conversion, then JSON", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: application/json;as=Other;g=meta.k8s.io;v=v1, application/json"}}, want{code: 200}, "application/json", "ConfigMap", false},
		{"metadata list", call{method: "GET", path: configMaps, headers: []string{"Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}}, want{code: 200}, "application/json", "PartialObjectMetadataList", false},
		{"HTML only", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: text/html"}},
			want{code: 406, reason: metav1.StatusReasonNotAcceptable, message: noRoute}, "application/json", "Status", false},
		{"HTML only, for a list", call{method: "GET", path: configMaps, headers: []string{"Accept: text/html"}},
			want{code: 406, reason: metav1.StatusReasonNotAcceptable, message: noListRoute}, "application/json", "Status", false},
		{"unknown conversion only", call{method: "GET", path: configMaps, headers: []string{"Accept: application/json;as=Other;g=meta.k8s.io;v=v1"}},
			want{code: 406, reason: metav1.StatusReasonNotAcceptable, message: notAcceptable}, "application/json", "Status", false},
		{"Table only", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: " + table}}, want{code: 200}, "application/json", "Table", false},
		{"Table only, for a list", call{method: "GET", path: configMaps, headers: []string{"Accept: " + table}}, want{code: 200}, "application/json", "Table", false},
		// kube-apiserver answers a write with its object converted, when asked.
		{"Table for a create", call{method: "POST", path: configMaps, body: configMapJSON("t", nil), headers: []string{"Accept: " + table}},
			want{code: 201}, "application/json", "Table", false},
		{"metadata for a create", call{method: "POST", path: configMaps, body: configMapJSON("m", nil), headers: []string{"Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"}},
			want{code: 201}, "application/json", "PartialObjectMetadata", false},
		{"HTML only, for a create", call{method: "POST", path: configMaps, body: configMapJSON("c", nil), headers: []string{"Accept: text/html"}},
			want{code: 406, reason: metav1.StatusReasonNotAcceptable, message: noRoute}, "application/json", "Status", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			if ct := r.header.Get("Content-Type"); ct != tt.ctype {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
			if tt.isYAML {
				if strings.HasPrefix(strings.TrimSpace(string(r.body)), "{") {
					t.Fatalf("answer is JSON, not YAML: %s", r.body)
				}
				j, err := yaml.YAMLToJSON(r.body)
				if err != nil {
					t.Fatalf("answer is not YAML: %v: %s", err, r.body)
				}
				r.body = j
			}
			tt.want.check(t, r)
			if kind := r.object(t)["kind"]; kind != tt.kind {
				t.Errorf("kind %v, want %s: %s", kind, tt.kind, r.body)
			}
		})
	}
	// The refused create stored nothing.
	want{code: 404, reason: metav1.StatusReasonNotFound}.check(t, f.do(call{method: "GET", path: configMaps + "/c"}))
}
