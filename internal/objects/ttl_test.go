package objects

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/storage"
)

// TestTTL: the writes kube's registry store makes of a resource with a TTL (Events, of both
// groups) attach the object to an etcd lease of that TTL; other resources' objects, and the
// writes kube makes without its TTLFunc (a direct update, a delete marking a finalized object),
// are stored without one.
func TestTTL(t *testing.T) {
	ctx := context.Background()
	b, err := storage.OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{EventTTL: time.Hour})...)
	s := NewService(storage.NewStore(b.Client), NewKeys("/ttl"), cat)
	namespaces, coreEvents := s.mustResource(t, "", "v1", "namespaces"), s.mustResource(t, "", "v1", "events")
	events, configMaps := s.mustResource(t, "events.k8s.io", "v1", "events"), s.mustResource(t, "", "v1", "configmaps")
	if _, err := s.Create(ctx, namespaces, "", object("v1", "Namespace", "", "default", nil), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	leaseTTL := func(key string) int64 {
		t.Helper()
		resp, err := b.Client.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v", key, err)
		}
		if resp.Kvs[0].Lease == 0 {
			return 0
		}
		ttl, err := b.Client.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
		if err != nil {
			t.Fatal(err)
		}
		return ttl.GrantedTTL
	}
	relabel := func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetLabels(map[string]string{"seen": time.Now().Format("150405.000000000")})
		return cur, nil
	}
	hold := func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers([]string{"example.com/hold"})
		return cur, nil
	}
	const hourAndWindow = 3600 + 60 // kube's lease: the TTL and its reuse window
	tests := []struct {
		name  string
		write func() error
		key   string
		want  int64
	}{
		{"core event created", func() error {
			_, err := s.Create(ctx, coreEvents, "default", coreEvent("e1"), WriteOptions{})
			return err
		}, "/ttl/events/default/e1", hourAndWindow},
		{"events.k8s.io event created", func() error {
			_, err := s.Create(ctx, events, "default", eventsEvent("e2"), WriteOptions{})
			return err
		}, "/ttl/events/default/e2", hourAndWindow},
		{"configmap created", func() error {
			_, err := s.Create(ctx, configMaps, "default", configMap("c", nil), WriteOptions{})
			return err
		}, "/ttl/configmaps/default/c", 0},
		{"event updated directly", func() error {
			_, err := s.UpdateDirect(ctx, coreEvents, "default", "e1", relabel, WriteOptions{})
			return err
		}, "/ttl/events/default/e1", 0},
		{"event updated", func() error {
			_, err := s.Update(ctx, coreEvents, "default", "e1", relabel, WriteOptions{})
			return err
		}, "/ttl/events/default/e1", hourAndWindow},
		{"event given a finalizer", func() error {
			_, err := s.Update(ctx, events, "default", "e2", hold, WriteOptions{})
			return err
		}, "/ttl/events/default/e2", hourAndWindow},
		{"finalized event deleted", func() error {
			_, err := s.Delete(ctx, events, "default", "e2", DeleteOptions{})
			return err
		}, "/ttl/events/default/e2", 0},
	}
	for _, tt := range tests {
		if err := tt.write(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := leaseTTL(tt.key); got != tt.want {
			t.Errorf("%s: %s has a lease of %ds, want %ds", tt.name, tt.key, got, tt.want)
		}
	}
}

func coreEvent(name string) *unstructured.Unstructured {
	return object("v1", "Event", "default", name, map[string]any{
		"involvedObject": map[string]any{"kind": "Pod", "name": "p", "namespace": "default"},
		"reason":         "Tested", "message": "m", "type": "Normal",
		"firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
		"source": map[string]any{"component": "test"},
	})
}

func eventsEvent(name string) *unstructured.Unstructured {
	return object("events.k8s.io/v1", "Event", "default", name, map[string]any{
		"eventTime":           "2026-01-01T00:00:00.000000Z",
		"reportingController": "example.com/test", "reportingInstance": "test-1",
		"action": "Testing", "reason": "Tested", "type": "Normal", "note": "n",
		"regarding": map[string]any{"kind": "Pod", "name": "p", "namespace": "default"},
	})
}
