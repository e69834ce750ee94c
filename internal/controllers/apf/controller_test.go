package apf

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCondition(t *testing.T) {
	for _, c := range []struct {
		pl     string
		exists bool
		want   danglingCondition
	}{
		{"workload-low", true, danglingCondition{"Dangling", "False", "Found", `This FlowSchema references the PriorityLevelConfiguration object named "workload-low" and it exists`}},
		{"gone", false, danglingCondition{"Dangling", "True", "NotFound", `This FlowSchema references the PriorityLevelConfiguration object named "gone" but there is no such object`}},
	} {
		if got := condition(c.pl, c.exists); got != c.want {
			t.Errorf("%s: %+v", c.pl, got)
		}
	}
	fs := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Other", "status": "True"},
		map[string]any{"type": "Dangling", "status": "False", "reason": "Found", "message": "m"},
	}}}}
	if got := current(fs); got != (danglingCondition{"Dangling", "False", "Found", "m"}) {
		t.Errorf("current: %+v", got)
	}
}
