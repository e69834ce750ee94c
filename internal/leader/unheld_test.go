package leader

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestLive(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration, seconds int32) *coordinationv1.Lease {
		renewed := metav1.NewMicroTime(now.Add(-renewedAgo))
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed, LeaseDurationSeconds: &seconds}}
	}
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"renewed within its duration", lease("kcm", 5*time.Second, 15), true},
		{"expired", lease("kcm", 16*time.Second, 15), false},
		{"released (no holder)", lease("", time.Second, 15), false},
		{"never renewed", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kcm")}}, false},
	} {
		if got := live(tc.lease, now); got != tc.want {
			t.Errorf("%s: live = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// lapis's controllers run while kube-controller-manager's Lease is free, stop when a live
// holder appears, and start again once its holder lets it expire.
func TestWhileUnheldStepsAsideForAHolder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	var running atomic.Int32
	w := (&Unheld{Client: client, Namespace: "kube-system", Name: KubeControllerManagerLease, Poll: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}).
		WhileUnheld(Work{Name: "controllers", Run: func(ctx context.Context) {
			running.Add(1)
			<-ctx.Done()
			running.Add(-1)
		}})
	go w.Run(ctx)
	waitRunning := func(want int32) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); running.Load() != want; {
			if time.Now().After(deadline) {
				t.Fatalf("work running %d times, want %d", running.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRunning(1) // no Lease: lapis runs the controllers

	renewed := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: KubeControllerManagerLease, Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kcm-1"), RenewTime: &renewed, LeaseDurationSeconds: ptr.To[int32](15)}}
	leases := client.CoordinationV1().Leases("kube-system")
	if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(0)

	expired := metav1.NewMicroTime(time.Now().Add(-time.Minute))
	lease.Spec.RenewTime = &expired
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(1)
	cancel()
	waitRunning(0)
}

// The work one Unheld wraps shares its reads of the Lease.
func TestWhileUnheldSharesReads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset()
	u := &Unheld{Client: client, Namespace: "kube-system", Name: KubeControllerManagerLease, Poll: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	for range 5 {
		go u.WhileUnheld(Work{Name: "w", Run: func(ctx context.Context) { <-ctx.Done() }}).Run(ctx)
	}
	time.Sleep(400 * time.Millisecond)
	cancel()
	// Five readers on their own: about 5 × 400/20 = 100 reads; shared, at most one a half Poll.
	if reads := len(client.Actions()); reads > 400/10+5 {
		t.Errorf("%d reads of the Lease in 400 ms with a 20 ms poll: not shared", reads)
	}
}
