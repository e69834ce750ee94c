package discovery

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// TestClientGo points client-go's discovery client and REST mapper at the handler, with
// aggregated discovery (the default) and with the legacy per-group-version documents.
func TestClientGo(t *testing.T) {
	h := NewHandler(testCatalog())
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	want := map[string][]string{
		"v1":                     {"configmaps", "namespaces", "namespaces/finalize", "namespaces/status"},
		"coordination.k8s.io/v1": {"leases"},
		"apps/v1":                {"deployments", "deployments/scale", "deployments/status"},
		"example.com/v1beta1":    {"widgets", "widgets/scale", "widgets/status"},
		"example.com/v1alpha1":   {"widgets", "widgets/status"},
	}
	for _, legacy := range []bool{false, true} {
		mu.Lock()
		paths = nil
		mu.Unlock()

		dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		dc.UseLegacyDiscovery = legacy
		groups, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("legacy=%v: ServerGroupsAndResources: %v", legacy, err)
		}
		var names []string
		for _, g := range groups {
			names = append(names, g.Name+"@"+g.PreferredVersion.Version)
		}
		if want := []string{"@v1", "apps@v1", "coordination.k8s.io@v1", "example.com@v1beta1"}; !reflect.DeepEqual(names, want) {
			t.Errorf("legacy=%v: groups = %v, want %v", legacy, names, want)
		}
		got := map[string][]string{}
		for _, l := range lists {
			for _, r := range l.APIResources {
				got[l.GroupVersion] = append(got[l.GroupVersion], r.Name)
			}
			sort.Strings(got[l.GroupVersion])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("legacy=%v: resources = %v, want %v", legacy, got, want)
		}

		mu.Lock()
		fetched := append([]string(nil), paths...)
		mu.Unlock()
		if !legacy && !reflect.DeepEqual(fetched, []string{"/api", "/apis"}) {
			t.Errorf("aggregated discovery fetched %v, want only /api and /apis", fetched)
		}

		resources, err := restmapper.GetAPIGroupResources(dc)
		if err != nil {
			t.Fatal(err)
		}
		mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(resources), dc, nil)
		gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: "cm"})
		if err != nil || gvr != (schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}) {
			t.Errorf("legacy=%v: cm maps to %v, %v", legacy, gvr, err)
		}
		gvr, err = mapper.ResourceFor(schema.GroupVersionResource{Resource: "wd"})
		if err != nil || gvr != (schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}) {
			t.Errorf("legacy=%v: wd maps to %v, %v", legacy, gvr, err)
		}
		mapping, err := mapper.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"})
		if err != nil {
			t.Fatalf("legacy=%v: RESTMapping(Widget): %v", legacy, err)
		}
		if mapping.Resource != (schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}) ||
			mapping.Scope.Name() != "namespace" {
			t.Errorf("legacy=%v: Widget maps to %v (scope %s)", legacy, mapping.Resource, mapping.Scope.Name())
		}
		mapping, err = mapper.RESTMapping(schema.GroupKind{Kind: "Namespace"})
		if err != nil || mapping.Resource.Resource != "namespaces" || mapping.Scope.Name() != "root" {
			t.Errorf("legacy=%v: Namespace maps to %+v, %v", legacy, mapping, err)
		}
	}
}
