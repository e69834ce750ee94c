package againstkube

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"
)

// TestListConventionsOff: server-side apply on a custom resource whose CRD does not carry
// apply.lapis.dev/list-conventions answers as kube-apiserver: the Metacontroller seed's CatSet
// walkthrough and the seed's Limitations cases, request by request (codes, conflict messages),
// then the objects and their managedFields compared whole.
func TestListConventionsOff(t *testing.T) {
	lapis, kube := servers(t)
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"catsets.kubediff.example.com"},
 "spec":{"group":"kubediff.example.com","scope":"Namespaced",
  "names":{"plural":"catsets","singular":"catset","kind":"CatSet","listKind":"CatSetList"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
    "properties":{"fixed":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}}}]}}`
	catsets := "/apis/kubediff.example.com/v1/namespaces/" + ns + "/catsets"
	for _, s := range []*target{lapis, kube} {
		s.must(t, request{method: "POST", path: crds, contentType: jsonType, body: crd}, http.StatusCreated, http.StatusConflict)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range []*target{lapis, kube} {
		for s.do(request{method: "GET", path: catsets}).code != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s is not served after 30 s", s.name, catsets)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	type step struct {
		manager string
		force   bool
		spec    string // YAML flow
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"seed", []step{
			{"kubectl", false, `{template: {metadata: {labels: {app: nginx}}, spec: {containers: [{name: nginx, image: nginx, ports: [{containerPort: 80, name: web}]}]}}}`},
			{"injector", false, `{template: {spec: {containers: [{name: nginx, ports: [{containerPort: 9090, name: metrics}]}, {name: sidecar, image: log-uploader}]}}}`},
			{"injector", true, `{template: {spec: {containers: [{name: nginx, ports: [{containerPort: 9090, name: metrics}]}, {name: sidecar, image: log-uploader}]}}}`},
			{"kubectl", false, `{template: {metadata: {labels: {app: nginx}}, spec: {containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80, name: web}]}]}}}`},
		}},
		{"atomic", []step{
			{"a", false, `{hosts: [{ip: 10.0.0.1}], fixed: [{name: x}]}`},
			{"b", false, `{hosts: [{ip: 10.0.0.2}]}`},
			{"b", false, `{fixed: [{name: "y"}]}`},
		}},
		{"unconventional", []step{{"a", false, `{rules: [{id: r1}]}`}, {"b", false, `{rules: [{id: r2}]}`}}},
		{"multi", []step{{"a", false, `{ports: [{containerPort: 53, protocol: TCP}]}`}, {"b", false, `{ports: [{containerPort: 53, protocol: UDP}]}`}}},
		{"scalars", []step{{"a", false, `{args: [--verbose]}`}, {"b", false, `{args: [--quiet]}`}}},
		{"keyless", []step{
			{"a", false, `{env: [{name: A, value: "1"}]}`},
			{"b", false, `{env: [{name: B, value: "2"}]}`},
			{"c", false, `{env: [{value: "3"}]}`},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := catsets + "/conv-" + tc.name
			for _, st := range tc.steps {
				body := fmt.Sprintf("apiVersion: kubediff.example.com/v1\nkind: CatSet\nmetadata: {name: conv-%s}\nspec: %s\n", tc.name, st.spec)
				path := obj + "?fieldManager=" + st.manager
				if st.force {
					path += "&force=true"
				}
				r := request{method: "PATCH", path: path, contentType: applyType, body: body}
				compare(t, r, send(r, r), allowance{})
			}
			got := func(s *target) (spec any, fields map[string]any) {
				var o struct {
					Spec     any `json:"spec"`
					Metadata struct {
						ManagedFields []struct {
							Manager   string `json:"manager"`
							Operation string `json:"operation"`
							FieldsV1  any    `json:"fieldsV1"`
						} `json:"managedFields"`
					} `json:"metadata"`
				}
				resp := s.must(t, request{method: "GET", path: obj}, http.StatusOK)
				if err := json.Unmarshal(resp.body, &o); err != nil {
					t.Fatal(err)
				}
				fields = map[string]any{}
				for _, e := range o.Metadata.ManagedFields {
					fields[e.Manager+" "+e.Operation] = e.FieldsV1
				}
				return o.Spec, fields
			}
			ls, lf := got(lapis)
			ks, kf := got(kube)
			if !reflect.DeepEqual(ls, ks) {
				t.Errorf("spec:\n  kube:  %v\n  lapis: %v", ks, ls)
			}
			if !reflect.DeepEqual(lf, kf) {
				t.Errorf("managedFields:\n  kube:  %v\n  lapis: %v", sortedKeys(kf), sortedKeys(lf))
				for k := range kf {
					if !reflect.DeepEqual(kf[k], lf[k]) {
						t.Errorf("%s:\n  kube:  %v\n  lapis: %v", k, kf[k], lf[k])
					}
				}
			}
		})
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
