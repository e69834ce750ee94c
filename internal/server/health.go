package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/lapis-dev/lapis/internal/healthz"
	"github.com/lapis-dev/lapis/internal/storage"
)

// kube-apiserver's defaults for --etcd-healthcheck-timeout and --etcd-readycheck-timeout.
const (
	etcdHealthcheckTimeout = 2 * time.Second
	etcdReadycheckTimeout  = 2 * time.Second
)

// healthSources is what the health checks ask.
type healthSources struct {
	store                  *storage.Store
	ready, informersSynced func() bool
	loopbackExpiry         time.Time       // when the loopback's serving certificate expires
	hooks                  []healthz.Check // kube's post-start hooks that lapis runs (hooks.go)
}

// newHealth returns kube-apiserver's checks for the parts lapis runs, named and ordered as
// kube's: ping; log (logging is not blocked); in /healthz and /livez, loopback-serving-
// certificate; etcd in all three; in /readyz only, etcd-readiness and informer-sync (the
// informers lapis authorizes with hold their first list: until then RBAC denies what it would
// allow); then kube's post-start hooks that lapis runs, and /readyz's shutdown last.
func newHealth(src healthSources) healthz.Endpoints {
	readEtcd := func(ctx context.Context) error {
		_, err := src.store.Revision(ctx)
		return err
	}
	ping := healthz.Check{Name: "ping", Run: func(*http.Request) error { return nil }}
	log := healthz.Check{Name: "log", Run: (&healthz.LogProbe{Flush: klog.Flush, Now: time.Now}).Check}
	loopback := healthz.Check{Name: "loopback-serving-certificate", Run: func(*http.Request) error {
		if time.Now().After(src.loopbackExpiry) {
			return errLoopbackCertificateExpired
		}
		return nil
	}}
	etcd := healthz.Check{Name: "etcd", Run: (&healthz.EtcdProbe{Read: readEtcd, Timeout: etcdHealthcheckTimeout}).Check}
	etcdReady := healthz.Check{Name: "etcd-readiness", Run: (&healthz.EtcdProbe{Read: readEtcd, Timeout: etcdReadycheckTimeout}).Check}
	informers := healthz.Check{Name: "informer-sync", Run: func(*http.Request) error {
		if !src.informersSynced() {
			return errors.New("informers not started yet")
		}
		return nil
	}}
	shutdown := healthz.Check{Name: "shutdown", Run: func(*http.Request) error {
		if !src.ready() {
			return errors.New("process is shutting down")
		}
		return nil
	}}
	return healthz.Endpoints{
		"/healthz": slices.Concat([]healthz.Check{ping, log, loopback, etcd}, src.hooks),
		"/livez":   slices.Concat([]healthz.Check{ping, log, loopback, etcd}, src.hooks),
		"/readyz":  slices.Concat([]healthz.Check{ping, log, etcd, etcdReady, informers}, src.hooks, []healthz.Check{shutdown}),
	}
}

// errLoopbackCertificateExpired is kube's (options.LoopbackCertificateExpiredError): the
// certificate lapis's own client trusts has expired, and a restart makes a new one.
var errLoopbackCertificateExpired = errors.New("loopback serving certificate is expired")

// informersSynced is what /readyz's informer-sync check asks: whether the informers z
// authorizes with (RBAC's) hold their first list; an authorizer without any has none to wait for.
func informersSynced(z authorizer.Authorizer) func() bool {
	if s, ok := z.(interface{ HasSynced() bool }); ok {
		return s.HasSynced
	}
	return func() bool { return true }
}
