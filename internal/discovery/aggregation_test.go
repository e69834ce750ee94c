package discovery

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func apiService(version, group string, groupPriority, versionPriority int32, remote bool) *apiregistrationv1.APIService {
	s := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: groupPriority, VersionPriority: versionPriority}}
	if remote {
		s.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}
	}
	return s
}

// groupOrder lists /apis's groups with their versions, legacy or aggregated.
func groupOrder(t *testing.T, h *Handler, accept string) [][]string {
	t.Helper()
	rec := get(h, "/apis", accept)
	if rec.Code != http.StatusOK {
		t.Fatalf("/apis: %d %s", rec.Code, rec.Body)
	}
	var out [][]string
	if accept == "" {
		var list metav1.APIGroupList
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			t.Fatal(err)
		}
		for _, g := range list.Groups {
			entry := []string{g.Name}
			for _, v := range g.Versions {
				entry = append(entry, v.Version)
			}
			out = append(out, entry)
		}
		return out
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	for _, g := range list.Items {
		entry := []string{g.Name}
		for _, v := range g.Versions {
			entry = append(entry, v.Version+":"+string(v.Freshness))
		}
		out = append(out, entry)
	}
	return out
}

// TestAggregation: extension servers' group versions are listed where their APIServices'
// priorities put them, in both forms of /apis, as kube's aggregator lists them.
func TestAggregation(t *testing.T) {
	wardle := apidiscoveryv2.APIVersionDiscovery{Version: "v1alpha1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		Resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "flunders", Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"get"}}}}
	tests := []struct {
		name        string
		apiServices []*apiregistrationv1.APIService
		versions    map[string]apidiscoveryv2.APIVersionDiscovery // group -> version
		priorities  map[metav1.GroupVersion][2]int
		legacy      [][]string
		aggregated  [][]string
	}{{
		name:       "catalogue only: kube's priorities",
		legacy:     [][]string{{"apps", "v1"}, {"coordination.k8s.io", "v1"}, {"example.com", "v1beta1", "v1alpha1"}},
		aggregated: [][]string{{"apps", "v1:Current"}, {"coordination.k8s.io", "v1:Current"}, {"example.com", "v1beta1:Current", "v1alpha1:Current"}},
	}, {
		name:        "a remote group between two built-in ones",
		apiServices: []*apiregistrationv1.APIService{apiService("v1alpha1", "wardle.example.com", 17000, 15, true)},
		versions:    map[string]apidiscoveryv2.APIVersionDiscovery{"wardle.example.com": wardle},
		priorities:  map[metav1.GroupVersion][2]int{{Group: "wardle.example.com", Version: "v1alpha1"}: {17000, 15}},
		legacy:      [][]string{{"apps", "v1"}, {"wardle.example.com", "v1alpha1"}, {"coordination.k8s.io", "v1"}, {"example.com", "v1beta1", "v1alpha1"}},
		aggregated: [][]string{{"apps", "v1:Current"}, {"wardle.example.com", "v1alpha1:Current"}, {"coordination.k8s.io", "v1:Current"},
			{"example.com", "v1beta1:Current", "v1alpha1:Current"}},
	}, {
		name:        "registered, its discovery not fetched yet: listed in /apis only",
		apiServices: []*apiregistrationv1.APIService{apiService("v1alpha1", "wardle.example.com", 100, 15, true)},
		legacy:      [][]string{{"apps", "v1"}, {"coordination.k8s.io", "v1"}, {"example.com", "v1beta1", "v1alpha1"}, {"wardle.example.com", "v1alpha1"}},
		aggregated:  [][]string{{"apps", "v1:Current"}, {"coordination.k8s.io", "v1:Current"}, {"example.com", "v1beta1:Current", "v1alpha1:Current"}},
	}, {
		name:        "a stale remote version of a custom group, first by its version priority",
		apiServices: []*apiregistrationv1.APIService{apiService("v2", "example.com", 1000, 200, true)},
		versions:    map[string]apidiscoveryv2.APIVersionDiscovery{"example.com": {Version: "v2", Freshness: apidiscoveryv2.DiscoveryFreshnessStale}},
		priorities:  map[metav1.GroupVersion][2]int{{Group: "example.com", Version: "v2"}: {1000, 200}},
		legacy:      [][]string{{"apps", "v1"}, {"coordination.k8s.io", "v1"}, {"example.com", "v2", "v1beta1", "v1alpha1"}},
		aggregated:  [][]string{{"apps", "v1:Current"}, {"coordination.k8s.io", "v1:Current"}, {"example.com", "v2:Stale", "v1beta1:Current", "v1alpha1:Current"}},
	}, {
		// kube's /apis sorts APIServices of equal group priority by name (version.group), its
		// aggregated discovery by group name.
		name:        "equal group priorities: APIService names in /apis, group names in aggregated discovery",
		apiServices: []*apiregistrationv1.APIService{apiService("v1", "z.example.com", 1000, 100, true)},
		versions:    map[string]apidiscoveryv2.APIVersionDiscovery{"z.example.com": {Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}},
		priorities:  map[metav1.GroupVersion][2]int{{Group: "z.example.com", Version: "v1"}: {1000, 100}},
		// v1.z.example.com sorts before v1alpha1.example.com
		legacy:     [][]string{{"apps", "v1"}, {"coordination.k8s.io", "v1"}, {"z.example.com", "v1"}, {"example.com", "v1beta1", "v1alpha1"}},
		aggregated: [][]string{{"apps", "v1:Current"}, {"coordination.k8s.io", "v1:Current"}, {"example.com", "v1beta1:Current", "v1alpha1:Current"}, {"z.example.com", "v1:Current"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHandler(testCatalog())
			h.SetAPIServices(tt.apiServices)
			for group, v := range tt.versions {
				h.AddGroupVersion(group, v)
			}
			for gv, p := range tt.priorities {
				h.SetGroupVersionPriority(gv, p[0], p[1])
			}
			if got := groupOrder(t, h, ""); !reflect.DeepEqual(got, tt.legacy) {
				t.Errorf("/apis lists %v, want %v", got, tt.legacy)
			}
			if got := groupOrder(t, h, acceptV2); !reflect.DeepEqual(got, tt.aggregated) {
				t.Errorf("aggregated /apis lists %v, want %v", got, tt.aggregated)
			}
		})
	}
}

// TestAggregatedGroup: a group only an extension server serves has its /apis/GROUP document
// (its versions from the APIServices), and goes with them.
func TestAggregatedGroup(t *testing.T) {
	h := NewHandler(testCatalog())
	if rec := get(h, "/apis/wardle.example.com", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("before its APIService: %d", rec.Code)
	}
	h.SetAPIServices([]*apiregistrationv1.APIService{
		apiService("v1alpha1", "wardle.example.com", 1000, 15, true), apiService("v1beta1", "wardle.example.com", 1000, 20, true)})
	rec := get(h, "/apis/wardle.example.com", "")
	want := `{"kind":"APIGroup","apiVersion":"v1","name":"wardle.example.com","versions":[` +
		`{"groupVersion":"wardle.example.com/v1beta1","version":"v1beta1"},{"groupVersion":"wardle.example.com/v1alpha1","version":"v1alpha1"}],` +
		`"preferredVersion":{"groupVersion":"wardle.example.com/v1beta1","version":"v1beta1"}}`
	assertJSON(t, rec.Body.Bytes(), want)

	invalidated := 0
	h.AddInvalidationCallback(func() { invalidated++ })
	h.SetAPIServices(nil)
	if rec := get(h, "/apis/wardle.example.com", ""); rec.Code != http.StatusNotFound {
		t.Errorf("after its APIServices went: %d", rec.Code)
	}
	if invalidated != 1 {
		t.Errorf("invalidation callbacks called %d times, want 1", invalidated)
	}
}
