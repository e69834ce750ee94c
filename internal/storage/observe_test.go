package storage

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

// Each Store call is reported once, named as kube-apiserver's etcd metrics name it.
func TestObserveRequests(t *testing.T) {
	ctx := context.Background()
	b, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	type call struct {
		operation, key string
		failed         bool
	}
	var mu sync.Mutex
	var calls []call
	b.ObserveRequests(func(operation, key string, start time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(start) < 0 || time.Since(start) > time.Minute {
			t.Errorf("%s %s: started at %v", operation, key, start)
		}
		calls = append(calls, call{operation, key, err != nil})
	})
	s := b.Store(nil)
	key := "/registry/configmaps/ns/a"
	rev, err := s.Create(ctx, key, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, key, []byte("{}")); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, _, err := s.Update(ctx, key, []byte(`{"a":1}`), rev); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, key, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "/registry/configmaps/", ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revision(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, key, 0); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _, _ = s.Get(cancelled, key, 0)
	want := []call{
		{"create", key, false}, {"create", key, false}, {"update", key, false}, {"get", key, false},
		{"list", "/registry/configmaps/", false}, {"getCurrentResourceVersion", revisionProbeKey, false},
		{"delete", key, false}, {"get", key, true},
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("observed\n%v\nwant\n%v", calls, want)
	}
}

func TestDBSize(t *testing.T) {
	ctx := context.Background()
	embedded, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer embedded.Close()
	external, err := OpenExternal(ctx, []string{startSeparateEtcd(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer external.Close()
	for name, b := range map[string]*Backend{"embedded": embedded, "external": external} {
		if n, err := b.DBSize(ctx); err != nil || n <= 0 {
			t.Errorf("%s: %d bytes, %v", name, n, err)
		}
	}
}
