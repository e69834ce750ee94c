package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controlplane/controller/legacytokentracking"
	"k8s.io/kubernetes/pkg/serviceaccount"

	lapisadmission "github.com/lapis-dev/lapis/internal/admission"
	"github.com/lapis-dev/lapis/internal/aggregator"
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
	"github.com/lapis-dev/lapis/internal/discovery"
	"github.com/lapis-dev/lapis/internal/leader"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

// startup is a start under way: what each phase makes for the next ones.
type startup struct {
	s            *Server
	ctx          context.Context // the caller's: SIGTERM while starting ends it
	run          context.Context // lapis's own: ends with Shutdown or a failed start
	stopOnCancel func() bool     // unties run from ctx once lapis is ready

	creds             *pki.Credentials
	opening           *pendingStorage
	lb                *loopback
	tls               *tls.Config
	webhooks          lapisadmission.ServiceResolver
	authenticator     *authn.Authenticator
	clientCA          dynamiccertificates.CAContentProvider // the CAs of authenticating client certificates
	frontProxy        *frontProxy                           // the aggregator's client certificate; front proxies trusted
	id                identity
	serviceAccounts   serviceaccount.ServiceAccountTokenGetter
	cat               *catalog.Catalog
	store             *storage.Store
	caches            *watchcache.Caches
	services          allocate.Config
	kubernetesService *allocate.KubernetesService
	gate              *admissionGate
	discovery         *discovery.Handler
	aggregator        *aggregator.Aggregator
	allocated         <-chan struct{} // closed once Service allocation has started, or failed to
	whenReady         chan struct{}   // closed once lapis is ready
}

// phase is one step of a start.
type phase struct {
	name string
	run  func() error
}

// phases are a start's steps, in order. etcd opens (its log, its database, an election: tens
// of milliseconds, mostly waiting) while the identity phase and the catalogue need no storage.
func (st *startup) phases() []phase {
	return []phase{
		{"storage", st.storage},
		{"identity", st.identity},
		{"objects", st.objects},
		{"controllers", st.controllers},
		{"serving", st.serving},
		{"post-start", st.postStart},
		{"ready", st.ready},
	}
}

// storage locks the data directory, removes a kubeconfig left by a lapis that did not stop
// (SIGKILL: it names a server that is gone, and none is there until this one is ready), loads
// the credentials (a first start makes them) and opens etcd in the background. An exposed
// embedded etcd's certificates share lapis's CA: it opens once the credentials are there.
func (st *startup) storage() error {
	cfg := st.s.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	st.s.cleanup.push("data directory lock", func(context.Context) error { unlock(); return nil })
	if err := removeKubeconfig(cfg.DataDir); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", cfg.Listen, err)
	}
	exposed := cfg.EmbeddedEtcdClientURL != ""
	if !exposed {
		st.openStorage()
	}
	if st.creds, err = pki.LoadOrCreate(cfg.DataDir, host); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if exposed {
		st.openStorage()
	}
	return nil
}

// openStorage starts opening storage; undone, it closes it once open.
func (st *startup) openStorage() {
	st.opening = openStorageAsync(st.ctx, st.s.cfg, st.s.log)
	st.s.cleanup.push("storage", func(context.Context) error {
		backend, err := st.opening.wait()
		if err != nil {
			return nil // never opened
		}
		return backend.Close()
	})
}

// identity is who lapis is and who may ask it: audit, the listener and its TLS, the loopback
// client lapis's own reads and writes go through, authentication and authorization.
func (st *startup) identity() error {
	s := st.s
	s.cleanup.push("controllers and watches", func(context.Context) error { s.stop(); return nil })
	// SIGTERM while starting (ctx ends) stops what was started: each step then fails.
	st.stopOnCancel = context.AfterFunc(st.ctx, s.stop)
	var err error
	if s.audit, err = audit.New(s.cfg.Audit); err != nil {
		return err
	}
	s.cleanup.push("audit", func(context.Context) error { return s.audit.Shutdown() })
	listener, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.cfg.Listen, err)
	}
	s.listener = listener
	s.cleanup.push("listener", func(context.Context) error { _ = listener.Close(); return nil })
	tlsConfig, loopbackTLS, err := servingTLS(s.cfg, st.creds)
	if err != nil {
		return err
	}
	st.tls = tlsConfig
	if cert, err := tlsConfig.GetCertificate(&tls.ClientHelloInfo{ServerName: loopbackServerName}); err == nil {
		s.loopbackExpiry = cert.Leaf.NotAfter
	}
	if err := st.lb.connect(listener.Addr(), st.creds, loopbackTLS); err != nil {
		return err
	}
	// Admission and CRD conversion webhooks are called alike: a service at one of its
	// EndpointSlices' endpoints, lapis's own kubernetes Service with the loopback credentials.
	if st.webhooks, err = lapisadmission.NewServiceResolver(st.lb.factory, st.lb.config.Host, st.run.Done()); err != nil {
		return err
	}
	if st.clientCA, err = clientCA(s.cfg, st.creds); err != nil {
		return err
	}
	if st.frontProxy, err = newFrontProxy(s.cfg, s.log); err != nil {
		return err
	}
	if st.authenticator, err = newAuthenticator(s.cfg, st.creds, st.clientCA, st.frontProxy); err != nil {
		return err
	}
	authorizer, err := authz.New(s.cfg.AuthorizationModes, st.lb.factory)
	if err != nil {
		return fmt.Errorf("--authorization-mode: %w", err)
	}
	st.lb.authz.Store(authorizer)
	st.id = newIdentity(st.authenticator, authorizer)
	st.serviceAccounts = authn.NewGetter(st.lb.client, st.lb.factory)
	st.lb.registerPolicyInformers(s.cfg.EnableAdmissionPlugins, s.cfg.DisableAdmissionPlugins)
	return nil
}

// objects builds the resource catalogue, then, once etcd is open, moves objects an older lapis
// kept under its own keys to kube's, builds the objects service over it and its watch caches,
// and makes the system namespaces lapis needs to serve.
func (st *startup) objects() error {
	s := st.s
	st.cat = catalog.New()
	st.cat.AddBuiltin(builtin.Resources(kubeDeps(s.cfg, func() *objects.Service { return s.objects }, st.lb))...)
	backend, err := st.opening.wait()
	if err != nil {
		return err
	}
	s.backend = backend
	st.store = backend.Store(s.log) // refuses writes while the disk is nearly full
	values, err := storedValues(s.cfg)
	if err != nil {
		return err
	}
	st.store.UseValues(values)
	// Before anything reads objects: an older lapis's data moves to kube's keys.
	keys := objects.NewKeys(s.cfg.EtcdPrefix)
	if err := objects.MigrateKeys(st.ctx, st.store, keys, st.cat.Stored(), s.log); err != nil {
		return err
	}
	s.objects = objects.NewService(st.store, keys, st.cat)
	st.caches = watchcache.New(st.run, st.store, s.cfg.WatchCacheHistoryBytes, s.log)
	s.objects.UseWatchCache(st.caches)
	return s.hooks.run(st.ctx, hookSystemNamespaces, func(ctx context.Context) error {
		return bootstrap.EnsureNamespaces(ctx, s.objects)
	})
}

// controllers starts what runs before lapis serves: kube-apiserver's Service allocation (and
// default ServiceCIDR), the CustomResourceDefinitions, FlowSchemas' status and, unless lapis is
// kube-apiserver alone, kube-root-ca.crt. Writes from here on are admitted: they wait at the
// gate for the chain, built once lapis serves.
func (st *startup) controllers() error {
	s := st.s
	st.services, _ = allocate.ParseConfig(s.cfg.ServiceClusterIPRange, s.cfg.ServiceNodePortRange) // validated
	st.allocated = allocate.StartInBackground(st.run, s.objects, st.services, func(err error) { s.log.Error("service allocation", "err", err) })
	crds := crd.NewController(s.objects, s.log, st.lb.chainOrNil)
	if err := crds.Start(st.run); err != nil {
		return fmt.Errorf("loading CustomResourceDefinitions: %w", err)
	}
	crds.UseWebhookConversion(st.webhooks, webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, st.lb.config, noop.NewTracerProvider()))
	s.hooks.Finish(hookAPIExtensionsInformers, hookAPIExtensionsControllers, hookCRDInformerSynced)
	go apf.Run(st.run, s.objects, s.log)
	// What kube-controller-manager puts in every namespace: the CA that verifies lapis (the one
	// its kubeconfig trusts). Every replica adds its own CA to the bundle. The rest of
	// kube-controller-manager's work runs on one replica once lapis serves (startSingletons).
	if !s.cfg.KubeAPIServerOnly {
		publish := leader.Work{Name: "root-ca-certificate-publisher", Run: func(ctx context.Context) {
			rootca.NewController(s.objects, st.creds.CAPEM, s.log).Run(ctx)
		}}
		go s.asideForKubeControllerManager(st.lb, publish).Run(st.run)
	}
	st.gate = newAdmissionGate()
	s.cleanup.push("admission gate", func(context.Context) error { st.gate.use(nil); return nil }) // waiting writes are refused
	st.lb.useChain(st.gate)
	var err error
	st.kubernetesService, err = allocate.NewKubernetesService(s.objects, st.services, advertised(s.cfg, s.listener.Addr()), s.log)
	return err
}

// serving starts the HTTP server: every request goes through the chain (chain.go).
func (st *startup) serving() error {
	s := st.s
	st.whenReady = make(chan struct{})
	if err := st.aggregation(); err != nil {
		return err
	}
	s.http = &http.Server{
		Handler:   s.chain(st.id, st.cat, st.discovery, st.aggregator), // with the request timeout in kube's place
		TLSConfig: st.tls,
		// As kube-apiserver: no WriteTimeout, which would end watches; withRequestTimeout
		// bounds the other requests.
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return st.run },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go s.serve()
	s.cleanup.push("serving", s.stopServing)
	return nil
}

// postStart is kube-apiserver's post-start work that lapis waits for before it is ready: the
// RBAC bootstrap policy and the kubernetes Service (clients, controller-runtime's tests among
// them, list Services at once) while the loopback informers sync and the admission chain is
// built; then the singleton work, whose ServiceAccounts' roles are then in place.
func (st *startup) postStart() error {
	s := st.s
	rbac := st.bootstrapRBAC()
	serviceSynced := st.syncKubernetesService()
	if err := st.admission(); err != nil {
		return err
	}
	st.authenticator.UseServiceAccounts(st.serviceAccounts)
	startClusterAuthenticationInfo(st.run, st.lb.client, st.clientCA, st.frontProxy)
	s.hooks.Finish(hookClusterAuthenticationInfo)
	st.frontProxy.run(st.run) // its listeners are in place by now
	// The aggregation layer's first writes (the local APIServices on a first start) overlap
	// the rest of this phase.
	aggregated := st.runAggregation()
	s.hooks.Finish(hookReloadProxyClientCert)
	// If the RBAC policy cannot be put in place (writes refused on a nearly full disk), lapis
	// serves what it can meanwhile and keeps trying.
	if err := <-rbac; err != nil {
		s.log.Error("RBAC bootstrap policy not in place yet; retrying", "err", err)
		go func() {
			if err := st.ensureRBAC(st.run); err != nil && st.run.Err() == nil {
				s.log.Error("RBAC bootstrap policy", "err", err)
			}
		}()
	}
	// The default objects are made in the background, readiness not waiting for them (as
	// before): their hooks finish once started, as kube's hooks that start a controller do.
	go bootstrap.EnsureDefaults(st.run, s.objects, s.log)
	s.hooks.Finish(hookSystemPriorityClasses, hookAPFConfigProducer)
	s.cleanup.push("singleton work and membership", s.leave)
	var err error
	s.leader, err = s.startSingletons(st.run, singletons{lb: st.lb, authenticator: st.authenticator, creds: st.creds, store: st.store, caches: st.caches})
	<-serviceSynced
	if err != nil {
		return err
	}
	s.hooks.Finish(hookIdentityLeaseGC)
	// Every kube-apiserver records since when it tracks legacy ServiceAccount tokens.
	go legacytokentracking.NewController(st.lb.client).RunWithContext(st.run)
	s.hooks.Finish(hookLegacyTokenTracking)
	// Service allocation, started first, is done by now (the kubernetes Service's sync needed
	// it); kube's repair hook too is waited for. A failure is logged and Service writes answer
	// 503 (kube-apiserver would exit).
	<-st.allocated
	s.hooks.Finish(hookServiceCIDR, hookServiceIPRepair)
	<-aggregated
	return nil
}

// rbacBootstrapTimeout bounds the first attempt at the RBAC bootstrap policy, which lapis's
// readiness waits for.
const rbacBootstrapTimeout = 5 * time.Second

// bootstrapRBAC puts kube's RBAC bootstrap policy in place in the background (a first start
// creates it through the objects service rather than the loopback, rbacwrites.go).
func (st *startup) bootstrapRBAC() <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(st.run, rbacBootstrapTimeout)
		defer cancel()
		done <- st.ensureRBAC(ctx)
	}()
	return done
}

// ensureRBAC puts the policy in place: kube's rbac/bootstrap-roles hook is finished then.
func (st *startup) ensureRBAC(ctx context.Context) error {
	return st.s.hooks.run(ctx, hookRBACBootstrapRoles, func(ctx context.Context) error {
		return authz.EnsureBootstrapPolicy(klog.NewContext(ctx, klog.Background()), st.lb.client, createDirect(st.s.objects))
	})
}

// kubernetesServiceSyncTimeout bounds the kubernetes Service's first sync before lapis is
// ready; Run keeps it, as kube's, afterwards.
const kubernetesServiceSyncTimeout = 2 * time.Second

// syncKubernetesService writes the kubernetes Service and its endpoints in the background;
// the channel is closed once done.
func (st *startup) syncKubernetesService() <-chan struct{} {
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		ctx, cancel := context.WithTimeout(st.run, kubernetesServiceSyncTimeout)
		defer cancel()
		if err := st.kubernetesService.Sync(ctx); err != nil && st.run.Err() == nil {
			st.s.log.Warn("the kubernetes Service before ready", "err", err)
		}
	}()
	return synced
}

// admission starts the loopback informers, builds kube's admission chain once they hold the
// server's state, and lets the writes waiting at the gate through it.
func (st *startup) admission() error {
	cfg := st.s.cfg
	if err := st.lb.start(st.run); err != nil {
		return err
	}
	st.s.hooks.Finish(hookStartInformers)
	chain, err := st.lb.buildChain(st.id.authz, st.webhooks, cfg.EnableAdmissionPlugins, cfg.DisableAdmissionPlugins, st.run.Done(), st.whenReady)
	if err != nil {
		return err
	}
	if err := st.lb.start(st.run); err != nil { // the informers the chain added
		return err
	}
	st.lb.useChain(chain)
	st.gate.use(chain)
	st.s.hooks.Finish(hookAdmissionInitializer)
	return nil
}

// ready says lapis is ready, keeps its identity Lease and the kubernetes Service from now on,
// and writes the admin kubeconfig, which exists exactly while lapis is ready.
func (st *startup) ready() error {
	s := st.s
	s.cleanup.push("readiness and kubeconfig", func(context.Context) error {
		s.ready.Store(false)
		// No client should find a kubeconfig of a server that is going away.
		return removeKubeconfig(s.cfg.DataDir)
	})
	s.ready.Store(true)
	close(st.whenReady)
	s.membership = startIdentity(st.run, st.lb.client, st.kubernetesService)
	go st.kubernetesService.Run(st.run)
	s.hooks.Finish(hookIdentityLease, hookBootstrapController)
	if !st.stopOnCancel() {
		return fmt.Errorf("stopped while starting: %w", context.Cause(st.ctx))
	}
	if err := writeKubeconfig(KubeconfigPath(s.cfg.DataDir), s.listener.Addr(), st.creds); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	s.log.Info("lapis is serving", "address", "https://"+s.listener.Addr().String(), "kubeconfig", KubeconfigPath(s.cfg.DataDir))
	return nil
}
