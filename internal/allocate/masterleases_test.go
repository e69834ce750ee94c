package allocate

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

// Master leases are kept as kube's lease reconciler keeps them: an Endpoints naming the IP, its
// generation bumped by each renewal, listed by IP, removed on leave.
func TestMasterLeases(t *testing.T) {
	svc, _ := objectstest.NewService(t)
	ctx := context.Background()
	m := masterLeases{store: svc.Store(), prefix: svc.Keys().Under("masterleases/")}
	for range 2 {
		if err := m.renew(ctx, "10.1.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.renew(ctx, "10.1.0.2"); err != nil {
		t.Fatal(err)
	}
	kv, _, err := svc.Store().Get(ctx, "/registry/masterleases/10.1.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(kv.Value, &e); err != nil {
		t.Fatal(err)
	}
	if g := e["metadata"].(map[string]any)["generation"]; g != float64(2) {
		t.Errorf("generation %v after two renewals, want 2: %s", g, kv.Value)
	}
	ips, err := m.ips(ctx)
	if err != nil || !slices.Equal(ips, []string{"10.1.0.1", "10.1.0.2"}) {
		t.Errorf("ips = %v, %v", ips, err)
	}
	if err := m.remove(ctx, "10.1.0.1"); err != nil {
		t.Fatal(err)
	}
	if ips, _ = m.ips(ctx); !slices.Equal(ips, []string{"10.1.0.2"}) {
		t.Errorf("after remove: %v", ips)
	}
}
