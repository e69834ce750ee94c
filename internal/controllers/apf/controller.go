package apf

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// manager is the field manager kube-apiserver's config consumer applies status as.
const manager = "api-priority-and-fairness-config-consumer-v1"

// alwaysThere are the mandatory priority levels kube imagines when their objects are missing:
// a FlowSchema naming them never dangles.
var alwaysThere = map[string]bool{flowcontrolv1.PriorityLevelConfigurationNameExempt: true, flowcontrolv1.PriorityLevelConfigurationNameCatchAll: true}

// Run keeps every FlowSchema's Dangling condition until ctx ends.
func Run(ctx context.Context, svc *objects.Service, log *slog.Logger) {
	schemas, ok1 := svc.Catalog().Lookup(catalog.FlowSchemasGVR)
	levels, ok2 := svc.Catalog().Lookup(catalog.PriorityLevelConfigurationsGVR)
	if !ok1 || !ok2 {
		return
	}
	changed := make(chan struct{}, 1)
	poke := func(*unstructured.Unstructured, bool) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	go svc.Follow(ctx, schemas, poke)
	go svc.Follow(ctx, levels, poke)
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		if err := sync(ctx, svc, schemas, levels); err != nil && ctx.Err() == nil {
			log.Warn("FlowSchema status", "err", err)
			time.Sleep(time.Second)
			poke(nil, false)
		}
	}
}

// sync applies the Dangling condition of every FlowSchema whose condition is not as wanted.
func sync(ctx context.Context, svc *objects.Service, schemas, levels *catalog.Resource) error {
	pls, _, err := svc.List(ctx, levels, "", objects.ListOptions{})
	if err != nil {
		return err
	}
	found := map[string]bool{}
	for _, pl := range pls {
		found[pl.GetName()] = true
	}
	fss, _, err := svc.List(ctx, schemas, "", objects.ListOptions{})
	if err != nil {
		return err
	}
	for _, fs := range fss {
		pl, _, _ := unstructured.NestedString(fs.Object, "spec", "priorityLevelConfiguration", "name")
		want := condition(pl, found[pl] || alwaysThere[pl])
		if current(fs) == want {
			continue
		}
		config := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": catalog.FlowSchemasGVR.GroupVersion().String(), "kind": "FlowSchema",
			"metadata": map[string]any{"name": fs.GetName()},
			"status": map[string]any{"conditions": []any{map[string]any{
				"type": want.Type, "status": want.Status, "reason": want.Reason, "message": want.Message,
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}}},
		}}
		_, err := svc.Apply(ctx, schemas, "", fs.GetName(), config, objects.ApplyOptions{
			WriteOptions: objects.WriteOptions{Manager: manager, Subresource: "status"}, Force: true})
		if err != nil {
			return fmt.Errorf("FlowSchema %s: %w", fs.GetName(), err)
		}
	}
	return nil
}

// danglingCondition is the part of the condition that decides whether to write it.
type danglingCondition struct{ Type, Status, Reason, Message string }

// condition is kube's Dangling condition of a FlowSchema naming the priority level pl.
func condition(pl string, exists bool) danglingCondition {
	if exists {
		return danglingCondition{"Dangling", "False", "Found",
			fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", pl)}
	}
	return danglingCondition{"Dangling", "True", "NotFound",
		fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", pl)}
}

func current(fs *unstructured.Unstructured) danglingCondition {
	conditions, _, _ := unstructured.NestedSlice(fs.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == "Dangling" {
			s := func(k string) string { v, _ := m[k].(string); return v }
			return danglingCondition{"Dangling", s("status"), s("reason"), s("message")}
		}
	}
	return danglingCondition{}
}
