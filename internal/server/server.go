package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/exepages"
	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/leader"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/storage"
)

// Server is a running lapis.
type Server struct {
	cfg      Config
	log      *slog.Logger
	backend  *storage.Backend
	objects  *objects.Service
	http     *http.Server
	listener net.Listener
	ready    atomic.Bool
	stop     context.CancelFunc // ends controllers and open watches
	done     chan struct{}      // closed when the HTTP server has returned

	cleanup      cleanupStack // what Start set going: undone by a failed start, or by Shutdown
	shutdownOnce sync.Once
	audit        *audit.Auditing
	leader       *leader.Elector // runs the singleton work while this lapis holds its Lease
	// kcmLease is kube-controller-manager's Lease, which the controllers step aside for
	// (asideForKubeControllerManager), read once for all of them.
	kcmLease     *leader.Unheld
	kcmLeaseOnce sync.Once
	membership   *membership    // this replica's identity Lease and endpoint
	requests     requestTracker // requests in flight, which a shutdown lets finish

	hooks          *postStartHooks // kube's post-start hooks lapis runs, for the health checks
	loopbackExpiry time.Time       // when the loopback client's serving certificate expires
}

// Start starts lapis in phases (start.go): storage, identity, objects, controllers, serving,
// then kube-apiserver's post-start work and readiness. Each phase pushes what it starts on one
// cleanup stack, which a failed start and Shutdown undo. Start returns when lapis is ready and
// its admin kubeconfig is written.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	// kube's type converters for managed fields are parsed once per process, and the objects
	// service needs them: on the other core, while lapis opens etcd and builds the rest.
	go fieldmanager.NewManagers()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	s := &Server{cfg: cfg.withDefaults(), log: log, stop: stop, done: make(chan struct{}), hooks: newPostStartHooks(kubeHooks(cfg))}
	st := &startup{s: s, ctx: ctx, run: runCtx, lb: &loopback{}}
	for _, phase := range st.phases() {
		if err := phase.run(); err != nil {
			_ = s.cleanup.run(context.Background())
			return nil, err
		}
	}
	s.releaseStartupMemory(runCtx)
	return s, nil
}

// afterStartFree is when, after lapis is ready, the garbage of its start-up work is handed back
// a second time.
const afterStartFree = 2 * time.Second

// releaseStartupMemory hands back what starting left. Starting (kube's schemes, OpenAPI
// models, the first lists) leaves garbage several times the heap lapis then keeps: it goes now
// rather than over minutes, and again once the work that follows readiness is done (the
// admission policies' first OpenAPI fetch, the default objects: ~15 MiB more at idle
// otherwise), with the pages of the executable that only starting touched (~55 MiB; see
// exepages).
func (s *Server) releaseStartupMemory(ctx context.Context) {
	go func() {
		debug.FreeOSMemory()
		select {
		case <-ctx.Done():
		case <-time.After(afterStartFree):
			debug.FreeOSMemory()
			if released, err := exepages.Release(); err != nil {
				s.log.Warn("could not release the executable's start-up pages", "err", err)
			} else {
				s.log.Debug("released the executable's start-up pages", "bytes", released)
			}
		}
	}()
}

// Addr is the address lapis listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Shutdown undoes what Start did, last started first: lapis says it is no longer ready and
// removes its kubeconfig, hands the singleton work over and leaves the kubernetes Service,
// stops accepting requests, lets in-flight requests finish, closes watches, stops the
// controllers, audit and storage, and unlocks the data directory.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdownOnce.Do(func() { err = s.cleanup.run(ctx) })
	return err
}

// stopServing stops the HTTP server. Requests in flight finish (Shutdown stops new ones);
// watches never do: they are ended once the others are done. When every handler has returned,
// the connections are closed: Shutdown would wait up to a second for an HTTP/2 client that saw
// its streams end before the GOAWAY to hang up.
func (s *Server) stopServing(ctx context.Context) error {
	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- s.http.Shutdown(ctx) }()
	_ = s.requests.wait(ctx)
	s.stop()
	if s.requests.waitAll(ctx) == nil {
		_ = s.http.Close()
	}
	err := <-shutdownErr
	<-s.done
	return err
}

// leave hands the singleton work's Lease over while this replica leaves the kubernetes
// Service's endpoints: both write through the loopback, which still serves.
func (s *Server) leave(context.Context) error {
	left := make(chan struct{})
	go func() {
		defer close(left)
		s.membership.leave(s.log)
	}()
	s.stopSingletons()
	<-left
	return nil
}

// serve runs the HTTP server until it is shut down.
func (s *Server) serve() {
	defer close(s.done)
	if err := s.http.ServeTLS(s.listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("serving stopped", "err", err)
	}
}
