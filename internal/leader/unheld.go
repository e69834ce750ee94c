package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KubeControllerManagerLease is the Lease kube-controller-manager holds in kube-system while it
// runs its controllers.
const KubeControllerManagerLease = "kube-controller-manager"

// DefaultUnheldPoll is how often WhileUnheld looks at the other process's Lease: a
// kube-controller-manager that starts beside lapis sees lapis's controllers stop within it.
const DefaultUnheldPoll = 2 * time.Second

// Unheld says whose Lease WhileUnheld defers to. The pieces of work one Unheld wraps share its
// reads of the Lease: at most two a Poll between them, however many there are.
type Unheld struct {
	Client          kubernetes.Interface
	Namespace, Name string
	Poll            time.Duration // DefaultUnheldPoll when zero
	Log             *slog.Logger

	mu                 sync.Mutex
	readAt             time.Time // when last read; zero: never
	lastHeld, readOnce bool
	lastHolder         string
}

// WhileUnheld returns work that runs w only while nobody holds the Lease u names, or its
// holder has let it expire: lapis's controllers step aside for a kube-controller-manager that
// runs them on the same etcd, rather than fight it over every object, and take over once it is
// gone. The Lease is read every Poll; a holder appearing stops w (its context is cancelled and
// WhileUnheld waits for it to return).
func (u *Unheld) WhileUnheld(w Work) Work {
	if u.Poll == 0 {
		u.Poll = DefaultUnheldPoll
	}
	return Work{Name: w.Name, Run: func(ctx context.Context) {
		var stop func() // non-nil while w runs
		defer func() {
			if stop != nil {
				stop()
			}
		}()
		for {
			switch held, holder, err := u.held(ctx); {
			case err != nil:
				// Not known: keep things as they are rather than start or stop on a hiccup.
			case held && stop != nil:
				u.Log.Info("stepping aside: another process holds its Lease", "work", w.Name, "lease", u.Name, "holder", holder)
				stop()
				stop = nil
			case !held && stop == nil:
				stop = runUntilStopped(ctx, w)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(u.Poll):
			}
		}
	}}
}

// runUntilStopped runs w until the returned stop is called, which waits for it to return.
func runUntilStopped(ctx context.Context, w Work) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// held reports whether the Lease has a holder whose last renewal has not expired, reading it
// at most once every half Poll for all the work u wraps.
func (u *Unheld) held(ctx context.Context) (bool, string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.readOnce && time.Since(u.readAt) < u.Poll/2 {
		return u.lastHeld, u.lastHolder, nil
	}
	held, holder, err := u.read(ctx)
	if err == nil {
		u.readAt, u.readOnce, u.lastHeld, u.lastHolder = time.Now(), true, held, holder
	}
	return held, holder, err
}

func (u *Unheld) read(ctx context.Context) (bool, string, error) {
	lease, err := u.Client.CoordinationV1().Leases(u.Namespace).Get(ctx, u.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return live(lease, time.Now()), ptrString(lease.Spec.HolderIdentity), nil
}

// live reports whether lease has a holder whose term has not run out at now.
func live(lease *coordinationv1.Lease, now time.Time) bool {
	s := lease.Spec
	if ptrString(s.HolderIdentity) == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
