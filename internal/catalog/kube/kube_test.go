package kube

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// The testdata/kube-* files are kube-apiserver 1.37's answers to the same requests
// (`kubectl create --dry-run=server -o json` against ../shared/reference/kube-reference).

func deployments(t *testing.T) *catalog.Resource {
	return resourceNamed(t, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
}

func resourceNamed(t *testing.T, gvr schema.GroupVersionResource) *catalog.Resource {
	t.Helper()
	rs, err := Resources(Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.GroupVersionResource() == gvr {
			return r
		}
	}
	t.Fatalf("no %v", gvr)
	return nil
}

// written is what a write through the objects pipeline answers.
type written struct {
	Served   []byte
	Warnings []string
}

// create runs the pipeline's create steps on a JSON body: normalize, default, system fields,
// kube's BeforeCreate.
func create(t *testing.T, r *catalog.Resource, namespace string, body []byte) (*unstructured.Unstructured, written, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(body, &u.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Behavior.Normalize(u); err != nil {
		t.Fatal(err)
	}
	r.Behavior.Default(u)
	u.SetNamespace(namespace)
	u.SetUID(uuid.NewUUID())
	u.SetCreationTimestamp(metav1.Now())
	w, err := r.Behavior.BeforeCreate(context.Background(), u)
	served, _ := u.MarshalJSON()
	return u, written{Served: served, Warnings: w}, err
}

// update runs the pipeline's update steps of body over old, through subresource.
func update(t *testing.T, r *catalog.Resource, old *unstructured.Unstructured, body []byte, subresource string) (written, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(body, &u.Object); err != nil {
		t.Fatal(err)
	}
	r.Behavior.Default(u)
	if subresource == "status" { // the pipeline's: the stored object with the new status
		next := old.DeepCopy()
		next.Object["status"] = u.Object["status"]
		u = next
	}
	w, err := r.Behavior.BeforeUpdate(context.Background(), u, old, subresource)
	served, _ := u.MarshalJSON()
	return written{Served: served, Warnings: w}, err
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
	d := deployments(t)

	t.Run("the seed's Deployment, defaulted", func(t *testing.T) {
		_, res, err := create(t, d, "default", testdata(t, "deployment.json"))
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
		_, res, err := create(t, d, "default", testdata(t, "deployment-warn.json"))
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
		_, _, err := create(t, d, "default", testdata(t, "deployment-recreate-invalid.json"))
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
	d := deployments(t)
	old, created, err := create(t, d, "default", testdata(t, "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	old.SetResourceVersion("7")

	// Through the resource: spec changes bump the generation, status is ignored.
	body := strings.Replace(string(created.Served), `"replicas":1`, `"replicas":3`, 1)
	body = strings.Replace(body, `"status":{}`, `"status":{"replicas":9}`, 1)
	body = strings.Replace(body, `"namespace":"default"`, `"namespace":"default","resourceVersion":"7"`, 1)
	res, err := update(t, d, old, []byte(body), "")
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
	res, err = update(t, d, old, []byte(body), "status")
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Replicas = 0
	_ = json.Unmarshal(res.Served, &got)
	if got.Metadata.Generation != 1 || got.Spec.Replicas != 1 || got.Status.Replicas != 9 {
		t.Errorf("status update: %+v", got)
	}
}

func TestTableAsKube(t *testing.T) {
	d := deployments(t)
	u, _, err := create(t, d, "default", testdata(t, "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := d.Printer.Cells(u)
	if err != nil {
		t.Fatal(err)
	}
	var kube metav1.Table
	if err := json.Unmarshal(testdata(t, "kube-table.json"), &kube); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Printer.Columns, kube.ColumnDefinitions) {
		t.Errorf("columns %+v\nkube's %+v", d.Printer.Columns, kube.ColumnDefinitions)
	}
	if len(kube.Rows) != 1 {
		t.Fatalf("kube's rows: %d", len(kube.Rows))
	}
	got, _ := json.Marshal(cells)
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
	d := deployments(t)
	u, _, err := create(t, d, "default", testdata(t, "deployment.json"))
	if err != nil {
		t.Fatal(err)
	}
	if set := d.Behavior.SelectableFields(u); len(set) != 0 {
		t.Errorf("deployments select on metadata only in kube; fields %v", set)
	}
	pods := resourceNamed(t, schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	pod, _, err := create(t, pods, "default", []byte(`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}],"nodeName":"n1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if set := pods.Behavior.SelectableFields(pod); set["spec.nodeName"] != "n1" || set["status.phase"] != "Pending" || set["spec.restartPolicy"] != "Always" {
		t.Errorf("pod fields %v", set)
	}
	if _, _, err := d.FieldLabel("metadata.name", "x"); err != nil {
		t.Errorf("metadata.name: %v", err)
	}
	if _, _, err := d.FieldLabel("spec.replicas", "1"); err == nil {
		t.Errorf("spec.replicas accepted as a field selector; kube refuses it")
	}
}

// What kube's REST storage decides about deletes, per resource.
func TestDeleteBehaviour(t *testing.T) {
	for _, c := range []struct {
		gvr                   schema.GroupVersionResource
		returnsObject, orphan bool
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true, false},
		{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, true, false},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, false, false},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, false, false},
		{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, false, true},
		{schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}, true, false},
	} {
		r := resourceNamed(t, c.gvr)
		if r.ReturnDeletedObject != c.returnsObject || r.OrphanByDefault != c.orphan || (r.DeleteWarning != "") != c.orphan {
			t.Errorf("%v: returns the object %v, orphans %v, warning %q", c.gvr, r.ReturnDeletedObject, r.OrphanByDefault, r.DeleteWarning)
		}
	}
}

// TestEventTTL: --event-ttl is the TTL of Events of both groups, as kube's event REST storage
// gives it to both, and of nothing else.
func TestEventTTL(t *testing.T) {
	rs, err := Resources(Deps{EventTTL: 2 * time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leased := map[schema.GroupResource]bool{}
	for _, r := range rs {
		if r.TTL != 0 {
			leased[r.GroupVersionResource().GroupResource()] = r.TTL == 2*time.Hour
		}
	}
	want := map[schema.GroupResource]bool{{Resource: "events"}: true, {Group: "events.k8s.io", Resource: "events"}: true}
	if !reflect.DeepEqual(leased, want) {
		t.Errorf("resources with a TTL (true: --event-ttl's): %v, want %v", leased, want)
	}
}

func TestDeprecationWarnings(t *testing.T) {
	endpoints := resourceNamed(t, schema.GroupVersionResource{Version: "v1", Resource: "endpoints"})
	if want := "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"; endpoints.DeprecationWarning != want {
		t.Errorf("endpoints: %q, kube's %q", endpoints.DeprecationWarning, want)
	}
	if pods := resourceNamed(t, schema.GroupVersionResource{Version: "v1", Resource: "pods"}); pods.DeprecationWarning != "" {
		t.Errorf("pods: %q", pods.DeprecationWarning)
	}
}

// TestEquivalentResources: admission sees the versions of a resource, and resources stored
// together, as one resource (kube's EquivalentResourceRegistry), so that webhooks and policies
// with matchPolicy Equivalent are called for writes through any of them.
func TestEquivalentResources(t *testing.T) {
	rs, err := Resources(Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	byGVR := map[schema.GroupVersionResource]*catalog.Resource{}
	for _, r := range rs {
		byGVR[r.GroupVersionResource()] = r
	}
	mapper := func(gvr schema.GroupVersionResource) runtime.EquivalentResourceMapper {
		r, ok := byGVR[gvr]
		if !ok {
			t.Fatalf("%v not served", gvr)
		}
		return r.Behavior.(*behavior).admission().Objects.GetEquivalentResourceMapper()
	}
	for _, c := range []struct {
		gvr, equivalent schema.GroupVersionResource
	}{
		{schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
			schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}},
		{schema.GroupVersionResource{Version: "v1", Resource: "events"},
			schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}},
	} {
		if got := mapper(c.gvr).EquivalentResourcesFor(c.gvr, ""); !slices.Contains(got, c.equivalent) {
			t.Errorf("equivalents of %v: %v, want %v among them", c.gvr, got, c.equivalent)
		}
	}
	scale := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if got := mapper(scale).KindFor(scale, "scale"); got != (schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}) {
		t.Errorf("deployments/scale kind: %v", got)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if got := mapper(cms).EquivalentResourcesFor(cms, ""); len(got) != 1 {
		t.Errorf("configmaps' equivalents: %v, want itself only", got)
	}
}

// TestCreateOnUpdate: an update creates what it does not find where kube's strategy allows it.
func TestCreateOnUpdate(t *testing.T) {
	for _, c := range []struct {
		gvr    schema.GroupVersionResource
		create bool
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "events"}, true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, true},
		{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, false},
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, false},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, false},
	} {
		if r := resourceNamed(t, c.gvr); r.CreateOnUpdate != c.create {
			t.Errorf("%v: creates on update %v, kube %v", c.gvr, r.CreateOnUpdate, c.create)
		}
	}
}
