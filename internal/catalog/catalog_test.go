package catalog

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func res(group, version, name string) *Resource {
	return &Resource{GroupVersion: schema.GroupVersion{Group: group, Version: version}, Name: name}
}

func TestCatalog(t *testing.T) {
	c := New()
	changes := c.Changes()
	configmaps := res("", "v1", "configmaps")
	c.AddBuiltin(configmaps, res("coordination.k8s.io", "v1", "leases"))
	c.SetCustom("widgets.b.com", []*Resource{res("b.com", "v1", "widgets")})
	c.SetCustom("gadgets.a.com", []*Resource{res("a.com", "v2", "gadgets"), res("a.com", "v1", "gadgets")})
	select {
	case <-changes:
	default:
		t.Fatal("no change notification")
	}
	var order []string
	for _, r := range c.All() {
		order = append(order, r.GroupVersionResource().String())
	}
	want := "[/v1, Resource=configmaps coordination.k8s.io/v1, Resource=leases a.com/v1, Resource=gadgets a.com/v2, Resource=gadgets b.com/v1, Resource=widgets]"
	if got := "[" + join(order) + "]"; got != want {
		t.Errorf("order %s\nwant  %s", got, want)
	}
	// A custom resource (one with a CRD) at a built-in's place is neither served nor listed.
	impostor := res("", "v1", "configmaps")
	impostor.CRD = &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"}}
	served := len(c.All())
	c.SetCustom("configmaps", []*Resource{impostor})
	if r, _ := c.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}); r != configmaps {
		t.Errorf("configmaps served by a custom resource (%v), want the built-in", r != nil && r.CRD != nil)
	}
	for _, r := range c.All() {
		if r == impostor {
			t.Error("the custom resource at a built-in's place is listed")
		}
	}
	if got := len(c.All()); got != served {
		t.Errorf("%d resources listed, want %d", got, served)
	}
	rev := c.Revision()
	c.SetCustom("widgets.b.com", nil)
	if _, ok := c.Lookup(schema.GroupVersionResource{Group: "b.com", Version: "v1", Resource: "widgets"}); ok || c.Revision() == rev {
		t.Error("removed resource still served, or revision unchanged")
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestTypedNormalize(t *testing.T) {
	b := Typed[corev1.ConfigMap, *corev1.ConfigMap]{}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x"}, "data": map[string]any{"a": "b"}, "bogus": true}}
	unknown, err := b.Normalize(u)
	if err != nil || len(unknown) != 1 || unknown[0] != `unknown field "bogus"` {
		t.Fatalf("unknown %v, err %v", unknown, err)
	}
	if _, kept := u.Object["bogus"]; kept {
		t.Error("unknown field kept")
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": "nope"}}
	if _, err := b.Normalize(bad); err == nil {
		t.Error("a wrong type was accepted")
	}
}
