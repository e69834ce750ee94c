package server

import (
	"context"
	"time"

	"k8s.io/client-go/informers"

	lapisadmission "github.com/lapis-dev/lapis/internal/admission"
	"github.com/lapis-dev/lapis/internal/apiserverid"
	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/controllers/garbagecollector"
	"github.com/lapis-dev/lapis/internal/controllers/namespace"
	"github.com/lapis-dev/lapis/internal/controllers/serviceaccount"
	"github.com/lapis-dev/lapis/internal/leader"
	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

// ControllersLease is the Lease in kube-system whose holder runs lapis's singleton work, as
// kube-controller-manager's "kube-controller-manager" Lease. A lapis whose embedded etcd is not
// exposed to other processes runs the work without it.
const ControllersLease = "lapis-controller-manager"

// singletons is what startSingletons needs.
type singletons struct {
	lb            *loopback
	authenticator *authn.Authenticator
	creds         *pki.Credentials
	store         *storage.Store
	caches        *watchcache.Caches
}

// startSingletons campaigns for ControllersLease and, while this lapis holds it, runs the work
// that must run once among replicas sharing an etcd: kube-controller-manager's controllers and
// etcd compaction. A lone lapis wins at once (one Lease read and create over the loopback).
//
// What stays on every replica, as on every kube-apiserver: the request path (admission,
// allocation on create, through etcd transactions), the allocators' repair at start (create-if-
// absent and compare-and-swap writes), RBAC bootstrap, default objects, FlowSchema status, the
// kubernetes Service, and kube-root-ca.crt: each replica adds its own CA to the bundle, which the
// publisher keeps merged (replicas with their own CAs all need to be trusted). kube-controller-
// manager's controllers, kube-root-ca.crt's included, step aside while a kube-controller-manager
// holds its Lease on the same etcd.
func (s *Server) startSingletons(ctx context.Context, d singletons) (*leader.Elector, error) {
	// Controllers start the shared informers they use; those must outlive a term, for the
	// request path shares them and a later term finds them running.
	lb := &loopback{factory: longLived{d.lb.factory, ctx.Done()}, client: d.lb.client, config: d.lb.config}
	work := []leader.Work{
		{Name: "etcd compaction", Run: func(ctx context.Context) {
			d.store.RunCompactor(ctx, storage.CompactionPolicy{Interval: s.cfg.EtcdCompactionInterval, HistoryBytes: s.cfg.EtcdHistoryBytes}, s.log, d.caches.Compacted)
		}},
		// kube runs it on every API server; once is enough, and deletes nothing twice.
		{Name: "apiserver lease gc", Run: func(ctx context.Context) {
			apiserverid.RunGC(ctx, d.lb.client, apiserverid.GCPeriod)
		}},
	}
	sole := s.sole()
	controller := func(w leader.Work) leader.Work { return s.asideForKubeControllerManager(d.lb, w) }
	// kube-apiserver alone makes no default ServiceAccounts (kube-controller-manager does); lapis
	// does so even then while its ServiceAccount admission plugin, which needs them, runs.
	if !s.cfg.KubeAPIServerOnly || lapisadmission.Runs("ServiceAccount", s.cfg.EnableAdmissionPlugins, s.cfg.DisableAdmissionPlugins) {
		work = append(work, controller(leader.Work{Name: "serviceaccount", Run: func(ctx context.Context) { serviceaccount.NewController(s.objects, s.log).Run(ctx) }}))
	}
	if !s.cfg.KubeAPIServerOnly {
		work = append(work,
			controller(leader.Work{Name: "namespace", Run: func(ctx context.Context) { namespace.NewController(s.objects, s.log).Run(ctx) }}),
			controller(leader.Work{Name: "garbage collector", Run: func(ctx context.Context) { garbagecollector.New(s.objects, s.log).Run(ctx) }}),
			controller(leader.Work{Name: "controller manager", Run: func(ctx context.Context) {
				s.runControllerManager(ctx, lb, d.authenticator, d.creds)
				<-ctx.Done() // its controllers end with ctx
			}}),
		)
	}
	return leader.Start(ctx, leader.Config{Client: d.lb.client, Name: ControllersLease, Sole: sole, Log: s.log.With("component", "leader")}, work...)
}

// sole says no other process can share this lapis's etcd: it is embedded and not exposed.
func (s *Server) sole() bool { return len(s.cfg.EtcdServers) == 0 && s.cfg.EmbeddedEtcdClientURL == "" }

// asideForKubeControllerManager returns work that runs w, one of kube-controller-manager's
// controllers, only while no kube-controller-manager holds its Lease on the same etcd (during a
// migration from kube-apiserver, say): two would fight over every object they both write.
func (s *Server) asideForKubeControllerManager(lb *loopback, w leader.Work) leader.Work {
	if s.sole() {
		return w
	}
	s.kcmLeaseOnce.Do(func() {
		s.kcmLease = &leader.Unheld{Client: lb.client, Namespace: "kube-system", Name: leader.KubeControllerManagerLease,
			Log: s.log.With("component", "leader")}
	})
	return s.kcmLease.WhileUnheld(w)
}

// longLived is an informer factory whose informers, once started, run until stop whatever
// stop channel the starter gives.
type longLived struct {
	informers.SharedInformerFactory
	stop <-chan struct{}
}

func (l longLived) Start(<-chan struct{}) { l.SharedInformerFactory.Start(l.stop) }

// singletonStopTimeout bounds how long shutdown waits for the singleton work to stop before
// it releases the Lease; past it the Lease is left to expire (leader.DefaultLeaseDuration) instead.
const singletonStopTimeout = time.Second

// stopSingletons ends the singleton work and hands the Lease over, while the loopback still
// serves the release.
func (s *Server) stopSingletons() {
	if s.leader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), singletonStopTimeout)
	defer cancel()
	if err := s.leader.Stop(ctx); err != nil {
		s.log.Warn("singleton work did not stop in time; its Lease will expire", "err", err)
	}
}
