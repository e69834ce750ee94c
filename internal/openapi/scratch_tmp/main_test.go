package scratch

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/openapi"
)

func TestDump(t *testing.T) {
	cat := catalog.New()
	cat.AddBuiltin(
		&catalog.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Behavior: catalog.Typed[corev1.ConfigMap, *corev1.ConfigMap]{}},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "namespaces", Kind: "Namespace", HasStatus: true},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "pods", Kind: "Pod", Namespaced: true, HasStatus: true},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Name: "deployments", Kind: "Deployment", Namespaced: true, HasStatus: true, Scale: &catalog.ScaleSubresource{}},
	)
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: "Namespaced",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"}}}
	v := &apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}}}},
		}}}}
	cat.SetCustom("widgets.example.com", []*catalog.Resource{{GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Name: "widgets", Kind: "Widget", ListKind: "WidgetList", Namespaced: true, CRD: crd, CRDVersion: v}})
	srv := httptest.NewServer(openapi.NewService(cat))
	defer srv.Close()
	for _, u := range []string{"/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/example.com/v1", "/openapi/v2", "/openapi/v2"} {
		start := time.Now()
		req, _ := http.NewRequest("GET", srv.URL+u, nil)
		if u == "/openapi/v2" {
			req.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := os.Create("/tmp/oa" + filepathSafe(u))
		n, _ := f.ReadFrom(resp.Body)
		f.Close()
		t.Logf("%s %d %s %d bytes %v", u, resp.StatusCode, resp.Header.Get("Content-Type"), n, time.Since(start))
	}
}

func filepathSafe(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '/' {
			b[i] = '_'
		}
	}
	return string(b)
}
