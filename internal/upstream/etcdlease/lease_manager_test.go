package etcdlease

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// granter is an etcd Lease API that grants numbered leases and records their TTLs.
type granter struct {
	clientv3.Lease // nil: only Grant is called
	ttls           []int64
}

func (g *granter) Grant(_ context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	g.ttls = append(g.ttls, ttl)
	return &clientv3.LeaseGrantResponse{ID: clientv3.LeaseID(len(g.ttls)), TTL: ttl}, nil
}

// TestGetLease: writes within a lease's reuse window share it; past the window, with another
// TTL or past the object limit a new lease is granted, with the window's extra TTL.
func TestGetLease(t *testing.T) {
	type step struct {
		after  time.Duration // since the first call
		ttl    int64
		lease  clientv3.LeaseID
		grants []int64 // every TTL granted so far
	}
	tests := []struct {
		name       string
		maxObjects int64
		steps      []step
	}{{
		// kube's default --event-ttl: a window of 60s (5% of 3600s is 180s, capped at 60s).
		name: "an hour", maxObjects: 1000,
		steps: []step{
			{0, 3600, 1, []int64{3660}},
			{time.Second, 3600, 1, []int64{3660}},
			{59 * time.Second, 3600, 1, []int64{3660}},
			{61 * time.Second, 3600, 2, []int64{3660, 3660}},
			{62 * time.Second, 3600, 2, []int64{3660, 3660}},
		},
	}, {
		// 5% of 100s: reused for 5s.
		name: "a short TTL", maxObjects: 1000,
		steps: []step{
			{0, 100, 1, []int64{105}},
			{4 * time.Second, 100, 1, []int64{105}},
			{6 * time.Second, 100, 2, []int64{105, 105}},
		},
	}, {
		// Reuse needs the lease to outlive the write by more than the TTL: not at its grant.
		name: "the same instant", maxObjects: 1000,
		steps: []step{
			{0, 3600, 1, []int64{3660}},
			{0, 3600, 2, []int64{3660, 3660}},
		},
	}, {
		// Under 20s the window is 0: every write gets its own lease.
		name: "under twenty seconds", maxObjects: 1000,
		steps: []step{
			{0, 5, 1, []int64{5}},
			{time.Second, 5, 2, []int64{5, 5}},
		},
	}, {
		name: "another TTL", maxObjects: 1000,
		steps: []step{
			{0, 3600, 1, []int64{3660}},
			{time.Second, 60, 2, []int64{3660, 63}},
		},
	}, {
		name: "object limit", maxObjects: 2,
		steps: []step{
			{0, 3600, 1, []int64{3660}},
			{time.Second, 3600, 1, []int64{3660}},
			{2 * time.Second, 3600, 2, []int64{3660, 3660}},
			{3 * time.Second, 3600, 2, []int64{3660, 3660}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &granter{}
			start := time.Now()
			var now time.Time
			m := NewDefaultLeaseManager(g, LeaseManagerConfig{ReuseDurationSeconds: 60, MaxObjectCount: tt.maxObjects})
			m.clock = func() time.Time { return now }
			for i, s := range tt.steps {
				now = start.Add(s.after)
				lease, err := m.GetLease(context.Background(), s.ttl)
				if err != nil {
					t.Fatal(err)
				}
				if lease != s.lease || len(g.ttls) != len(s.grants) {
					t.Fatalf("step %d (%v, ttl %d): lease %d after grants %v, want %d after %v", i, s.after, s.ttl, lease, g.ttls, s.lease, s.grants)
				}
				for j := range s.grants {
					if g.ttls[j] != s.grants[j] {
						t.Errorf("step %d: granted TTLs %v, want %v", i, g.ttls, s.grants)
					}
				}
			}
		})
	}
}
