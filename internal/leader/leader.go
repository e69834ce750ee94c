package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The defaults are shorter than kube-controller-manager's (15 s, 10 s, 2 s), under which a
// replica killed outright is replaced after up to 15 s + 2×4.4 s: with these, within
// worstHandover = 8 s + 2×2.2 s = 12.4 s (issue 13 asks for 15 s; the rest is for requests on a
// loaded machine). A holder that cannot renew still stops its work stopMargin = 2 s before
// anyone else may take over. Renewing costs one Lease update a second on the holder and one
// read every 1–2.2 s on each other replica.
const (
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 5 * time.Second
	DefaultRetryPeriod   = 1 * time.Second
)

// Config says which Lease to hold and how.
type Config struct {
	Client    kubernetes.Interface
	Namespace string // kube-system when empty
	Name      string // the Lease
	// Identity is this replica's holder identity; NewIdentity's when empty.
	Identity string
	// Zero durations take the defaults above. A Lease records whole seconds of LeaseDuration.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
	// OnNewLeader, if set, learns each holder this replica observes (its own identity included).
	OnNewLeader func(identity string)
	// Sole says no other replica can share this one's etcd (an embedded etcd no other process
	// reaches): the work runs at once, for the Elector's life, and no Lease is held, for renewing
	// one would be a write a second that keeps no one out.
	Sole bool
}

// Work is one piece of singleton work: it runs until ctx ends.
type Work struct {
	Name string
	Run  func(ctx context.Context)
}

// NewIdentity is a per-process unique holder identity, as kube-controller-manager's: the host
// name and a UUID.
func NewIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "lapis"
	}
	return host + "_" + string(uuid.NewUUID())
}

// Elector runs work while this replica holds the Lease.
type Elector struct {
	cfg  Config
	work []Work
	log  *slog.Logger

	mu      sync.Mutex
	leading bool
	terms   int

	cancel context.CancelFunc
	done   chan struct{}
}

// Start campaigns for the Lease in the background until ctx ends or Stop is called; each time
// this replica wins it, every piece of work runs in its own goroutine with a context that ends
// when the term does. A new term starts only once the previous term's work has returned.
func Start(ctx context.Context, cfg Config, work ...Work) (*Elector, error) {
	if cfg.Client == nil || cfg.Name == "" {
		return nil, errors.New("leader: Client and Name are required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "kube-system"
	}
	if cfg.Identity == "" {
		cfg.Identity = NewIdentity()
	}
	cfg = cfg.withDefaults()
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := leaderelection.NewLeaderElector(electionConfig(cfg, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}})); err != nil {
		return nil, fmt.Errorf("leader election for %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &Elector{cfg: cfg, work: work, cancel: cancel, done: make(chan struct{})}
	if cfg.Sole {
		e.log = log.With("lease", "none (sole replica)")
		go e.runSole(ctx)
	} else {
		e.log = log.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
		go e.run(ctx)
	}
	return e, nil
}

// runSole runs the work as one term that lasts until ctx ends.
func (e *Elector) runSole(ctx context.Context) {
	defer close(e.done)
	e.lead(ctx, &term{})
	e.setLeading(false)
}

// Identity is this replica's holder identity.
func (e *Elector) Identity() string { return e.cfg.Identity }

// Leading says whether this replica's work is running (it holds the Lease).
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Terms is how many times this replica has won the Lease.
func (e *Elector) Terms() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.terms
}

// Stop ends the work and, once it has returned, releases the Lease so that another replica
// takes it at once rather than after it expires. It waits until then or ctx ends; when the
// work has not returned by then the Lease is left to expire.
func (e *Elector) Stop(ctx context.Context) error {
	e.cancel()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leader: work still running: %w", ctx.Err())
	}
}

func (e *Elector) run(ctx context.Context) {
	defer close(e.done)
	for ctx.Err() == nil {
		t := &term{}
		le, err := leaderelection.NewLeaderElector(electionConfig(e.cfg, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { e.lead(ctx, t) },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				e.log.Debug("lease holder", "holder", identity)
				if e.cfg.OnNewLeader != nil {
					e.cfg.OnNewLeader(identity)
				}
			},
		}))
		if err != nil { // validated in Start
			e.log.Error("leader election", "err", err)
			return
		}
		le.Run(ctx) // returns when ctx ends or the Lease could not be renewed
		t.end()
		if e.Leading() {
			e.setLeading(false)
			e.log.Info("stopped leading")
		}
	}
	e.release()
}

// term is one run of client-go's elector. client-go starts the work's callback in a goroutine
// of its own, which may run after the term is over: it then does nothing.
type term struct {
	mu      sync.Mutex
	over    bool
	running sync.WaitGroup
}

// begin says whether the term's work may start, counting it as running.
func (t *term) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return false
	}
	t.running.Add(1)
	return true
}

// end waits for the term's work to return.
func (t *term) end() {
	t.mu.Lock()
	t.over = true
	t.mu.Unlock()
	t.running.Wait()
}

// lead runs the term's work and waits for it; ctx ends with the term.
func (e *Elector) lead(ctx context.Context, t *term) {
	if !t.begin() {
		return
	}
	defer t.running.Done()
	e.mu.Lock()
	e.leading = true
	e.terms++
	e.mu.Unlock()
	e.log.Info("leading: starting singleton work", "work", len(e.work))
	var running sync.WaitGroup
	for _, w := range e.work {
		running.Add(1)
		go func() {
			defer running.Done()
			w.Run(ctx)
		}()
	}
	running.Wait()
}

func (e *Elector) setLeading(v bool) {
	e.mu.Lock()
	e.leading = v
	e.mu.Unlock()
}

// release gives the Lease up, as client-go's ReleaseOnCancel does, but only after the work has
// returned: the next holder never overlaps with this one.
func (e *Elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RenewDeadline)
	defer cancel()
	lock := newLock(e.cfg)
	for range 3 {
		rec, _, err := lock.Get(ctx)
		if err != nil || rec.HolderIdentity != e.cfg.Identity {
			return // gone, or someone else's already
		}
		now := rec.RenewTime
		now.Time = time.Now()
		err = lock.Update(ctx, resourcelock.LeaderElectionRecord{
			LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
		})
		if err == nil {
			e.log.Info("released the lease")
			return
		}
		if !apierrors.IsConflict(err) {
			e.log.Warn("releasing the lease", "err", err)
			return
		}
	}
}

// withDefaults fills in the zero durations.
func (cfg Config) withDefaults() Config {
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	return cfg
}

// maxPoll is the longest a waiting replica goes between two looks at the Lease: client-go
// jitters each retry period by up to JitterFactor more.
func (cfg Config) maxPoll() time.Duration {
	return time.Duration((1 + leaderelection.JitterFactor) * float64(cfg.RetryPeriod))
}

// worstHandover is the longest another replica takes to lead after the holder dies without
// releasing the Lease, request latencies aside. Its last renewal may be just before it dies;
// the others count the lease from when they first see that renewal (up to maxPoll later, on
// their own clocks) and take the Lease at their first look after it lapsed (up to maxPoll
// more).
func (cfg Config) worstHandover() time.Duration {
	return cfg.LeaseDuration + 2*cfg.maxPoll()
}

// stopMargin is how long before anyone else may take the Lease a holder that can no longer
// renew it has cancelled its work: it tries again a retry period after its last renewal and
// gives up a renew deadline later, while the others wait a lease duration from having seen
// that renewal.
func (cfg Config) stopMargin() time.Duration {
	return cfg.LeaseDuration - cfg.RetryPeriod - cfg.RenewDeadline
}

func newLock(cfg Config) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metaOf(cfg),
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
}

func electionConfig(cfg Config, callbacks leaderelection.LeaderCallbacks) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock:          newLock(cfg),
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		Callbacks:     callbacks,
		Name:          cfg.Name,
	}
}

func metaOf(cfg Config) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name}
}
