package handlers_test

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDelete(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		// create is POSTed to the collection of path before the delete.
		create, path, body string
		want               want
		check              func(t *testing.T, created, answer map[string]any)
	}{
		{name: "a ConfigMap answers a success Status", create: configMapJSON("plain", nil), path: configMaps + "/plain", want: want{code: 200},
			check: func(t *testing.T, created, answer map[string]any) {
				wantStatus := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
					"details": map[string]any{"name": "plain", "kind": "configmaps", "uid": nested(created, "metadata.uid")}}
				if !deepEqualJSON(answer, wantStatus) {
					t.Errorf("got %v\nwant %v", answer, wantStatus)
				}
				want{code: 404, reason: metav1.StatusReasonNotFound}.check(t, f.do(call{method: "GET", path: configMaps + "/plain"}))
			}},
		{name: "a custom resource answers the object", create: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`, path: widgetsURL + "/w", want: want{code: 200},
			check: func(t *testing.T, created, answer map[string]any) {
				if answer["kind"] != "Widget" || nested(answer, "metadata.uid") != nested(created, "metadata.uid") {
					t.Errorf("got %v", answer)
				}
			}},
		// kube-apiserver answers 200 when finalizers hold the object (202 only when the client set
		// orphanDependents=false), with the object as it now is.
		{name: "a namespace answers the object", create: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"doomed"}}`, path: "/api/v1/namespaces/doomed", want: want{code: 200},
			check: func(t *testing.T, _, answer map[string]any) {
				if answer["kind"] != "Namespace" || nested(answer, "status.phase") != "Terminating" || nested(answer, "metadata.deletionTimestamp") == "" {
					t.Errorf("got %v", answer)
				}
			}},
		{name: "finalizers hold the object", create: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}`, path: configMaps + "/held", want: want{code: 200},
			check: func(t *testing.T, _, answer map[string]any) {
				if answer["kind"] != "ConfigMap" || nested(answer, "metadata.deletionTimestamp") == "" {
					t.Errorf("got %v", answer)
				}
				still := f.must(200, call{method: "GET", path: configMaps + "/held"})
				if nested(still, "metadata.deletionTimestamp") == "" {
					t.Errorf("stored object not marked: %v", still)
				}
			}},
		{name: "a UID precondition that fails", create: configMapJSON("guarded", nil), path: configMaps + "/guarded",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"bogus"}}`,
			want: want{code: 409, reason: metav1.StatusReasonConflict, contains: `Operation cannot be fulfilled on ConfigMap "guarded": the UID in the precondition (bogus) does not match the UID in record (`}},
		{name: "a resourceVersion precondition that fails", path: configMaps + "/guarded",
			body: `{"preconditions":{"resourceVersion":"1"}}`,
			want: want{code: 409, reason: metav1.StatusReasonConflict, contains: `Operation cannot be fulfilled on ConfigMap "guarded": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (`}},
		{name: "malformed DeleteOptions", path: configMaps + "/guarded", body: `{"preconditions":`,
			want: want{code: 400, reason: metav1.StatusReasonBadRequest}},
		{name: "a missing object", path: configMaps + "/missing",
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "missing" not found`}},
		{name: "the default namespace", path: "/api/v1/namespaces/default",
			want: want{code: 403, reason: metav1.StatusReasonForbidden, message: `namespaces "default" is forbidden: this namespace may not be deleted`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var created map[string]any
			if tt.create != "" {
				collection := tt.path[:len(tt.path)-len(lastSegment(tt.path))-1]
				created = f.must(http.StatusCreated, call{method: "POST", path: collection, body: tt.create})
			}
			r := f.do(call{method: "DELETE", path: tt.path, body: tt.body})
			tt.want.check(t, r)
			if tt.check != nil {
				tt.check(t, created, r.object(t))
			}
		})
	}

	// The preconditions that hold let the delete through.
	uid := nested(f.must(200, call{method: "GET", path: configMaps + "/guarded"}), "metadata.uid")
	f.must(200, call{method: "DELETE", path: configMaps + "/guarded", body: `{"preconditions":{"uid":"` + uid + `"}}`})
}

func TestDeleteCollection(t *testing.T) {
	f := newFixture(t)
	for name, app := range map[string]string{"x1": "x", "x2": "x", "y": "y"} {
		f.must(http.StatusCreated, call{method: "POST", path: configMaps,
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"app":"` + app + `"}}}`})
	}
	tests := []struct {
		name    string
		query   string
		want    want
		deleted []string // names in the answer
		left    []string // names still listed afterwards
	}{
		{"bad label selector", "labelSelector=" + url.QueryEscape("app in ("), want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "unable to parse requirement"}, nil, []string{"x1", "x2", "y"}},
		{"label selector", "labelSelector=app%3Dx", want{code: 200}, []string{"x1", "x2"}, []string{"y"}},
		{"nothing matches", "labelSelector=app%3Dz", want{code: 200}, []string{}, []string{"y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(call{method: "DELETE", path: configMaps + "?" + tt.query})
			tt.want.check(t, r)
			if tt.deleted != nil {
				list := r.object(t)
				if list["kind"] != "ConfigMapList" || list["apiVersion"] != "v1" {
					t.Errorf("answer is not a ConfigMapList: %s", r.body)
				}
				if got := itemNames(list); !slices.Equal(got, tt.deleted) {
					t.Errorf("deleted %v, want %v", got, tt.deleted)
				}
			}
			if got := itemNames(f.must(200, call{method: "GET", path: configMaps})); !slices.Equal(got, tt.left) {
				t.Errorf("left %v, want %v", got, tt.left)
			}
		})
	}
}

func lastSegment(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// itemNames returns the sorted names of a list's items.
func itemNames(list map[string]any) []string {
	items, _ := list["items"].([]any)
	names := []string{}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			names = append(names, nested(m, "metadata.name"))
		}
	}
	sort.Strings(names)
	return names
}
