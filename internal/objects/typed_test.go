package objects

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// The typed path (Go objects handed from defaulting to the strategies, the last write's Go
// object as the next update's old) writes exactly what the plain path writes.
func TestTypedPathWritesTheSame(t *testing.T) {
	typedService, plainService := newTestService(t), newTestService(t)
	deployments := func(s *Service, typed bool) *catalog.Resource {
		r := s.mustResource(t, "apps", "v1", "deployments")
		if !typed {
			plain := *r
			plain.TypedBehavior = nil // writes take the plain unstructured path
			r = &plain
		}
		if _, ok := typedOf(r); ok != typed {
			t.Fatalf("typed path %v, want %v", ok, typed)
		}
		return r
	}
	typedR, plainR := deployments(typedService, true), deployments(plainService, false)
	ctx := context.Background()

	type step struct {
		name    string
		apply   string // a configuration applied as manager
		manager string
		update  func(u *unstructured.Unstructured) // else an update (PUT) of the current object
	}
	steps := []step{
		{name: "create by apply", manager: "chart", apply: benchDeployment(1)},
		{name: "second manager", manager: "scaler", apply: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":5}}`},
		{name: "image change", manager: "chart", apply: benchDeployment(2)},
		{name: "no change", manager: "chart", apply: benchDeployment(2)},
		{name: "update", manager: "editor", update: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "Recreate", "spec", "strategy", "type")
			unstructured.RemoveNestedField(u.Object, "spec", "strategy", "rollingUpdate")
			u.SetLabels(map[string]string{"edited": "yes"})
		}},
		{name: "apply after update", manager: "chart", apply: benchDeployment(3)},
		{name: "status-like field dropped", manager: "scaler", apply: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2,"paused":true}}`},
		{name: "invalid", manager: "chart", apply: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":-1}}`},
		{name: "last", manager: "chart", apply: benchDeployment(4)},
	}
	defer func() {
		if len(typedService.written.entries) != 1 || len(plainService.written.entries) != 0 {
			t.Errorf("kept %d objects (typed path) and %d (plain path), want 1 and 0", len(typedService.written.entries), len(plainService.written.entries))
		}
	}()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			write := func(s *Service, r *catalog.Resource) (map[string]any, error) {
				var res Result
				var err error
				if st.update != nil {
					res, err = s.Update(ctx, r, "default", "d", func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
						st.update(u)
						return u, nil
					}, WriteOptions{Manager: st.manager})
				} else {
					var config unstructured.Unstructured
					if err := json.Unmarshal([]byte(st.apply), &config.Object); err != nil {
						t.Fatal(err)
					}
					res, err = s.Apply(ctx, r, "default", "d", &config, ApplyOptions{WriteOptions: WriteOptions{Manager: st.manager}, Force: true})
				}
				if err != nil {
					return nil, err
				}
				got, err := s.Get(ctx, r, "default", "d")
				if err != nil {
					t.Fatal(err)
				}
				if res.Object.GetResourceVersion() != got.GetResourceVersion() {
					t.Errorf("result at %s, stored at %s", res.Object.GetResourceVersion(), got.GetResourceVersion())
				}
				return masked(got.Object), nil
			}
			typedGot, typedErr := write(typedService, typedR)
			plainGot, plainErr := write(plainService, plainR)
			if fmt.Sprint(typedErr) != fmt.Sprint(plainErr) {
				t.Fatalf("typed path: %v\nplain path: %v", typedErr, plainErr)
			}
			if !reflect.DeepEqual(typedGot, plainGot) {
				a, _ := json.Marshal(typedGot)
				b, _ := json.Marshal(plainGot)
				t.Errorf("typed path stored\n%s\nplain path stored\n%s", a, b)
			}
		})
	}
}

// masked is a stored object with what differs between two servers (uid, times, revision)
// replaced by a placeholder where it is set.
func masked(obj map[string]any) map[string]any {
	mask := func(m map[string]any, keys ...string) {
		for _, k := range keys {
			if v, ok := m[k]; ok && v != nil {
				m[k] = "<set>"
			}
		}
	}
	meta := obj["metadata"].(map[string]any)
	mask(meta, "uid", "creationTimestamp", "resourceVersion")
	managed, _ := meta["managedFields"].([]any)
	for _, e := range managed {
		mask(e.(map[string]any), "time")
	}
	return obj
}
