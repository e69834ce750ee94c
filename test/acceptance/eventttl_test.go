package acceptance

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaseTTL is the granted TTL of the etcd lease key is attached to (0: none).
func leaseTTL(t *testing.T, c *clientv3.Client, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("no etcd key %s", key)
	}
	if resp.Kvs[0].Lease == 0 {
		return 0
	}
	ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	return ttl.GrantedTTL
}

const ttlCoreEvent = `apiVersion: v1
kind: Event
metadata: {name: core-ev, namespace: ttl}
involvedObject: {kind: ConfigMap, name: stays, namespace: ttl}
reason: Tested
message: kept for --event-ttl
type: Normal
source: {component: acceptance}
`

const ttlEventsEvent = `apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: new-ev, namespace: ttl}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/acceptance
reportingInstance: acceptance-1
action: Testing
reason: Tested
type: Normal
note: kept for --event-ttl
regarding: {kind: ConfigMap, name: stays, namespace: ttl}
`

// TestEventTTL: with --event-ttl, Events of both groups are stored with an etcd lease of that
// TTL, as kube-apiserver stores them, and go when it ends: GET and lists no longer find them,
// and watches see them DELETED. Other objects have no lease.
func TestEventTTL(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	// The embedded etcd's shortest lease is a second; under 20s kube's leases are not shared.
	l := startLapis(t, "--embedded-etcd-listen", endpoint, "--event-ttl=2s")
	l.must(t, "create", "ns", "ttl")
	l.must(t, "create", "configmap", "stays", "-n", "ttl", "--from-literal=a=b")
	_, events := l.watch(t, "/api/v1/namespaces/ttl/events?watch=true")
	l.mustIn(t, ttlCoreEvent, "create", "-f", "-")
	l.mustIn(t, ttlEventsEvent, "create", "-f", "-")

	c := l.etcdClient(t, endpoint)
	for key, want := range map[string]int64{
		"/registry/events/ttl/core-ev":   2,
		"/registry/events/ttl/new-ev":    2,
		"/registry/configmaps/ttl/stays": 0,
		"/registry/namespaces/ttl":       0,
	} {
		if got := leaseTTL(t, c, key); got != want {
			t.Errorf("%s: a lease of %ds, want %ds", key, got, want)
		}
	}

	// Both events are ADDED, then DELETED when their lease ends, as kube's watch reports it.
	got := map[string]bool{}
	for _, e := range nextEvents(t, events, 4) {
		got[e.Type+" "+e.meta(t).Name] = true
	}
	for _, want := range []string{"ADDED core-ev", "ADDED new-ev", "DELETED core-ev", "DELETED new-ev"} {
		if !got[want] {
			t.Errorf("watch events %v lack %s", got, want)
		}
	}
	wantEqual(t, "GET after the TTL", l.fails(t, "", "get", "event", "core-ev", "-n", "ttl"),
		`Error from server (NotFound): events "core-ev" not found`)
	wantEqual(t, "core events after the TTL", l.must(t, "get", "events", "-n", "ttl", "-o", "name"), "")
	wantEqual(t, "events.k8s.io events after the TTL", l.must(t, "get", "events.v1.events.k8s.io", "-n", "ttl", "-o", "name"), "")
	wantEqual(t, "configmap after the TTL", l.must(t, "get", "configmap", "stays", "-n", "ttl", "-o", "name"), "configmap/stays")
}
