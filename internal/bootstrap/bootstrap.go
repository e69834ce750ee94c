package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	schedulingv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

var priorityClasses = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}

// systemNamespaces are the namespaces kube-apiserver keeps.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// Managers kube records for the objects its hooks create.
const (
	apiServerManager = "kube-apiserver"
	apfManager       = "api-priority-and-fairness-config-producer-v1"
)

// EnsureNamespaces creates the system namespaces that are missing; lapis needs them to serve.
// They are written together: etcd commits them in one batch, one disk sync, not four.
func EnsureNamespaces(ctx context.Context, svc *objects.Service) error {
	r, _ := svc.Catalog().Lookup(catalog.NamespacesGVR)
	errs := make([]error, len(systemNamespaces))
	var wg sync.WaitGroup
	for i, name := range systemNamespaces {
		wg.Go(func() { errs[i] = ensureNamespace(ctx, svc, r, name) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func ensureNamespace(ctx context.Context, svc *objects.Service, r *catalog.Resource, name string) error {
	if _, err := svc.Get(ctx, r, "", name); err == nil {
		return nil // a restart: no write, and field management is built at the first one
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	// kube-apiserver's own write, under its field manager (its system namespaces controller).
	if _, err := svc.Create(ctx, r, "", ns, objects.WriteOptions{Manager: apiServerManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// EnsureDefaults creates the system PriorityClasses and the APF configuration objects that are
// missing, as kube-apiserver's hooks do on every start. A failure is logged: lapis serves
// without them, as kube-apiserver retries its hooks.
func EnsureDefaults(ctx context.Context, svc *objects.Service, log *slog.Logger) {
	type object struct {
		gvr     schema.GroupVersionResource
		manager string
		obj     runtime.Object
	}
	var objs []object
	for _, pc := range schedulingv1.SystemPriorityClasses() {
		objs = append(objs, object{priorityClasses, apiServerManager, pc})
	}
	for _, pl := range append(apfbootstrap.MandatoryPriorityLevelConfigurations, apfbootstrap.SuggestedPriorityLevelConfigurations...) {
		objs = append(objs, object{catalog.PriorityLevelConfigurationsGVR, apfManager, pl.DeepCopy()})
	}
	for _, fs := range append(apfbootstrap.MandatoryFlowSchemas, apfbootstrap.SuggestedFlowSchemas...) {
		objs = append(objs, object{catalog.FlowSchemasGVR, apfManager, fs.DeepCopy()})
	}
	for _, o := range objs {
		r, ok := svc.Catalog().Lookup(o.gvr)
		if !ok {
			continue
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
		if err != nil {
			log.Error("bootstrap object", "resource", o.gvr.Resource, "err", err)
			continue
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(r.GroupVersionKind())
		if _, err := svc.Get(ctx, r, "", u.GetName()); err == nil {
			continue
		}
		if _, err := svc.Create(ctx, r, "", u, objects.WriteOptions{Manager: o.manager}); err != nil && !apierrors.IsAlreadyExists(err) {
			log.Error("creating a bootstrap object", "resource", o.gvr.Resource, "name", u.GetName(), "err", err)
		}
	}
}
