package namespacequeue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		failures   int // of each sync before it succeeds
		wantFailed int
	}{
		{"synced once", 0, 0},
		{"retried until synced", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var mu sync.Mutex
			calls, failed := 0, 0
			done := make(chan struct{})
			sync := func(_ context.Context, namespace string) error {
				mu.Lock()
				defer mu.Unlock()
				if namespace != "ns" {
					t.Errorf("synced %q, want ns", namespace)
				}
				calls++
				if calls <= tt.failures {
					return errors.New("not yet")
				}
				close(done)
				return nil
			}
			q := New("test")
			q.Add("ns")
			go q.Run(ctx, sync, func(string, error) { mu.Lock(); failed++; mu.Unlock() })
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("never synced")
			}
			mu.Lock()
			defer mu.Unlock()
			if failed != tt.wantFailed {
				t.Errorf("failed heard of %d failures, want %d", failed, tt.wantFailed)
			}
		})
	}
}
