package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/handlers/special"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
	"github.com/lapis-dev/lapis/internal/storage"
)

// fixture serves the resource verbs over embedded etcd, mounted the way server/chain.go mounts
// them (routing.Parse, then Handler.Serve), without authentication.
type fixture struct {
	t       *testing.T
	handler http.Handler
	url     string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	svc := newService(t)
	namespaces, _ := svc.Catalog().Lookup(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default"}}}
	if _, err := svc.Create(context.Background(), namespaces, "", ns, objects.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return serve(t, handlers.New(svc).WithEndpoints(special.New(svc, special.Auth{}, nil)))
}

// newService is the objects pipeline over embedded etcd, with the built-in resources and widgets.
func newService(t *testing.T) *objects.Service {
	t.Helper()
	b, err := storage.OpenEmbedded(context.Background(), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{})...)
	cat.SetCustom("widgets.example.com", []*catalog.Resource{widgets()})
	return objects.NewService(storage.NewStore(b.Client), objects.NewKeys(objects.DefaultPrefix), cat)
}

// serve mounts h as server/chain.go does.
func serve(t *testing.T, h *handlers.Handler) *fixture {
	mux := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info := routing.Parse(req)
		if !info.IsResource {
			http.NotFound(w, req)
			return
		}
		h.Serve(w, req, info)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close) // runs before the backend closes
	return &fixture{t: t, handler: mux, url: srv.URL}
}

// widgets is a custom resource registered by hand, as the CRD controller would register it.
func widgets() *catalog.Resource {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    "example.com",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
		},
	}
	return &catalog.Resource{
		Unstructured:          true,
		ServedByAPIExtensions: true,
		CRD:                   crd,
		CRDVersion:            &crd.Spec.Versions[0],
		GroupVersion:          schema.GroupVersion{Group: "example.com", Version: "v1"},
		Name:                  "widgets",
		Kind:                  "Widget",
		ListKind:              "WidgetList",
		Singular:              "widget",
		Namespaced:            true,
		StorageGroupResource:  schema.GroupResource{Group: "example.com", Resource: "widgets"},
		ReturnDeletedObject:   true,
		Behavior:              catalog.Strategy(passthrough{}, schema.GroupKind{Group: "example.com", Kind: "Widget"}, true, nil),
	}
}

// passthrough is a schemaless custom resource's behaviour: anything goes.
type passthrough struct{}

func (passthrough) Normalize(*unstructured.Unstructured) ([]string, error)   { return nil, nil }
func (passthrough) DropNulls(*unstructured.Unstructured)                     {}
func (passthrough) PrepareForCreate(*unstructured.Unstructured)              {}
func (passthrough) PrepareForUpdate(_, _ *unstructured.Unstructured)         {}
func (passthrough) Default(*unstructured.Unstructured)                       {}
func (passthrough) Validate(_, _ *unstructured.Unstructured) field.ErrorList { return nil }
func (passthrough) SelectableFields(*unstructured.Unstructured) fields.Set   { return nil }

// call is one HTTP request. Headers are "Name: value" strings; a body without a Content-Type
// header is sent as application/json.
type call struct {
	method, path, body string
	headers            []string
}

func (c call) request(t *testing.T, base string) *http.Request {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range c.headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	return req
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends c to the test server.
func (f *fixture) do(c call) response {
	f.t.Helper()
	resp, err := http.DefaultClient.Do(c.request(f.t, f.url))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: body}
}

// serveDirect calls the handler without a network round trip, for requests the client would
// still be writing when the server answers (oversized bodies).
func (f *fixture) serveDirect(req *http.Request) response {
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// must sends c and fails the test unless it answers code.
func (f *fixture) must(code int, c call) map[string]any {
	f.t.Helper()
	r := f.do(c)
	if r.code != code {
		f.t.Fatalf("%s %s: got %d, want %d: %s", c.method, c.path, r.code, code, r.body)
	}
	return r.object(f.t)
}

func (r response) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func (r response) status(t *testing.T) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(r.body, &s); err != nil || s.Kind != "Status" {
		t.Fatalf("response is not a Status (%v): %s", err, r.body)
	}
	return s
}

// want is an expected answer. A failure is checked as a Status: reason always, message exactly
// when message is set, or as a substring when contains is set.
type want struct {
	code     int
	reason   metav1.StatusReason
	message  string
	contains string
	text     string // a plain-text body, where kube answers with no Status
}

func (w want) check(t *testing.T, r response) {
	t.Helper()
	if r.code != w.code {
		t.Fatalf("code %d, want %d: %s", r.code, w.code, r.body)
	}
	if w.code < 300 {
		return
	}
	if w.text != "" {
		if string(r.body) != w.text {
			t.Errorf("body %q, want %q", r.body, w.text)
		}
		return
	}
	s := r.status(t)
	if s.Code != int32(w.code) || s.Status != metav1.StatusFailure || s.Reason != w.reason {
		t.Errorf("status code %d, status %q, reason %q; want %d, Failure, %q", s.Code, s.Status, s.Reason, w.code, w.reason)
	}
	if w.message != "" && s.Message != w.message {
		t.Errorf("message\n got: %s\nwant: %s", s.Message, w.message)
	}
	if w.contains != "" && !strings.Contains(s.Message, w.contains) {
		t.Errorf("message %q does not contain %q", s.Message, w.contains)
	}
}

// checkWarnings fails t unless the answer's Warning headers, one per line, are want ("" for none).
func checkWarnings(t *testing.T, r response, want string) {
	t.Helper()
	if got := strings.Join(r.header.Values("Warning"), "\n"); got != want {
		t.Errorf("Warning header %q, want %q", got, want)
	}
}

// Paths used throughout.
const (
	configMaps = "/api/v1/namespaces/default/configmaps"
	secrets    = "/api/v1/namespaces/default/secrets"
	widgetsURL = "/apis/example.com/v1/namespaces/default/widgets"
)

func configMapJSON(name string, data map[string]string) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": data})
	return string(b)
}

// nested reads a string at a dotted path of a decoded JSON object.
func nested(obj map[string]any, path string) string {
	var cur any = obj
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

// deepEqualJSON compares decoded JSON values.
func deepEqualJSON(a, b any) bool { return reflect.DeepEqual(a, b) }
