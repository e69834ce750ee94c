package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/lapis-dev/lapis/internal/aggregator"
	"github.com/lapis-dev/lapis/internal/healthz"
)

// kube-apiserver 1.37's post-start hooks whose work lapis does, by kube's names. Each is lapis's
// counterpart, finished where lapis's start-up does that work (start.go):
const (
	// the admission chain built over the loopback informers, and in use (loopback.go)
	hookAdmissionInitializer = "start-apiserver-admission-initializer"
	// the loopback informers started and synced
	hookStartInformers = "generic-apiserver-start-informers"
	// the stored CustomResourceDefinitions served, and followed (internal/crd)
	hookAPIExtensionsInformers   = "start-apiextensions-informers"
	hookAPIExtensionsControllers = "start-apiextensions-controllers"
	hookCRDInformerSynced        = "crd-informer-synced"
	// default, kube-system, kube-public and kube-node-lease made (bootstrap.EnsureNamespaces)
	hookSystemNamespaces = "start-system-namespaces-controller"
	// kube-system/extension-apiserver-authentication kept (kube's clusterauthenticationtrust
	// controller, run as is)
	hookClusterAuthenticationInfo = "start-cluster-authentication-info-controller"
	// this replica's identity Lease kept (internal/apiserverid)
	hookIdentityLease = "start-kube-apiserver-identity-lease-controller"
	// expired identity Leases deleted, by the replica holding the controllers' Lease
	hookIdentityLeaseGC = "start-kube-apiserver-identity-lease-garbage-collector"
	// kube-system/kube-apiserver-legacy-service-account-token-tracking kept (kube's
	// legacytokentracking controller, run as is)
	hookLegacyTokenTracking = "start-legacy-token-tracking-controller"
	// the stored Services' cluster IPs and node ports taken into account (internal/allocate)
	hookServiceIPRepair = "start-service-ip-repair-controllers"
	// kube's RBAC bootstrap policy in place (authz.EnsureBootstrapPolicy)
	hookRBACBootstrapRoles = "rbac/bootstrap-roles"
	// the system PriorityClasses and the APF configuration objects made (bootstrap.EnsureDefaults)
	hookSystemPriorityClasses = "scheduling/bootstrap-system-priority-classes"
	hookAPFConfigProducer     = "priority-and-fairness-config-producer"
	// the kubernetes Service and its endpoints kept (allocate.KubernetesService)
	hookBootstrapController = "bootstrap-controller"
	// --proxy-client-cert-file and --proxy-client-key-file reloaded when they change (listed by
	// kube only when they are given)
	hookReloadProxyClientCert = "aggregator-reload-proxy-client-cert"
	// the default ServiceCIDR made (internal/allocate)
	hookServiceCIDR = "start-kubernetes-service-cidr-controller"
)

// kubeHookOrder is the order kube-apiserver 1.37 registers those hooks in, which its health
// endpoints list them in (its /readyz?verbose).
var kubeHookOrder = []string{
	hookAdmissionInitializer,
	hookStartInformers,
	hookAPIExtensionsInformers,
	hookAPIExtensionsControllers,
	hookCRDInformerSynced,
	hookSystemNamespaces,
	hookClusterAuthenticationInfo,
	hookIdentityLease,
	hookIdentityLeaseGC,
	hookLegacyTokenTracking,
	hookServiceIPRepair,
	hookRBACBootstrapRoles,
	hookSystemPriorityClasses,
	hookAPFConfigProducer,
	hookBootstrapController,
	hookServiceCIDR,
	aggregator.HookInformers,
	aggregator.HookLocalAvailability,
	aggregator.HookRemoteAvailability,
	aggregator.HookRegistration,
	aggregator.HookDiscovery,
	aggregator.HookAutoregistration,
	aggregator.CheckAutoregistered, // a readiness check among the hooks, as kube lists it
	aggregator.HookOpenAPI,
	aggregator.HookOpenAPIV3,
}

// kubeHooks is kubeHookOrder for a configuration: kube lists its proxy certificate's reload
// hook before the aggregator's when the certificate's files are given.
func kubeHooks(cfg Config) []string {
	if cfg.ProxyClientCertFile == "" || cfg.ProxyClientKeyFile == "" {
		return kubeHookOrder
	}
	i := slices.Index(kubeHookOrder, aggregator.HookInformers)
	return slices.Concat(kubeHookOrder[:i], []string{hookReloadProxyClientCert}, kubeHookOrder[i:])
}

// postStartHooks records which post-start hooks have finished, for the health checks: as
// kube's, each is listed as poststarthook/<name> and fails until its work is done (or, for a
// controller, started). All have finished by the time lapis is ready, but the RBAC policy's
// when its first attempt failed: /readyz fails until a retry puts it in place, as kube's.
type postStartHooks struct {
	order []string
	mu    sync.Mutex
	done  map[string]chan struct{}
	// checks that kube lists among its hooks (autoregister-completion), by name
	plain map[string]func(*http.Request) error
}

func newPostStartHooks(names []string) *postStartHooks {
	h := &postStartHooks{order: names, done: make(map[string]chan struct{}, len(names))}
	for _, n := range names {
		h.done[n] = make(chan struct{})
	}
	return h
}

// run does work and marks the hook name finished when it succeeds, as kube runs a hook.
func (h *postStartHooks) run(ctx context.Context, name string, work func(context.Context) error) error {
	if err := work(ctx); err != nil {
		return err
	}
	h.Finish(name)
	return nil
}

// Finish marks the hooks named finished; marking one again does nothing.
func (h *postStartHooks) Finish(names ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range names {
		if done, ok := h.done[n]; ok && !isClosed(done) {
			close(done)
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// errHookNotFinished is kube's answer for a hook that has not returned yet.
var errHookNotFinished = errors.New("not finished")

// addCheck puts a health check that is not a hook in name's place in the order.
func (h *postStartHooks) addCheck(name string, check func(*http.Request) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.plain == nil {
		h.plain = map[string]func(*http.Request) error{}
	}
	h.plain[name] = check
}

// checks are the hooks' health checks, in kube's order.
func (h *postStartHooks) checks() []healthz.Check {
	checks := make([]healthz.Check, 0, len(h.order))
	for _, name := range h.order {
		if check, ok := h.plain[name]; ok {
			checks = append(checks, healthz.Check{Name: name, Run: check})
			continue
		}
		done := h.done[name]
		checks = append(checks, healthz.Check{Name: "poststarthook/" + name, Run: func(*http.Request) error {
			if !isClosed(done) {
				return errHookNotFinished
			}
			return nil
		}})
	}
	return checks
}
