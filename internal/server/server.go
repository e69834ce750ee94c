package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/klog/v2"

	lapisadmission "github.com/lapis-dev/lapis/internal/admission"
	"github.com/lapis-dev/lapis/internal/allocate"
	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/auth/authz"
	"github.com/lapis-dev/lapis/internal/bootstrap"
	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/controllers/apf"
	"github.com/lapis-dev/lapis/internal/controllers/rootca"
	"github.com/lapis-dev/lapis/internal/crd"
	"github.com/lapis-dev/lapis/internal/exepages"
	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/leader"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/watchcache"
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
	done     chan struct{}

	shutdownOnce sync.Once
	unlock       func() // releases the data directory
	audit        *audit.Auditing
	leader       *leader.Elector // runs the singleton work while this lapis holds its Lease
	membership   *membership     // this replica's identity Lease and endpoint
	requests     requestTracker  // requests in flight, which a shutdown lets finish
}

// Start opens storage, starts lapis's controllers, listens, and writes the admin kubeconfig
// once requests can be served. It returns when lapis is ready.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	// kube's type converters for managed fields are parsed once per process, and the objects
	// service needs them: on the other core, while lapis opens etcd and builds the rest.
	go fieldmanager.NewManagers()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.EtcdHistoryBytes == 0 {
		cfg.EtcdHistoryBytes = DefaultEtcdHistoryBytes
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			unlock()
		}
	}()
	// A kubeconfig left by a lapis that did not stop (SIGKILL) names a server that is gone:
	// none is there until this one is ready.
	if err := removeKubeconfig(cfg.DataDir); err != nil {
		return nil, err
	}
	var host string
	host, _, err = net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", cfg.Listen, err)
	}
	// etcd opens (its log, its database, an election: tens of milliseconds, mostly waiting)
	// while lapis builds what needs no storage: its credentials (a first start makes them), the
	// catalogue, kube's type converters, the listener, TLS, authentication, authorization and
	// the admission chain. An exposed embedded etcd's certificates share lapis's CA: it opens
	// once the credentials are there.
	var opening *pendingStorage
	if cfg.EmbeddedEtcdClientURL == "" {
		opening = openStorageAsync(ctx, cfg, log)
	}
	creds, err := pki.LoadOrCreate(cfg.DataDir, host)
	if err != nil {
		if opening != nil {
			if backend, oerr := opening.wait(); oerr == nil {
				backend.Close()
			}
		}
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if opening == nil {
		opening = openStorageAsync(ctx, cfg, log)
	}
	runCtx, stop := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: log, stop: stop, done: make(chan struct{}), unlock: unlock}
	fail := func(err error) (*Server, error) {
		stop()
		if s.listener != nil {
			_ = s.listener.Close()
		}
		if backend, oerr := opening.wait(); oerr == nil {
			backend.Close()
		}
		return nil, err
	}
	if s.audit, err = audit.New(cfg.Audit); err != nil {
		return fail(err)
	}
	defer func() {
		if !started {
			_ = s.audit.Shutdown()
		}
	}()
	// SIGTERM while starting (ctx ends) stops what was started: each step below then fails.
	stopOnCancel := context.AfterFunc(ctx, stop)

	cat := catalog.New()
	lb := &loopback{}
	cat.AddBuiltin(builtin.Resources(kubeDeps(func() *objects.Service { return s.objects }, lb))...)

	s.listener, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		s.listener = nil
		return fail(fmt.Errorf("listening on %s: %w", cfg.Listen, err))
	}
	tlsConfig, loopbackTLS, err := servingTLS(cfg, creds)
	if err != nil {
		return fail(err)
	}
	if err := lb.connect(s.listener.Addr(), creds, loopbackTLS); err != nil {
		return fail(err)
	}
	// Admission and CRD conversion webhooks are called alike: a service at one of its
	// EndpointSlices' endpoints, lapis's own kubernetes Service with the loopback credentials.
	webhookServices, err := lapisadmission.NewServiceResolver(lb.factory, lb.config.Host, runCtx.Done())
	if err != nil {
		return fail(err)
	}
	authenticator, err := newAuthenticator(cfg, creds)
	if err != nil {
		return fail(err)
	}
	authorizer, err := authz.New(cfg.AuthorizationModes, lb.factory)
	if err != nil {
		return fail(fmt.Errorf("--authorization-mode: %w", err))
	}
	lb.authz.Store(authorizer)
	id := newIdentity(authenticator, authorizer)
	serviceAccounts := authn.NewGetter(lb.client, lb.factory)
	lb.registerPolicyInformers(cfg.EnableAdmissionPlugins, cfg.DisableAdmissionPlugins)

	backend, err := opening.wait()
	if err != nil {
		return fail(err)
	}
	s.backend = backend
	store := backend.Store(log) // refuses writes while the disk is nearly full
	s.objects = objects.NewService(store, cat)
	caches := watchcache.New(runCtx, store, cfg.WatchCacheHistoryBytes, log)
	s.objects.UseWatchCache(caches)

	if err := bootstrap.EnsureNamespaces(ctx, s.objects); err != nil {
		return fail(err)
	}
	// kube-apiserver's Service allocation, default ServiceCIDR and kubernetes Service.
	services, _ := allocate.ParseConfig(cfg.ServiceClusterIPRange, cfg.ServiceNodePortRange) // validated
	allocate.StartInBackground(runCtx, s.objects, services, func(err error) { log.Error("service allocation", "err", err) })
	crds := crd.NewController(s.objects, log, lb.chainOrNil)
	if err := crds.Start(runCtx); err != nil {
		return fail(fmt.Errorf("loading CustomResourceDefinitions: %w", err))
	}
	crds.UseWebhookConversion(webhookServices, webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, lb.config, noop.NewTracerProvider()))
	// kube-controller-manager's controllers run unless lapis is kube-apiserver alone (envtest).
	// Namespace deletion, garbage collection, the default ServiceAccount and compaction run on
	// the replica holding the controllers' Lease (startSingletons, once lapis serves).
	kcm := !cfg.KubeAPIServerOnly
	go apf.Run(runCtx, s.objects, log)
	// What kube-controller-manager puts in every namespace: the CA that verifies lapis (the one
	// its kubeconfig trusts). Every replica adds its own CA to the bundle.
	if kcm {
		go rootca.NewController(s.objects, creds.CAPEM, log).Run(runCtx)
	}
	serving := make(chan struct{}) // closed once lapis is ready
	// Writes from here on are admitted: they wait for the chain, built once lapis serves.
	gate := newAdmissionGate()
	defer gate.use(nil) // a failed start releases them, refused
	lb.useChain(gate)
	kubernetesService, err := allocate.NewKubernetesService(s.objects, services, advertised(cfg, s.listener.Addr()), log)
	if err != nil {
		return fail(err)
	}
	s.http = &http.Server{
		Handler:   s.chain(id, cat), // with the request timeout in kube's place
		TLSConfig: tlsConfig,
		// As kube-apiserver: no WriteTimeout, which would end watches; withRequestTimeout
		// bounds the other requests.
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return runCtx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		if err := s.http.ServeTLS(s.listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving stopped", "err", err)
		}
	}()
	// From here lapis's first writes run while the informers sync and the admission chain is
	// built: they wait for it at the gate.
	// kube-apiserver's rbac/bootstrap-roles post-start hook: lapis is ready once it is done.
	bootstrapCtx, cancelBootstrap := context.WithTimeout(runCtx, 5*time.Second)
	defer cancelBootstrap()
	rbacDone := make(chan error, 1)
	go func() {
		rbacDone <- authz.EnsureBootstrapPolicy(klog.NewContext(bootstrapCtx, klog.Background()), lb.client, createDirect(s.objects))
	}()
	// The kubernetes Service exists by the time lapis says it is ready: clients (controller-
	// runtime's tests among them) list Services at once. Run keeps it, as kube's, afterwards.
	serviceSynced := make(chan struct{})
	go func() {
		defer close(serviceSynced)
		syncCtx, cancelSync := context.WithTimeout(runCtx, 2*time.Second)
		defer cancelSync()
		if err := kubernetesService.Sync(syncCtx); err != nil && runCtx.Err() == nil {
			log.Warn("the kubernetes Service before ready", "err", err)
		}
	}()
	if err := lb.start(runCtx); err != nil {
		s.Shutdown(context.Background())
		return nil, err
	}
	chain, err := lb.buildChain(id.authz, webhookServices, cfg.EnableAdmissionPlugins, cfg.DisableAdmissionPlugins, runCtx.Done(), serving)
	if err != nil {
		s.Shutdown(context.Background())
		return nil, err
	}
	if err := lb.start(runCtx); err != nil { // the informers the chain added
		s.Shutdown(context.Background())
		return nil, err
	}
	lb.useChain(chain)
	gate.use(chain)
	authenticator.UseServiceAccounts(serviceAccounts)
	// If the RBAC policy cannot be put in place (writes refused on a nearly full disk), lapis
	// serves what it can meanwhile and keeps trying.
	if err := <-rbacDone; err != nil {
		log.Error("RBAC bootstrap policy not in place yet; retrying", "err", err)
		go func() {
			if err := authz.EnsureBootstrapPolicy(klog.NewContext(runCtx, klog.Background()), lb.client, createDirect(s.objects)); err != nil && runCtx.Err() == nil {
				log.Error("RBAC bootstrap policy", "err", err)
			}
		}()
	}
	go bootstrap.EnsureDefaults(runCtx, s.objects, log)
	// kube-controller-manager's controllers, and compaction, on one replica at a time: their
	// ServiceAccounts' roles are in place.
	if s.leader, err = s.startSingletons(runCtx, singletons{lb: lb, authenticator: authenticator, creds: creds, store: store, caches: caches}); err != nil {
		<-serviceSynced
		s.Shutdown(context.Background())
		return nil, err
	}
	<-serviceSynced
	s.ready.Store(true)
	close(serving)
	s.membership = startIdentity(runCtx, lb.client, kubernetesService)
	go kubernetesService.Run(runCtx)
	if !stopOnCancel() {
		s.Shutdown(context.Background())
		return nil, fmt.Errorf("stopped while starting: %w", context.Cause(ctx))
	}
	if err := writeKubeconfig(KubeconfigPath(cfg.DataDir), s.listener.Addr(), creds); err != nil {
		s.Shutdown(context.Background())
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	log.Info("lapis is serving", "address", "https://"+s.listener.Addr().String(), "kubeconfig", KubeconfigPath(cfg.DataDir))
	started = true
	// Starting (kube's schemes, OpenAPI models, the first lists) leaves garbage several times
	// the heap lapis then keeps: hand it back now rather than over minutes, and again once the
	// work that follows readiness is done (the admission policies' first OpenAPI fetch, the
	// default objects: ~15 MiB more at idle otherwise), with the pages of the executable that
	// only starting touched (~55 MiB; see exepages).
	go func() {
		debug.FreeOSMemory()
		select {
		case <-runCtx.Done():
		case <-time.After(afterStartFree):
			debug.FreeOSMemory()
			if released, err := exepages.Release(); err != nil {
				log.Warn("could not release the executable's start-up pages", "err", err)
			} else {
				log.Debug("released the executable's start-up pages", "bytes", released)
			}
		}
	}()
	return s, nil
}

// afterStartFree is when, after lapis is ready, the garbage of its start-up work is handed back
// a second time.
const afterStartFree = 2 * time.Second

// pendingStorage is storage being opened.
type pendingStorage struct {
	done    chan struct{}
	backend *storage.Backend
	err     error
}

// openStorageAsync opens storage in the background.
func openStorageAsync(ctx context.Context, cfg Config, log *slog.Logger) *pendingStorage {
	p := &pendingStorage{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.backend, p.err = openStorage(ctx, cfg, log)
	}()
	return p
}

// wait returns the opened storage, or why it did not open.
func (p *pendingStorage) wait() (*storage.Backend, error) {
	<-p.done
	return p.backend, p.err
}

// openStorage connects to the external etcd, or starts the embedded one: reachable only
// in-process unless --embedded-etcd-listen exposes it, over TLS to lapis's etcd client
// certificate only.
func openStorage(ctx context.Context, cfg Config, log *slog.Logger) (*storage.Backend, error) {
	if len(cfg.EtcdServers) > 0 {
		var tlsConfig *tls.Config
		if cfg.EtcdCAFile != "" || cfg.EtcdCertFile != "" || cfg.EtcdKeyFile != "" {
			var err error
			if tlsConfig, err = storage.ClientTLSConfig(cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile); err != nil {
				return nil, err
			}
		}
		return storage.OpenExternalTLS(ctx, cfg.EtcdServers, tlsConfig)
	}
	if cfg.EmbeddedEtcdClientURL == "" {
		return storage.OpenEmbedded(ctx, cfg.DataDir, "")
	}
	u, _ := url.Parse(cfg.EmbeddedEtcdClientURL) // validated
	files, err := pki.LoadOrCreateEtcd(cfg.DataDir, u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("etcd certificates: %w", err)
	}
	b, err := storage.OpenEmbeddedTLS(ctx, cfg.DataDir, cfg.EmbeddedEtcdClientURL, &storage.ServerTLS{
		CertFile: files.ServerCert, KeyFile: files.ServerKey, ClientCAFile: files.CAFile, ClientCNs: []string{pki.EtcdClientCN}})
	if err != nil {
		return nil, err
	}
	log.Info("embedded etcd exposed", "url", cfg.EmbeddedEtcdClientURL,
		"etcd-cafile", files.CAFile, "etcd-certfile", files.ClientCert, "etcd-keyfile", files.ClientKey)
	return b, nil
}

// Addr is the address lapis listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Shutdown stops accepting requests, lets in-flight requests finish, closes watches, stops the
// controllers and storage.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdownOnce.Do(func() { err = s.shutdown(ctx) })
	return err
}

func (s *Server) shutdown(ctx context.Context) error {
	s.ready.Store(false)
	// No client should find a kubeconfig of a server that is going away.
	kubeconfigErr := removeKubeconfig(s.cfg.DataDir)
	// The singleton work hands its Lease over while this replica leaves the kubernetes
	// Service's endpoints: both write through the loopback, which still serves.
	left := make(chan struct{})
	go func() {
		defer close(left)
		s.membership.leave(s.log)
	}()
	s.stopSingletons()
	<-left
	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- s.http.Shutdown(ctx) }()
	// Requests in flight finish (Shutdown stops new ones); watches never do: they are ended
	// once the others are done. When every handler has returned, the connections are closed:
	// Shutdown would wait up to a second for an HTTP/2 client that saw its streams end before
	// the GOAWAY to hang up.
	_ = s.requests.wait(ctx)
	s.stop()
	if s.requests.waitAll(ctx) == nil {
		_ = s.http.Close()
	}
	err := <-shutdownErr
	<-s.done
	if cerr := s.backend.Close(); err == nil {
		err = cerr
	}
	s.unlock()
	if aerr := s.audit.Shutdown(); err == nil {
		err = aerr
	}
	if err == nil {
		err = kubeconfigErr
	}
	return err
}
