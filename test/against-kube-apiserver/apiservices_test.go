package againstkube

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

const apiServices = "/apis/apiregistration.k8s.io/v1/apiservices"

// apiServiceCRD is a CustomResourceDefinition of its own group, two versions served and one
// not: its local APIServices are the served versions'.
const apiServiceCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"gadgets.apisvc.kubediff.example.com"},
"spec":{"group":"apisvc.kubediff.example.com","scope":"Namespaced",
"names":{"plural":"gadgets","singular":"gadget","kind":"Gadget"},
"versions":[
 {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
 {"name":"v1beta1","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
 {"name":"v1alpha1","served":false,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

// TestAPIServices: the local APIServices — one per built-in group version and per served
// custom resource version, Available with kube's reason and message — are kube's, and a CRD's
// come and go with it (kube's autoregister and CRD registration controllers).
func TestAPIServices(t *testing.T) {
	lapis, kube := servers(t)
	crdGroup := ".apisvc.kubediff.example.com"
	compareAPIServices(t, "at start", lapis, kube, func(name string) bool { return !strings.HasSuffix(name, crdGroup) })

	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for _, s := range []*target{lapis, kube} {
		s.must(t, request{method: "DELETE", path: crds + "/gadgets.apisvc.kubediff.example.com"}, http.StatusOK, http.StatusNotFound)
		waitAPIServices(t, s, crdGroup, nil)
		s.must(t, request{method: "POST", path: crds, contentType: jsonType, body: apiServiceCRD}, http.StatusCreated)
	}
	for _, s := range []*target{lapis, kube} {
		waitAPIServices(t, s, crdGroup, []string{"v1" + crdGroup, "v1beta1" + crdGroup})
	}
	compareAPIServices(t, "with a CRD", lapis, kube, func(name string) bool { return strings.HasSuffix(name, crdGroup) })

	for _, s := range []*target{lapis, kube} {
		s.must(t, request{method: "DELETE", path: crds + "/gadgets.apisvc.kubediff.example.com"}, http.StatusOK)
	}
	for _, s := range []*target{lapis, kube} {
		waitAPIServices(t, s, crdGroup, nil)
	}
}

// apiServicesOf lists s's APIServices by name, masked, those keep tells.
func apiServicesOf(t *testing.T, s *target, keep func(string) bool) map[string]any {
	t.Helper()
	resp := s.must(t, request{method: "GET", path: apiServices}, http.StatusOK)
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(resp.body, &list); err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	out := map[string]any{}
	for _, item := range list.Items {
		name, _ := nested(item, "metadata", "name").(string)
		if keep(name) {
			out[name] = mask(item)
		}
	}
	return out
}

// compareAPIServices fails t where lapis's APIServices (those keep tells) differ from kube's.
func compareAPIServices(t *testing.T, when string, lapis, kube *target, keep func(string) bool) {
	t.Helper()
	l, k := apiServicesOf(t, lapis, keep), apiServicesOf(t, kube, keep)
	var diffs []string
	for name, kv := range k {
		diffJSON(name, kv, l[name], &diffs)
	}
	for name := range l {
		if _, ok := k[name]; !ok {
			diffs = append(diffs, name+": lapis only")
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s, APIServices differ from kube's:\n  %s", when, strings.Join(diffs, "\n  "))
	}
}

// waitAPIServices waits until s's APIServices of the suffix are exactly want, all Available.
func waitAPIServices(t *testing.T, s *target, suffix string, want []string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = nil
		for name, v := range apiServicesOf(t, s, func(n string) bool { return strings.HasSuffix(n, suffix) }) {
			if available(v.(map[string]any)) {
				got = append(got, name)
			} else {
				got = append(got, name+" (not Available)")
			}
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("%s: APIServices %s*: %v, want %v, all Available", s.name, suffix, got, want)
}

// available tells whether an APIService's Available condition is True.
func available(apiService map[string]any) bool {
	conditions, _ := nested(apiService, "status", "conditions").([]any)
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == "Available" {
			return c["status"] == "True"
		}
	}
	return false
}

// tieCRD is a CRD of group GROUP served at VERSION only.
const tieCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"ties.GROUP"},
"spec":{"group":"GROUP","scope":"Namespaced","names":{"plural":"ties","singular":"tie","kind":"Tie"},
"versions":[{"name":"VERSION","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`

// TestGroupOrder: groups of equal priority (custom resources') are listed as kube lists them,
// which differs between the two forms of /apis: legacy by APIService name (version.group, so
// v1.zz before v2.aa), aggregated by group name (aa before zz).
func TestGroupOrder(t *testing.T) {
	lapis, kube := servers(t)
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	groups := map[string]string{"aa.order.kubediff.example.com": "v2", "zz.order.kubediff.example.com": "v1"}
	for _, s := range []*target{lapis, kube} {
		for _, g := range []string{"aa.order.kubediff.example.com", "zz.order.kubediff.example.com"} {
			body := strings.NewReplacer("GROUP", g, "VERSION", groups[g]).Replace(tieCRD)
			s.must(t, request{method: "DELETE", path: crds + "/ties." + g}, http.StatusOK, http.StatusNotFound)
			s.must(t, request{method: "POST", path: crds, contentType: jsonType, body: body}, http.StatusCreated)
			t.Cleanup(func() { s.do(request{method: "DELETE", path: crds + "/ties." + g}) })
		}
	}
	for _, form := range []struct{ name, accept string }{
		{"legacy", "application/json"},
		{"aggregated", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
	} {
		var kubeOrder []string
		for _, s := range []*target{kube, lapis} {
			var got []string
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if got = orderGroups(t, s, form.accept); len(got) == 2 {
					break
				}
			}
			if s == kube {
				kubeOrder = got
			} else if !slices.Equal(got, kubeOrder) {
				t.Errorf("%s /apis lists %v, kube %v", form.name, got, kubeOrder)
			}
		}
	}
}

// orderGroups lists the order.kubediff.example.com groups of s's /apis, in its order.
func orderGroups(t *testing.T, s *target, accept string) []string {
	t.Helper()
	a := s.call(request{method: "GET", path: "/apis"}, accept)
	var doc struct {
		Groups []struct{ Name string } `json:"groups"`
		Items  []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		t.Fatalf("%s: /apis: %v", s.name, err)
	}
	var names []string
	for _, g := range doc.Groups {
		names = append(names, g.Name)
	}
	for _, g := range doc.Items {
		names = append(names, g.Metadata.Name)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".order.kubediff.example.com") {
			out = append(out, n)
		}
	}
	return out
}
