package openapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"

	"github.com/lapis-dev/lapis/internal/catalog"
)

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	widgetGVK    = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

func builtins() []*catalog.Resource {
	core := schema.GroupVersion{Version: "v1"}
	return []*catalog.Resource{
		{GroupVersion: core, Name: "configmaps", Kind: "ConfigMap", ListKind: "ConfigMapList", Namespaced: true,
			Behavior: catalog.Strategy(catalog.Typed[corev1.ConfigMap, *corev1.ConfigMap]{}, configMapGVK.GroupKind(), true, nil)},
		{GroupVersion: core, Name: "namespaces", Kind: "Namespace", ListKind: "NamespaceList", HasStatus: true},
	}
}

// widgets returns the resource of a Widget CRD (example.com/v1) with the given schema.
func widgets(s *apiextensionsv1.JSONSchemaProps) []*catalog.Resource {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com",
		Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
	}}
	v := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}}
	if s != nil {
		v.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: s}
	}
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v}
	return []*catalog.Resource{{GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Name: "widgets",
		Kind: "Widget", ListKind: "WidgetList", Singular: "widget", Namespaced: true, HasStatus: true,
		Scale:        &catalog.ScaleSubresource{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
		Unstructured: true, ServedByAPIExtensions: true, CRD: crd, CRDVersion: &crd.Spec.Versions[0]}}
}

func widgetSchema(sizeType string) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Description: "What the widget should be.", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size":     {Type: sizeType, Description: "How big the widget is."},
			"replicas": {Type: "integer"},
			"template": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr(true)},
		}},
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
	}}
}

func ptr[T any](v T) *T { return &v }

func newServer(t *testing.T) (*catalog.Catalog, *Service, *httptest.Server) {
	t.Helper()
	cat := catalog.New()
	cat.AddBuiltin(builtins()...)
	cat.SetCustom("widgets.example.com", widgets(widgetSchema("integer")))
	svc := NewService(cat)
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return cat, svc, srv
}

func get(t *testing.T, u, accept string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gvkExt(s spec.Extensions) []schema.GroupVersionKind {
	var l []map[string]string
	if err := s.GetObject(gvkExtension, &l); err != nil {
		return nil
	}
	var out []schema.GroupVersionKind
	for _, m := range l {
		out = append(out, schema.GroupVersionKind{Group: m["group"], Version: m["version"], Kind: m["kind"]})
	}
	return out
}

func TestV2Document(t *testing.T) {
	_, _, srv := newServer(t)
	resp := get(t, srv.URL+"/openapi/v2", "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v2: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc spec.Swagger
	if err := json.Unmarshal(readAll(t, resp), &doc); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		model string
		gvk   schema.GroupVersionKind
		props []string
	}{
		{"io.k8s.api.core.v1.ConfigMap", configMapGVK, []string{"apiVersion", "kind", "metadata", "data", "binaryData"}},
		{"io.k8s.api.core.v1.ConfigMapList", configMapGVK.GroupVersion().WithKind("ConfigMapList"), []string{"items", "metadata"}},
		{"io.k8s.api.core.v1.Namespace", namespaceGVK, []string{"spec", "status"}},
		{"com.example.v1.Widget", widgetGVK, []string{"apiVersion", "kind", "metadata", "spec", "status"}},
		{"com.example.v1.WidgetList", widgetGVK.GroupVersion().WithKind("WidgetList"), []string{"items", "metadata"}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			def, ok := doc.Definitions[tc.model]
			if !ok {
				t.Fatalf("no definition %s", tc.model)
			}
			if got := gvkExt(def.Extensions); !slices.Contains(got, tc.gvk) {
				t.Errorf("x-kubernetes-group-version-kind = %v, want %v", got, tc.gvk)
			}
			for _, p := range tc.props {
				if _, ok := def.Properties[p]; !ok {
					t.Errorf("no property %q", p)
				}
			}
		})
	}
	if md := doc.Definitions["io.k8s.api.core.v1.ConfigMap"].Properties["metadata"]; md.Ref.String() != v2.prefix+objectMetaModel {
		t.Errorf("ConfigMap metadata = %+v, want a reference to ObjectMeta", md)
	}
	// Every reference resolves within the document.
	raw, _ := json.Marshal(doc)
	for _, ref := range refs(raw, "#/definitions/") {
		if _, ok := doc.Definitions[ref]; !ok {
			t.Errorf("dangling reference to %s", ref)
		}
	}

	writeParams := []string{"dryRun", "fieldManager", "fieldValidation"}
	for _, tc := range []struct {
		path, method string
		params       []string
	}{
		{"/api/v1/namespaces/{namespace}/configmaps", "post", writeParams},
		{"/api/v1/namespaces/{namespace}/configmaps/{name}", "put", writeParams},
		{"/api/v1/namespaces/{namespace}/configmaps/{name}", "patch", append(writeParams, "force")},
		{"/api/v1/namespaces/{name}/status", "patch", writeParams},
		{"/api/v1/namespaces", "post", writeParams},
		{"/api/v1/configmaps", "get", []string{"labelSelector", "watch"}},
		{"/apis/example.com/v1/namespaces/{namespace}/widgets", "post", writeParams},
		{"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}", "patch", writeParams},
		{"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale", "patch", writeParams},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			item, ok := doc.Paths.Paths[tc.path]
			if !ok {
				t.Fatalf("no path %s", tc.path)
			}
			op := map[string]*spec.Operation{"get": item.Get, "post": item.Post, "put": item.Put, "patch": item.Patch}[tc.method]
			if op == nil {
				t.Fatalf("no %s operation", tc.method)
			}
			var names []string
			for _, p := range op.Parameters {
				if p.In == "query" {
					names = append(names, p.Name)
				}
			}
			for _, want := range tc.params {
				if !slices.Contains(names, want) {
					t.Errorf("query parameters %v lack %s", names, want)
				}
			}
			if _, ok := op.Extensions[gvkExtension]; !ok {
				t.Errorf("operation has no %s", gvkExtension)
			}
		})
	}
}

// refs returns the model names a JSON document refers to under prefix.
func refs(doc []byte, prefix string) []string {
	var out []string
	for _, part := range strings.Split(string(doc), `"$ref":"`)[1:] {
		ref := part[:strings.IndexByte(part, '"')]
		out = append(out, strings.TrimPrefix(ref, prefix))
	}
	return out
}

// TestKubectlV2 reads /openapi/v2 as kubectl does: as protobuf, through client-go's discovery
// client, into kubectl's resource models and its field-validation query parameter verifier.
func TestKubectlV2(t *testing.T) {
	_, _, srv := newServer(t)
	cfg := &rest.Config{Host: srv.URL}
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	verifier := resource.NewQueryParamVerifier(dyn, dc, resource.QueryParamFieldValidation)
	for _, gvk := range []schema.GroupVersionKind{configMapGVK, namespaceGVK, widgetGVK} {
		if resources.LookupResource(gvk) == nil {
			t.Errorf("kubectl finds no model for %v", gvk)
		}
		if err := verifier.HasSupport(gvk); err != nil {
			t.Errorf("fieldValidation for %v: %v", gvk, err)
		}
	}

	// The protobuf form is the JSON form, converted.
	pb := readAll(t, get(t, srv.URL+"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"))
	var fromProto openapi_v2.Document
	if err := proto.Unmarshal(pb, &fromProto); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&fromProto, doc) {
		t.Error("protobuf documents differ between requests")
	}
}

func discoveryPaths(t *testing.T, srvURL string) map[string]string {
	t.Helper()
	resp := get(t, srvURL+"/openapi/v3", "")
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(readAll(t, resp), &root); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range root.Paths {
		out[k] = v.ServerRelativeURL
	}
	return out
}

func TestV3Discovery(t *testing.T) {
	_, _, srv := newServer(t)
	paths := discoveryPaths(t, srv.URL)
	want := []string{"api/v1", "apis/example.com/v1"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range paths {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("v3 discovery lists %v, want %v", got, want)
	}

	u, err := url.Parse(paths["api/v1"])
	if err != nil {
		t.Fatal(err)
	}
	hash := u.Query().Get("hash")
	for _, tc := range []struct {
		name, url, accept string
		header            []string
		status            int
		check             func(*http.Response)
	}{
		{name: "current hash", url: paths["api/v1"], status: http.StatusOK, check: func(r *http.Response) {
			if cc := r.Header.Get("Cache-Control"); cc != "public, immutable" {
				t.Errorf("Cache-Control = %q", cc)
			}
			if etag := r.Header.Get("Etag"); etag != `"`+hash+`"` {
				t.Errorf("Etag = %s, want the hash %s", etag, hash)
			}
		}},
		{name: "no hash", url: "/openapi/v3/api/v1", status: http.StatusOK, check: func(r *http.Response) {
			if cc := r.Header.Get("Cache-Control"); cc != "" {
				t.Errorf("Cache-Control = %q without a hash", cc)
			}
		}},
		{name: "old hash", url: "/openapi/v3/api/v1?hash=0123", status: http.StatusMovedPermanently, check: func(r *http.Response) {
			if loc := r.Header.Get("Location"); loc != paths["api/v1"] {
				t.Errorf("Location = %s, want %s", loc, paths["api/v1"])
			}
		}},
		{name: "not modified", url: "/openapi/v3/api/v1", header: []string{"If-None-Match", `"` + hash + `"`}, status: http.StatusNotModified},
		{name: "protobuf", url: paths["api/v1"], accept: "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", status: http.StatusOK,
			check: func(r *http.Response) {
				if ct := r.Header.Get("Content-Type"); ct != "application/com.github.proto-openapi.spec.v3.v1.0+protobuf" {
					t.Errorf("Content-Type = %s", ct)
				}
			}},
		{name: "unacceptable", url: paths["api/v1"], accept: "application/xml", status: http.StatusNotAcceptable},
		{name: "unknown group-version", url: "/openapi/v3/apis/nope/v1", status: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, srv.URL+tc.url, tc.accept, tc.header...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.check != nil {
				tc.check(resp)
			}
		})
	}
}

func gvSpec(t *testing.T, srvURL string, gv schema.GroupVersion) *spec3.OpenAPI {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srvURL})
	doc, err := openapi3.NewRoot(dc.OpenAPIV3()).GVSpec(gv)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestV3GroupVersionDocuments(t *testing.T) {
	_, _, srv := newServer(t)
	core := gvSpec(t, srv.URL, configMapGVK.GroupVersion())
	custom := gvSpec(t, srv.URL, widgetGVK.GroupVersion())

	if _, ok := core.Components.Schemas["com.example.v1.Widget"]; ok {
		t.Error("api/v1 holds the example.com definitions")
	}
	if _, ok := custom.Components.Schemas["io.k8s.api.core.v1.ConfigMap"]; ok {
		t.Error("apis/example.com/v1 holds core definitions")
	}
	widget := custom.Components.Schemas["com.example.v1.Widget"]
	if widget == nil {
		t.Fatal("no com.example.v1.Widget in apis/example.com/v1")
	}
	if got := gvkExt(widget.Extensions); !slices.Equal(got, []schema.GroupVersionKind{widgetGVK}) {
		t.Errorf("Widget x-kubernetes-group-version-kind = %v", got)
	}
	if size := widget.Properties["spec"].Properties["size"]; !slices.Equal(size.Type, []string{"integer"}) || size.Description != "How big the widget is." {
		t.Errorf("spec.size = %+v", size)
	}
	if md := widget.Properties["metadata"]; len(md.AllOf) != 1 || md.AllOf[0].Ref.String() != v3.prefix+objectMetaModel {
		t.Errorf("metadata = %+v, want allOf a reference to ObjectMeta", md)
	}
	// An embedded resource gets apiVersion, kind and metadata.
	if tmpl := widget.Properties["spec"].Properties["template"]; tmpl.Properties["metadata"].AllOf == nil || !slices.Contains(tmpl.Required, "kind") {
		t.Errorf("embedded template = %+v", tmpl)
	}

	for _, tc := range []struct {
		doc  *spec3.OpenAPI
		path string
	}{
		{core, "/api/v1/namespaces/{namespace}/configmaps/{name}"},
		{core, "/api/v1/namespaces/{name}"},
		{custom, "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"},
		{custom, "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := tc.doc.Paths.Paths[tc.path]
			if p == nil || p.Patch == nil {
				t.Fatalf("no patch operation at %s", tc.path)
			}
			var names []string
			for _, prm := range p.Patch.Parameters {
				names = append(names, prm.Name)
			}
			for _, want := range []string{"dryRun", "fieldManager", "fieldValidation", "force"} {
				if !slices.Contains(names, want) {
					t.Errorf("patch parameters %v lack %s", names, want)
				}
			}
			_, smp := p.Patch.RequestBody.Content["application/strategic-merge-patch+json"]
			if builtin := strings.HasPrefix(tc.path, "/api/"); smp != builtin {
				t.Errorf("strategic merge patch offered: %v", smp)
			}
		})
	}

	for _, doc := range []*spec3.OpenAPI{core, custom} {
		raw, _ := json.Marshal(doc)
		for _, ref := range refs(raw, v3.prefix) {
			if _, ok := doc.Components.Schemas[ref]; !ok {
				t.Errorf("dangling reference to %s", ref)
			}
		}
	}
}

// TestKubectlV3 checks the v3 documents with kubectl's own machinery: the field-validation
// verifier kubectl create/apply use, and kubectl explain.
func TestKubectlV3(t *testing.T) {
	_, _, srv := newServer(t)
	cfg := &rest.Config{Host: srv.URL}
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	verifier := resource.NewQueryParamVerifierV3(dynamic.NewForConfigOrDie(cfg), dc.OpenAPIV3(), resource.QueryParamFieldValidation)
	for _, gvk := range []schema.GroupVersionKind{configMapGVK, namespaceGVK, widgetGVK} {
		if err := verifier.HasSupport(gvk); err != nil {
			t.Errorf("fieldValidation for %v: %v", gvk, err)
		}
	}

	for _, tc := range []struct {
		gvr    schema.GroupVersionResource
		fields []string
		want   []string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, nil, []string{"KIND:       ConfigMap", "binaryData\t<map[string]string>"}},
		{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, []string{"spec"},
			[]string{"GROUP:      example.com", "KIND:       Widget", "What the widget should be.", "size\t<integer>", "How big the widget is."}},
	} {
		t.Run(tc.gvr.String(), func(t *testing.T) {
			var out bytes.Buffer
			if err := explainv2.PrintModelDescription(tc.fields, &out, dc.OpenAPIV3(), tc.gvr, false, 0, "plaintext"); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("kubectl explain output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestCRDChangeChangesHash(t *testing.T) {
	cat, svc, srv := newServer(t)
	before := discoveryPaths(t, srv.URL)
	snap := svc.current()

	cat.SetCustom("widgets.example.com", widgets(widgetSchema("string")))
	after := discoveryPaths(t, srv.URL)
	if before["apis/example.com/v1"] == after["apis/example.com/v1"] {
		t.Error("changing the CRD's schema left its hash as it was")
	}
	if before["api/v1"] != after["api/v1"] {
		t.Error("changing a CRD changed the hash of api/v1")
	}
	if next := svc.current(); next.v3["api/v1"] != snap.v3["api/v1"] {
		t.Error("api/v1 was rebuilt though its resources did not change")
	}
	doc := gvSpec(t, srv.URL, widgetGVK.GroupVersion())
	if size := doc.Components.Schemas["com.example.v1.Widget"].Properties["spec"].Properties["size"]; !slices.Equal(size.Type, []string{"string"}) {
		t.Errorf("spec.size after the change = %v", size.Type)
	}

	cat.SetCustom("widgets.example.com", nil)
	if _, ok := discoveryPaths(t, srv.URL)["apis/example.com/v1"]; ok {
		t.Error("removed CRD still listed")
	}
}

func TestDocumentsBuiltOncePerRevision(t *testing.T) {
	cat, svc, srv := newServer(t)
	discoveryPaths(t, srv.URL)
	first := svc.current()
	discoveryPaths(t, srv.URL)
	if svc.current() != first {
		t.Fatal("snapshot rebuilt without a catalogue change")
	}
	cat.AddBuiltin() // a change of revision with the same resources
	if next := svc.current(); next == first || next.v2 != first.v2 || next.v3["api/v1"] != first.v3["api/v1"] {
		t.Error("documents of unchanged resources were not carried over")
	}
}

// TestCustomSchemas covers CRD versions whose schema cannot be published as it is.
func TestCustomSchemas(t *testing.T) {
	preserve := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}}}}
	nonStructural := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}}}} // spec has no type
	for _, tc := range []struct {
		name         string
		schema       *apiextensionsv1.JSONSchemaProps
		v2Properties bool // whether v2 keeps the schema's properties
		v3Properties bool
	}{
		{"no schema", nil, false, false},
		{"preserve unknown fields at the root", preserve, false, true},
		{"not structural", nonStructural, false, false},
		{"structural", widgetSchema("integer"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := catalog.New()
			cat.AddBuiltin(builtins()...)
			cat.SetCustom("widgets.example.com", widgets(tc.schema))
			srv := httptest.NewServer(NewService(cat))
			defer srv.Close()

			var doc spec.Swagger
			if err := json.Unmarshal(readAll(t, get(t, srv.URL+"/openapi/v2", "")), &doc); err != nil {
				t.Fatal(err)
			}
			w2 := doc.Definitions["com.example.v1.Widget"]
			w3 := gvSpec(t, srv.URL, widgetGVK.GroupVersion()).Components.Schemas["com.example.v1.Widget"]
			for _, c := range []struct {
				version string
				s       spec.Schema
				want    bool
			}{{"v2", w2, tc.v2Properties}, {"v3", *w3, tc.v3Properties}} {
				if !slices.Equal(c.s.Type, []string{"object"}) || !slices.Equal(gvkExt(c.s.Extensions), []schema.GroupVersionKind{widgetGVK}) {
					t.Errorf("%s: Widget = %+v", c.version, c.s)
				}
				if _, has := c.s.Properties["spec"]; has != c.want {
					t.Errorf("%s: spec property present: %v, want %v", c.version, has, c.want)
				}
			}
		})
	}
}

// TestDeterministic guards the hashes: the same resources must always encode the same way.
func TestDeterministic(t *testing.T) {
	rs := append(builtins(), widgets(widgetSchema("integer"))...)
	for _, build := range []func() any{func() any { return buildV2(rs) }, func() any { return buildV3(rs) }} {
		a, _ := json.Marshal(build())
		b, _ := json.Marshal(build())
		if !bytes.Equal(a, b) {
			t.Error("the same resources gave different documents")
		}
	}
}

// TestBuiltinWithoutDefinition: a built-in type without a generated definition is still
// published, as any object, so that paths and kubectl's verifiers work for it.
func TestBuiltinWithoutDefinition(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequestX"}
	cat := catalog.New()
	cat.AddBuiltin(&catalog.Resource{GroupVersion: gvk.GroupVersion(), Name: "certificatesigningrequests", Kind: gvk.Kind})
	srv := httptest.NewServer(NewService(cat))
	defer srv.Close()
	doc := gvSpec(t, srv.URL, gvk.GroupVersion())
	for _, model := range []string{"io.k8s.certificates.v1.CertificateSigningRequestX", "io.k8s.certificates.v1.CertificateSigningRequestXList"} {
		if s := doc.Components.Schemas[model]; s == nil || !slices.Equal(s.Type, []string{"object"}) {
			t.Errorf("%s = %+v", model, s)
		}
	}
	if p := doc.Paths.Paths["/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}"]; p == nil || p.Patch == nil {
		t.Error("no patch operation")
	}
}

// TestConcurrentUse reads documents while the catalogue changes (run with -race).
func TestConcurrentUse(t *testing.T) {
	cat, _, srv := newServer(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				for _, p := range []string{"/openapi/v3", "/openapi/v3/apis/example.com/v1", "/openapi/v2"} {
					resp, err := http.Get(srv.URL + p)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	for i := range 5 {
		cat.SetCustom("widgets.example.com", widgets(widgetSchema([]string{"integer", "string"}[i%2])))
	}
	wg.Wait()
}

// TestGeneratedDefinitionsComplete: every definition an API type's definition depends on is
// there too (kube's generated set also has component configurations, which are not served).
func TestGeneratedDefinitionsComplete(t *testing.T) {
	for _, f := range []flavour{v2, v3} {
		defs := builtin(f)
		for name, d := range defs {
			if !strings.HasPrefix(name, "io.k8s.api.") && !strings.HasPrefix(name, "io.k8s.apimachinery.") &&
				!strings.HasPrefix(name, "io.k8s.apiextensions-apiserver.") && !strings.HasPrefix(name, "io.k8s.kube-aggregator.") {
				continue
			}
			for _, dep := range d.deps {
				if _, ok := defs[dep]; !ok {
					t.Errorf("%s depends on %s, which was not generated", name, dep)
				}
			}
		}
	}
}
