package discovery

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
)

const (
	acceptV2      = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	acceptV2Beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
	// What kubectl 1.32 sends.
	acceptKubectl = acceptV2 + "," + acceptV2Beta1 + ",application/json"
	host          = "lapis.test:6443"
)

// testCatalog serves namespaces and configmaps (core), leases and deployments (registered in that
// order, which kube's APIService priorities reverse: apps 17800, coordination.k8s.io 16500), and a custom resource served at v1alpha1
// and v1beta1 (the storage version, with status and scale).
func testCatalog() *catalog.Catalog {
	cat := catalog.New()
	core := schema.GroupVersion{Version: "v1"}
	cat.AddBuiltin(
		&catalog.Resource{GroupVersion: core, Name: "namespaces", Kind: "Namespace", Singular: "namespace",
			ShortNames: []string{"ns"}, HasStatus: true, StorageGroupResource: schema.GroupResource{Resource: "namespaces"},
			// As kube's discovery data describes namespaces (catalog/kube).
			ResourceVerbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			Subresources: []catalog.Subresource{
				{Name: "finalize", Kind: schema.GroupVersionKind{Kind: "Namespace"}, Verbs: []string{"update"}},
				{Name: "status", Kind: schema.GroupVersionKind{Kind: "Namespace"}, Verbs: []string{"get", "patch", "update"}},
			}},
		&catalog.Resource{GroupVersion: core, Name: "configmaps", Kind: "ConfigMap", Singular: "configmap", Namespaced: true,
			ShortNames: []string{"cm"}, StorageGroupResource: schema.GroupResource{Resource: "configmaps"}},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, Name: "leases",
			Kind: "Lease", Singular: "lease", Namespaced: true,
			StorageGroupResource: schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Name: "deployments",
			Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"},
			HasStatus: true, Scale: &catalog.ScaleSubresource{SpecReplicasPath: ".spec.replicas"},
			StorageGroupResource: schema.GroupResource{Group: "apps", Resource: "deployments"}},
	)
	setWidgets(cat)
	return cat
}

func setWidgets(cat *catalog.Catalog) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget",
			ShortNames: []string{"wd"}, Categories: []string{"all"}},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1alpha1", Served: true},
			{Name: "v1beta1", Served: true, Storage: true},
		},
	}}
	widget := func(i int) *catalog.Resource {
		v := &crd.Spec.Versions[i]
		return &catalog.Resource{GroupVersion: schema.GroupVersion{Group: "example.com", Version: v.Name},
			Name: "widgets", Kind: "Widget", ListKind: "WidgetList", Singular: "widget", Namespaced: true,
			ShortNames: []string{"wd"}, Categories: []string{"all"}, HasStatus: true,
			StorageGroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"},
			Unstructured:         true, ServedByAPIExtensions: true, CRD: crd, CRDVersion: v}
	}
	alpha, beta := widget(0), widget(1)
	beta.Scale = &catalog.ScaleSubresource{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}
	cat.SetCustom("widgets.example.com", []*catalog.Resource{alpha, beta})
}

const (
	verbs8      = `["create","delete","deletecollection","get","list","patch","update","watch"]`
	crdVerbs8   = `["delete","deletecollection","get","list","patch","create","update","watch"]`
	subVerbs    = `["get","patch","update"]`
	notFoundDoc = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`

	apiDoc = `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"` + host + `"}]}`

	coreV1Doc = `{"kind":"APIResourceList","groupVersion":"v1","resources":[
		{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":` + verbs8 + `,"shortNames":["cm"],"storageVersionHash":"qFsyl6wFWjQ="},
		{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"storageVersionHash":"Q3oi5N2YM8M="},
		{"name":"namespaces/finalize","singularName":"","namespaced":false,"kind":"Namespace","verbs":["update"]},
		{"name":"namespaces/status","singularName":"","namespaced":false,"kind":"Namespace","verbs":` + subVerbs + `}]}`

	appsGroup   = `{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}`
	coordGroup  = `{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}}`
	widgetGroup = `{"name":"example.com","versions":[{"groupVersion":"example.com/v1beta1","version":"v1beta1"},{"groupVersion":"example.com/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"example.com/v1beta1","version":"v1beta1"}}`
	apisDoc     = `{"kind":"APIGroupList","apiVersion":"v1","groups":[` + appsGroup + `,` + coordGroup + `,` + widgetGroup + `]}`

	appsV1Doc = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[
		{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":` + verbs8 + `,"shortNames":["deploy"],"categories":["all"],"storageVersionHash":"8aSe+NMegvE="},
		{"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":` + subVerbs + `},
		{"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":` + subVerbs + `}]}`
	coordV1Doc = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"coordination.k8s.io/v1","resources":[
		{"name":"leases","singularName":"lease","namespaced":true,"kind":"Lease","verbs":` + verbs8 + `,"storageVersionHash":"gqkMMb/YqFM="}]}`
	widgetsBetaDoc = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"example.com/v1beta1","resources":[
		{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":` + crdVerbs8 + `,"shortNames":["wd"],"categories":["all"],"storageVersionHash":"3KMbXL6XZiI="},
		{"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":` + subVerbs + `},
		{"name":"widgets/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":` + subVerbs + `}]}`
	widgetsAlphaDoc = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"example.com/v1alpha1","resources":[
		{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":` + crdVerbs8 + `,"shortNames":["wd"],"categories":["all"],"storageVersionHash":"3KMbXL6XZiI="},
		{"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":` + subVerbs + `}]}`

	aggCore = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{},"versions":[{"version":"v1","freshness":"Current","resources":[
		{"resource":"configmaps","responseKind":{"group":"","version":"","kind":"ConfigMap"},"scope":"Namespaced","singularResource":"configmap","verbs":` + verbs8 + `,"shortNames":["cm"]},
		{"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"subresources":[
			{"subresource":"finalize","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["update"]},
			{"subresource":"status","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":` + subVerbs + `}]}]}]}]}`
	aggWidgets = `{"resource":"widgets","responseKind":{"group":"example.com","version":"VERSION","kind":"Widget"},"scope":"Namespaced","singularResource":"widget","verbs":` + crdVerbs8 + `,"shortNames":["wd"],"categories":["all"],"subresources":[
			{"subresource":"status","responseKind":{"group":"example.com","version":"VERSION","kind":"Widget"},"verbs":` + subVerbs + `}SCALE]}`
	aggApis = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
		{"metadata":{"name":"apps"},"versions":[{"version":"v1","freshness":"Current","resources":[
			{"resource":"deployments","responseKind":{"group":"","version":"","kind":"Deployment"},"scope":"Namespaced","singularResource":"deployment","verbs":` + verbs8 + `,"shortNames":["deploy"],"categories":["all"],"subresources":[
				{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":` + subVerbs + `},
				{"subresource":"status","responseKind":{"group":"","version":"","kind":"Deployment"},"verbs":` + subVerbs + `}]}]}]},
		{"metadata":{"name":"coordination.k8s.io"},"versions":[{"version":"v1","freshness":"Current","resources":[
			{"resource":"leases","responseKind":{"group":"","version":"","kind":"Lease"},"scope":"Namespaced","singularResource":"lease","verbs":` + verbs8 + `}]}]},
		{"metadata":{"name":"example.com"},"versions":[
			{"version":"v1beta1","freshness":"Current","resources":[WIDGETS_BETA]},
			{"version":"v1alpha1","freshness":"Current","resources":[WIDGETS_ALPHA]}]}]}`
)

func aggApisDoc() string {
	scale := `,{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":` + subVerbs + `}`
	beta := strings.NewReplacer("VERSION", "v1beta1", "SCALE", scale).Replace(aggWidgets)
	alpha := strings.NewReplacer("VERSION", "v1alpha1", "SCALE", "").Replace(aggWidgets)
	return strings.NewReplacer("WIDGETS_BETA", beta, "WIDGETS_ALPHA", alpha).Replace(aggApis)
}

func get(h http.Handler, path, accept string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = host
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestDocuments(t *testing.T) {
	h := NewHandler(testCatalog())
	const (
		ctJSON       = "application/json"
		ctText       = "text/plain; charset=utf-8"
		pageNotFound = "404 page not found\n"
	)
	tests := []struct {
		name, path, accept string
		code               int
		contentType        string
		body               string
	}{
		{"api legacy", "/api", "", 200, ctJSON, apiDoc},
		{"api trailing slash", "/api/", "application/json", 200, ctJSON, apiDoc},
		{"api aggregated", "/api", acceptV2, 200, acceptV2, aggCore},
		{"api kubectl accept", "/api", acceptKubectl, 200, acceptV2, aggCore},
		{"core v1", "/api/v1", "", 200, ctJSON, coreV1Doc},
		{"core v1 ignores aggregated accept", "/api/v1", acceptKubectl, 200, ctJSON, coreV1Doc},
		{"apis legacy", "/apis", "application/json, */*", 200, ctJSON, apisDoc},
		{"apis aggregated", "/apis", acceptKubectl, 200, acceptV2, aggApisDoc()},
		{"apis lower quality aggregated", "/apis", acceptV2 + ";q=0.5,application/json", 200, ctJSON, apisDoc},
		{"apis quality prefers aggregated", "/apis", "application/json;q=0.9," + acceptV2, 200, acceptV2, aggApisDoc()},
		{"apis protobuf aggregated not served", "/apis", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", 200, ctJSON, apisDoc},
		{"apis unknown aggregated version", "/apis", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList", 200, ctJSON, apisDoc},
		{"group apps", "/apis/apps", "", 200, ctJSON, `{"kind":"APIGroup","apiVersion":"v1",` + appsGroup[1:]},
		{"group coordination", "/apis/coordination.k8s.io/", "", 200, ctJSON, `{"kind":"APIGroup","apiVersion":"v1",` + coordGroup[1:]},
		{"group custom", "/apis/example.com", acceptKubectl, 200, ctJSON, `{"kind":"APIGroup","apiVersion":"v1",` + widgetGroup[1:]},
		{"apps v1", "/apis/apps/v1", "", 200, ctJSON, appsV1Doc},
		{"coordination v1", "/apis/coordination.k8s.io/v1", "", 200, ctJSON, coordV1Doc},
		{"custom v1beta1", "/apis/example.com/v1beta1", "", 200, ctJSON, widgetsBetaDoc},
		{"custom v1alpha1", "/apis/example.com/v1alpha1", "", 200, ctJSON, widgetsAlphaDoc},
		{"unknown core version", "/api/v2", "", 404, ctJSON, notFoundDoc},
		// kube-apiserver has no handler for a group it does not serve: Go's plain 404.
		{"unknown group", "/apis/nope.example.com", "", 404, ctText, pageNotFound},
		{"unknown group's version", "/apis/nope.example.com/v1", "", 404, ctText, pageNotFound},
		{"unknown version", "/apis/apps/v2", "", 404, ctJSON, notFoundDoc},
		{"core group is not under apis", "/apis/v1", "", 404, ctText, pageNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(h, tt.path, tt.accept)
			if rec.Code != tt.code {
				t.Fatalf("code = %d, want %d; body %s", rec.Code, tt.code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", ct, tt.contentType)
			}
			if tt.contentType == ctText {
				if rec.Body.String() != tt.body {
					t.Errorf("body %q, want %q", rec.Body, tt.body)
				}
				return
			}
			assertJSON(t, rec.Body.Bytes(), tt.body)
		})
	}
}

func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", "  ")
		wb, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("body:\n%s\nwant:\n%s", gb, wb)
	}
}

func TestAggregatedCaching(t *testing.T) {
	h := NewHandler(testCatalog())
	for _, path := range []string{"/api", "/apis"} {
		first := get(h, path, acceptV2)
		etag := first.Header().Get("ETag")
		if etag == "" || etag[0] != '"' {
			t.Fatalf("%s: ETag = %q, want a quoted hash", path, etag)
		}
		if v := first.Header().Get("Vary"); v != "Accept" {
			t.Errorf("%s: Vary = %q, want Accept", path, v)
		}
		notModified := get(h, path, acceptV2, "If-None-Match", etag)
		if notModified.Code != http.StatusNotModified || notModified.Body.Len() != 0 {
			t.Errorf("%s: If-None-Match answered %d with %q, want 304 and no body", path, notModified.Code, notModified.Body)
		}
		if e := notModified.Header().Get("ETag"); e != etag {
			t.Errorf("%s: 304 ETag = %q, want %q", path, e, etag)
		}
		if stale := get(h, path, acceptV2, "If-None-Match", `"stale"`); stale.Code != http.StatusOK {
			t.Errorf("%s: stale If-None-Match answered %d, want 200", path, stale.Code)
		}
		if legacy := get(h, path, "application/json"); legacy.Header().Get("Vary") != "Accept" || legacy.Header().Get("ETag") != "" {
			t.Errorf("%s: legacy headers %v, want Vary: Accept and no ETag", path, legacy.Header())
		}
	}
}

func TestAggregatedV2Beta1(t *testing.T) {
	h := NewHandler(testCatalog())
	rec := get(h, "/apis", acceptV2Beta1+",application/json")
	if ct := rec.Header().Get("Content-Type"); ct != acceptV2Beta1 {
		t.Fatalf("Content-Type = %q, want %q", ct, acceptV2Beta1)
	}
	var list apidiscoveryv2beta1.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "apidiscovery.k8s.io/v2beta1" || list.Kind != "APIGroupDiscoveryList" {
		t.Errorf("type = %s %s", list.APIVersion, list.Kind)
	}
	var names []string
	for _, g := range list.Items {
		names = append(names, g.Name)
	}
	if want := []string{"apps", "coordination.k8s.io", "example.com"}; !reflect.DeepEqual(names, want) {
		t.Errorf("groups = %v, want %v", names, want)
	}
	if v2 := get(h, "/apis", acceptV2); v2.Header().Get("ETag") != rec.Header().Get("ETag") {
		t.Errorf("v2 and v2beta1 ETags differ")
	}
}

func TestRebuildsOnCatalogueChange(t *testing.T) {
	cat := testCatalog()
	h := NewHandler(cat)
	before := get(h, "/apis", acceptV2).Header().Get("ETag")
	docs := h.current.Load()
	get(h, "/apis/apps/v1", "")
	if h.current.Load() != docs {
		t.Fatal("documents were rebuilt without a catalogue change")
	}

	cat.SetCustom("widgets.example.com", nil)
	if rec := get(h, "/apis/example.com/v1beta1", ""); rec.Code != http.StatusNotFound {
		t.Errorf("removed custom version answered %d, want 404", rec.Code)
	}
	assertJSON(t, get(h, "/apis", "").Body.Bytes(), `{"kind":"APIGroupList","apiVersion":"v1","groups":[`+appsGroup+`,`+coordGroup+`]}`)
	if after := get(h, "/apis", acceptV2).Header().Get("ETag"); after == before {
		t.Error("ETag did not change with the catalogue")
	}

	setWidgets(cat)
	assertJSON(t, get(h, "/apis", "").Body.Bytes(), apisDoc)
	if after := get(h, "/apis", acceptV2).Header().Get("ETag"); after != before {
		t.Error("ETag differs for the same content")
	}
}

func TestEmptyCatalogue(t *testing.T) {
	h := NewHandler(catalog.New())
	assertJSON(t, get(h, "/apis", "").Body.Bytes(), `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	assertJSON(t, get(h, "/apis", acceptV2).Body.Bytes(), `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}`)
	assertJSON(t, get(h, "/api", "").Body.Bytes(), `{"kind":"APIVersions","versions":[],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"`+host+`"}]}`)
}

func TestMethodNotAllowed(t *testing.T) {
	h := NewHandler(testCatalog())
	req := httptest.NewRequest(http.MethodPost, "/apis", strings.NewReader("{}"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST answered %d, want 405", rec.Code)
	}
}

func TestServes(t *testing.T) {
	h := NewHandler(catalog.New())
	tests := []struct {
		path string
		want bool
	}{
		{"/api", true},
		{"/api/", true},
		{"/api/v1", true},
		{"/api/v1/", true},
		{"/apis", true},
		{"/apis/apps", true},
		{"/apis/apps/v1", true},
		{"/apis/apps/v1/", true},
		{"/apis/unknown.example.com/v9", true}, // served as 404
		{"/", false},
		{"/apix", false},
		{"/api/v1/namespaces", false},
		{"/api/v1/namespaces/default/configmaps", false},
		{"/apis/apps/v1/deployments", false},
		{"/apis//v1", false},
		{"/healthz", false},
		{"/openapi/v2", false},
	}
	for _, tt := range tests {
		if got := h.Serves(tt.path); got != tt.want {
			t.Errorf("Serves(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
