package bootstrap

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	schedulingv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

func newService(t *testing.T) *objects.Service {
	svc, _ := objectstest.NewService(t)
	return svc
}

// names lists the objects of gvr with their resourceVersions.
func names(t *testing.T, svc *objects.Service, gvr schema.GroupVersionResource) map[string]string {
	t.Helper()
	r, ok := svc.Catalog().Lookup(gvr)
	if !ok {
		t.Fatalf("%v not served", gvr)
	}
	items, _, err := svc.List(context.Background(), r, "", objects.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, item := range items {
		out[item.GetName()] = item.GetResourceVersion()
	}
	return out
}

func TestEnsureNamespacesIdempotent(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	if err := EnsureNamespaces(ctx, svc); err != nil {
		t.Fatal(err)
	}
	first := names(t, svc, catalog.NamespacesGVR)
	for _, name := range systemNamespaces {
		if _, ok := first[name]; !ok {
			t.Errorf("namespace %s missing: %v", name, first)
		}
	}
	if len(first) != len(systemNamespaces) {
		t.Errorf("namespaces %v, want %v", first, systemNamespaces)
	}
	// kube-apiserver's writes, under its field manager.
	r, _ := svc.Catalog().Lookup(catalog.NamespacesGVR)
	for _, name := range systemNamespaces {
		ns, err := svc.Get(ctx, r, "", name)
		if err != nil {
			t.Fatal(err)
		}
		if mf := ns.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "kube-apiserver" {
			t.Errorf("namespace %s managed by %v, want kube-apiserver alone", name, mf)
		}
	}
	// A restart writes nothing.
	if err := EnsureNamespaces(ctx, svc); err != nil {
		t.Fatal(err)
	}
	for name, rv := range names(t, svc, catalog.NamespacesGVR) {
		if first[name] != rv {
			t.Errorf("namespace %s rewritten: resourceVersion %s, then %s", name, first[name], rv)
		}
	}
}

func TestEnsureDefaults(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	EnsureDefaults(ctx, svc, log)
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		want []string
	}{
		{priorityClasses, func() (n []string) {
			for _, pc := range schedulingv1.SystemPriorityClasses() {
				n = append(n, pc.Name)
			}
			return n
		}()},
		{catalog.PriorityLevelConfigurationsGVR, func() (n []string) {
			for _, pl := range append(apfbootstrap.MandatoryPriorityLevelConfigurations, apfbootstrap.SuggestedPriorityLevelConfigurations...) {
				n = append(n, pl.Name)
			}
			return n
		}()},
		{catalog.FlowSchemasGVR, func() (n []string) {
			for _, fs := range append(apfbootstrap.MandatoryFlowSchemas, apfbootstrap.SuggestedFlowSchemas...) {
				n = append(n, fs.Name)
			}
			return n
		}()},
	} {
		got := names(t, svc, tc.gvr)
		for _, name := range tc.want {
			if _, ok := got[name]; !ok {
				t.Errorf("%s %s missing", tc.gvr.Resource, name)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d objects, want %d", tc.gvr.Resource, len(got), len(tc.want))
		}
	}
}
