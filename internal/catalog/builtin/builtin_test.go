package builtin

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
)

func resource(t *testing.T, group, version, name string) *catalog.Resource {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: name}
	for _, r := range Resources(kube.Deps{}) {
		if r.GroupVersionResource() == gvr {
			return r
		}
	}
	t.Fatalf("no resource %v", gvr)
	return nil
}

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatalf("bad test object %s: %v", s, err)
	}
	return u
}

// create runs what the pipeline runs on a create; it returns BeforeCreate's error.
func create(t *testing.T, r *catalog.Resource, u *unstructured.Unstructured) error {
	t.Helper()
	if unknown, err := r.Behavior.Normalize(u); err != nil || len(unknown) > 0 {
		t.Fatalf("normalize: unknown %v, err %v", unknown, err)
	}
	r.Behavior.Default(u)
	u.SetUID(uuid.NewUUID())
	u.SetCreationTimestamp(u.GetCreationTimestamp())
	_, err := r.Behavior.BeforeCreate(context.Background(), u)
	return err
}

func TestResources(t *testing.T) {
	byGVR := map[schema.GroupVersionResource]*catalog.Resource{}
	all := Resources(kube.Deps{})
	for _, r := range all {
		byGVR[r.GroupVersionResource()] = r
		if (r.Behavior == nil) != r.Virtual || r.ListKind != r.Kind+"List" || r.Singular != strings.ToLower(r.Kind) {
			t.Errorf("%s: incomplete description %+v", r.Name, r)
		}
	}
	// Every resource and version kube-apiserver 1.37's discovery lists (autoscaling v1 and v2).
	if len(all) != 72 || len(byGVR) != len(all) {
		t.Errorf("%d resources (%d distinct), kube serves 72", len(all), len(byGVR))
	}
	crd := byGVR[schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}]
	if crd == nil || crd.Namespaced || !crd.HasStatus || !reflect.DeepEqual(crd.ShortNames, []string{"crd", "crds"}) ||
		!reflect.DeepEqual(crd.Categories, []string{"api-extensions"}) {
		t.Errorf("crd description: %+v", crd)
	}
	// A few of kube's: versions, storage, scale, categories.
	for _, want := range []struct {
		gvr     schema.GroupVersionResource
		storage schema.GroupResource
		scale   bool
	}{
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, schema.GroupResource{Resource: "replicationcontrollers"}, true},
		{schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}, schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, false},
		{schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}, schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, false},
		{schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, schema.GroupResource{Resource: "events"}, false},
	} {
		r := byGVR[want.gvr]
		if r == nil {
			t.Errorf("%v not served", want.gvr)
			continue
		}
		if r.StorageGroupResource != want.storage || (r.Scale != nil) != want.scale {
			t.Errorf("%v: stored as %v, scale %v", want.gvr, r.StorageGroupResource, r.Scale)
		}
	}
	if hpa := byGVR[schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}]; hpa != nil && hpa.Conversion == nil {
		t.Errorf("autoscaling/v1 HPAs are stored at v2: they need a conversion")
	}
}

const validCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{
   "type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","default":1}}}}}}}]}}`

func TestCRDName(t *testing.T) {
	crd := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	u := obj(t, strings.Replace(validCRD, `"name":"widgets.example.com"`, `"name":"gadgets.example.com"`, 1))
	want := `CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`
	if err := create(t, crd, u); err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// A CRD of a protected group needs kube's approval annotation.
func TestCRDProtectedGroup(t *testing.T) {
	crd := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	protected := strings.NewReplacer(`"name":"widgets.example.com"`, `"name":"widgets.x.k8s.io"`, `"group":"example.com"`, `"group":"x.k8s.io"`).Replace(validCRD)
	want := `CustomResourceDefinition.apiextensions.k8s.io "widgets.x.k8s.io" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111`
	if err := create(t, crd, obj(t, protected)); err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	approved := strings.Replace(protected, `"name":"widgets.x.k8s.io"`, `"name":"widgets.x.k8s.io","annotations":{"api-approved.kubernetes.io":"unapproved, testing"}`, 1)
	if err := create(t, crd, obj(t, approved)); err != nil {
		t.Errorf("with the annotation: %v", err)
	}
}

func TestCRDLifecycle(t *testing.T) {
	r := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	u := obj(t, validCRD)
	u.Object["status"] = map[string]any{"storedVersions": []any{"v0"}, "conditions": []any{map[string]any{"type": "Established", "status": "True"}}}
	if err := create(t, r, u); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions"); !reflect.DeepEqual(got, []string{"v1"}) {
		t.Errorf("storedVersions %v", got)
	}
	if _, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); found {
		t.Errorf("status not cleared: %v", u.Object["status"])
	}
	if u.GetGeneration() != 1 {
		t.Errorf("generation %d", u.GetGeneration())
	}

	upd := obj(t, validCRD)
	upd.Object["status"] = map[string]any{"storedVersions": []any{"v9"}}
	upd.SetUID(u.GetUID())
	u.SetResourceVersion("7")
	upd.SetResourceVersion("7")
	upd.SetGeneration(u.GetGeneration())
	r.Behavior.Default(upd)
	if _, err := r.Behavior.BeforeUpdate(context.Background(), upd, u, ""); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(upd.Object["status"], u.Object["status"]) {
		t.Errorf("update changed status: %v", upd.Object["status"])
	}
}
