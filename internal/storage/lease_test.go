package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWriteWithTTL: a value written with a TTL is attached to a lease, shared by the writes of
// the reuse window; a write without one detaches it; etcd deletes the value when it ends, and
// a watch sees the deletion.
func TestWriteWithTTL(t *testing.T) {
	ctx := context.Background()
	b, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s := NewStore(b.Client)
	leaseOf := func(key string) clientv3.LeaseID {
		t.Helper()
		resp, err := b.Client.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v", key, err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}

	for _, k := range []string{"/ev/a", "/ev/b"} {
		if _, err := s.Create(ctx, k, []byte("v"), WithTTL(3600)); err != nil {
			t.Fatal(err)
		}
	}
	a, bLease := leaseOf("/ev/a"), leaseOf("/ev/b")
	if a == 0 || a != bLease {
		t.Errorf("leases %x and %x, want one lease shared within the reuse window", a, bLease)
	}
	if ttl, err := b.Client.TimeToLive(ctx, a); err != nil || ttl.GrantedTTL != 3660 {
		t.Errorf("lease TTL %+v (%v), want 3600s and kube's window of 60s", ttl, err)
	}
	if _, err := s.Create(ctx, "/plain", []byte("v"), WithTTL(0)); err != nil {
		t.Fatal(err)
	}
	if l := leaseOf("/plain"); l != 0 {
		t.Errorf("value written without a TTL has lease %x", l)
	}
	kv, _, _ := s.Get(ctx, "/ev/a", 0)
	if _, _, err := s.Update(ctx, "/ev/a", []byte("w"), kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if l := leaseOf("/ev/a"); l != 0 {
		t.Errorf("update without a TTL kept lease %x", l)
	}

	// The embedded etcd's shortest lease is a second.
	rev, err := s.Create(ctx, "/ev/short", []byte("v"), WithTTL(1))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	batches, errc := s.Watch(wctx, "/ev/short", rev)
	for deleted := false; !deleted; {
		select {
		case batch := <-batches:
			for _, e := range batch.Events {
				deleted = deleted || (e.Type == Deleted && e.KV.Key == "/ev/short")
			}
		case err := <-errc:
			t.Fatal(err)
		case <-wctx.Done():
			t.Fatal("the value outlived its TTL")
		}
	}
	if _, _, err := s.Get(ctx, "/ev/short", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("after its TTL: %v, want ErrNotFound", err)
	}
	if _, _, err := s.Get(ctx, "/ev/b", 0); err != nil {
		t.Errorf("a value of a longer TTL: %v", err)
	}
}
