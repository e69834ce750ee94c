package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/openapi"
)

func main() {
	cat := catalog.New()
	cat.AddBuiltin(
		&catalog.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Behavior: catalog.Typed[corev1.ConfigMap, *corev1.ConfigMap]{}},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Name: "namespaces", Kind: "Namespace", HasStatus: true},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Name: "deployments", Kind: "Deployment", Namespaced: true, HasStatus: true, Scale: &catalog.ScaleSubresource{}},
		&catalog.Resource{GroupVersion: schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"}, Name: "customresourcedefinitions", Kind: "CustomResourceDefinition", HasStatus: true},
	)
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: "Namespaced",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"}}}
	v := &apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Description: "Widget spec.", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer", Description: "How big."}}},
		}}}}
	cat.SetCustom("widgets.example.com", []*catalog.Resource{{GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Name: "widgets", Kind: "Widget", ListKind: "WidgetList", Namespaced: true, CRD: crd, CRDVersion: v}})
	svc := openapi.NewService(cat)
	store := map[string][]byte{}

	lists := map[string]*metav1.APIResourceList{}
	for _, r := range cat.All() {
		gv := r.GroupVersion.String()
		if lists[gv] == nil {
			lists[gv] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
		}
		lists[gv].APIResources = append(lists[gv].APIResources, metav1.APIResource{Name: r.Name, Kind: r.Kind, Namespaced: r.Namespaced, Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}})
	}
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range []string{"apps", "apiextensions.k8s.io", "example.com"} {
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: g + "/v1", Version: "v1"}
		groups.Groups = append(groups.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
	}
	write := func(w http.ResponseWriter, v any) { w.Header().Set("Content-Type", "application/json"); json.NewEncoder(w).Encode(v) }
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s?%s Accept=%q", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"))
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/openapi/"):
			svc.ServeHTTP(w, r)
		case p == "/api":
			write(w, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		case p == "/apis":
			write(w, groups)
		case p == "/api/v1":
			write(w, lists["v1"])
		case strings.HasPrefix(p, "/apis/") && strings.Count(p, "/") == 3:
			l := lists[strings.TrimPrefix(p, "/apis/")]
			if l == nil {
				http.NotFound(w, r)
				return
			}
			write(w, l)
		case r.Method == "POST":
			b, _ := io.ReadAll(r.Body)
			var m map[string]any
			json.Unmarshal(b, &m)
			name := m["metadata"].(map[string]any)["name"].(string)
			store[p+"/"+name] = b
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			w.Write(b)
		case r.Method == "GET" && store[p] != nil, r.Method == "PATCH" && store[p] != nil:
			if r.Method == "PATCH" {
				b, _ := io.ReadAll(r.Body)
				log.Printf("patch %s: %s", r.Header.Get("Content-Type"), b)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(store[p])
		default:
			http.NotFound(w, r)
		}
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:18443", nil))
}
