package kube

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The testdata/kube-* files are kube-apiserver 1.37's answers to the same requests
// (`kubectl create --dry-run=server -o json` against ../shared/reference/kube-reference).

func deployments(t *testing.T) *Type {
	t.Helper()
	for _, ty := range Types() {
		if ty.Resource.Resource == "deployments" {
			return &ty
		}
	}
	t.Fatal("no deployments")
	return nil
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// masked decodes a JSON object without what differs from one server or run to the next.
func masked(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				switch k {
				case "uid", "creationTimestamp", "resourceVersion":
					v[k] = "MASKED"
				case "managedFields": // lapis's field manager records these, not this package
					delete(v, k)
				default:
					walk(child)
				}
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(m)
	return m
}

func TestCreateAsKube(t *testing.T) {
	p, d := NewPipeline(), deployments(t)
	ctx := context.Background()

	t.Run("the seed's Deployment, defaulted", func(t *testing.T) {
		res, err := p.Create(ctx, d, "default", testdata(t, "deployment.json"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := masked(t, res.Served), masked(t, testdata(t, "kube-deployment.json")); !reflect.DeepEqual(got, want) {
			t.Errorf("served:\n%s\nkube:\n%s", res.Served, testdata(t, "kube-deployment.json"))
		}
		if len(res.Warnings) != 0 {
			t.Errorf("warnings %q", res.Warnings)
		}
	})

	t.Run("warnings", func(t *testing.T) {
		res, err := p.Create(ctx, d, "default", testdata(t, "deployment-warn.json"))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, line := range strings.Split(strings.TrimSpace(string(testdata(t, "kube-deployment-warn.txt"))), "\n") {
			want = append(want, strings.TrimPrefix(line, "Warning: "))
		}
		if !reflect.DeepEqual(res.Warnings, want) {
			t.Errorf("warnings %q, kube's %q", res.Warnings, want)
		}
	})

	t.Run("Recreate with rollingUpdate is invalid", func(t *testing.T) {
		_, err := p.Create(ctx, d, "default", testdata(t, "deployment-recreate-invalid.json"))
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
			t.Fatalf("got %v", err)
		}
		var kube metav1.Status
		if err := json.Unmarshal(testdata(t, "kube-deployment-recreate-invalid.json"), &kube); err != nil {
			t.Fatal(err)
		}
		got := status.Status()
		got.TypeMeta = kube.TypeMeta
		if !reflect.DeepEqual(got, kube) {
			t.Errorf("status %+v\nkube's %+v", got, kube)
		}
	})
}

func TestUpdateKeepsWhatTheStrategyKeeps(t *testing.T) {
	p, d := NewPipeline(), deployments(t)
	ctx := context.Background()
	created, err := p.Create(ctx, d, "default", testdata(t, "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	stored := withResourceVersion(t, created.Stored, "7")

	// Through the resource: spec changes bump the generation, status is ignored.
	body := strings.Replace(string(created.Served), `"replicas":1`, `"replicas":3`, 1)
	body = strings.Replace(body, `"status":{}`, `"status":{"replicas":9}`, 1)
	res, err := p.Update(ctx, d, "default", stored, []byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct{ Generation int64 }
		Spec     struct{ Replicas int }
		Status   struct{ Replicas int }
	}
	_ = json.Unmarshal(res.Served, &got)
	if got.Metadata.Generation != 2 || got.Spec.Replicas != 3 || got.Status.Replicas != 0 {
		t.Errorf("update: %+v", got)
	}

	// Through /status: only status changes.
	res, err = p.Update(ctx, d, "default", stored, []byte(body), true)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(res.Served, &got)
	if got.Metadata.Generation != 1 || got.Spec.Replicas != 1 || got.Status.Replicas != 9 {
		t.Errorf("status update: %+v", got)
	}
}

func withResourceVersion(t *testing.T, stored []byte, rv string) []byte {
	t.Helper()
	var m map[string]any
	_ = json.Unmarshal(stored, &m)
	m["metadata"].(map[string]any)["resourceVersion"] = rv
	b, _ := json.Marshal(m)
	return b
}

func TestTableAsKube(t *testing.T) {
	p, d := NewPipeline(), deployments(t)
	created, err := p.Create(context.Background(), d, "default", testdata(t, "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := p.Table(d, created.Stored)
	if err != nil {
		t.Fatal(err)
	}
	var kube metav1.Table
	if err := json.Unmarshal(testdata(t, "kube-table.json"), &kube); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(table.ColumnDefinitions, kube.ColumnDefinitions) {
		t.Errorf("columns %+v\nkube's %+v", table.ColumnDefinitions, kube.ColumnDefinitions)
	}
	if len(table.Rows) != 1 || len(kube.Rows) != 1 {
		t.Fatalf("rows: %d, kube's %d", len(table.Rows), len(kube.Rows))
	}
	got, _ := json.Marshal(table.Rows[0].Cells)
	want, _ := json.Marshal(kube.Rows[0].Cells)
	// The age column (index 4) depends on when each was made.
	var g, w []any
	_ = json.Unmarshal(got, &g)
	_ = json.Unmarshal(want, &w)
	g[4], w[4] = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("cells %s, kube's %s", got, want)
	}
}

func TestFieldSelectors(t *testing.T) {
	p, d := NewPipeline(), deployments(t)
	created, err := p.Create(context.Background(), d, "default", testdata(t, "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := p.Fields(d, created.Stored)
	if err != nil || set["metadata.name"] != "nginx-deployment" || set["metadata.namespace"] != "default" {
		t.Errorf("fields %v, %v", set, err)
	}
	if _, _, err := FieldLabel(d, "metadata.name", "x"); err != nil {
		t.Errorf("metadata.name: %v", err)
	}
	if _, _, err := FieldLabel(d, "spec.replicas", "1"); err == nil {
		t.Errorf("spec.replicas accepted as a field selector; kube refuses it")
	}
}
