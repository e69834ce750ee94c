package aggregator

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	localavailability "k8s.io/kube-aggregator/pkg/controllers/status/local"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"
	remoteavailability "k8s.io/kube-aggregator/pkg/controllers/status/remote"
)

// kube-apiserver's names for the aggregation layer's post-start hooks, in the order it
// registers them, and its readiness check of the local APIServices.
const (
	HookInformers           = "start-kube-aggregator-informers"
	HookLocalAvailability   = "apiservice-status-local-available-controller"
	HookRemoteAvailability  = "apiservice-status-remote-available-controller"
	HookRegistration        = "apiservice-registration-controller"
	HookDiscovery           = "apiservice-discovery-controller"
	HookAutoregistration    = "kube-apiserver-autoregistration"
	CheckAutoregistered     = "autoregister-completion"
	HookOpenAPI             = "apiservice-openapi-controller"
	HookOpenAPIV3           = "apiservice-openapiv3-controller"
	syncPoll                = 5 * time.Millisecond
	availabilityWorkers     = 5 // kube's
	autoregistrationWorkers = 5 // kube's
)

// Hooks are told when each of kube's post-start hooks has done its work.
type Hooks interface {
	Finish(names ...string)
}

// Run starts the aggregation layer's informers and controllers as kube-apiserver's post-start
// hooks start them, telling hooks as each is done; they run until ctx ends. It returns once
// the APIServices are registered and discovery has fetched every extension server's groups.
func (a *Aggregator) Run(ctx context.Context, hooks Hooks) error {
	apiServices := a.informers.Apiregistration().V1().APIServices()
	metrics := availabilitymetrics.New()
	localAvailability, err := localavailability.New(apiServices, a.client.ApiregistrationV1(), metrics)
	if err != nil {
		return err
	}
	remoteAvailability, err := remoteavailability.New(apiServices, a.cfg.Core.Core().V1().Services(), a.cfg.Core.Discovery().V1().EndpointSlices(),
		a.client.ApiregistrationV1(), nil, a.cfg.ProxyClientCertKey, a.resolver, metrics)
	if err != nil {
		return err
	}
	a.informers.Start(ctx.Done())
	a.cfg.Core.Start(ctx.Done())
	a.autoregister.crdInformers.Start(ctx.Done())
	crds := a.autoregister.crdInformers.Apiextensions().V1().CustomResourceDefinitions().Informer()
	// Not cache.WaitForCacheSync, which looks every 100 ms: the first lists take a few, and
	// lapis's readiness waits for them (the CRDs' for the autoregistration, whose controllers
	// then find it synced at their first look).
	if err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		return apiServices.Informer().HasSynced() && crds.HasSynced(), nil
	}); err != nil {
		return fmt.Errorf("aggregator informers: %w", err)
	}
	hooks.Finish(HookInformers)
	go localAvailability.Run(availabilityWorkers, ctx.Done())
	go remoteAvailability.Run(availabilityWorkers, ctx.Done())
	hooks.Finish(HookLocalAvailability, HookRemoteAvailability)

	registered := make(chan struct{})
	go a.registration.Run(ctx.Done(), registered)
	if err := waitFor(ctx, registered); err != nil {
		return err
	}
	hooks.Finish(HookRegistration)
	discoverySynced := make(chan struct{})
	go a.discovery.Run(ctx.Done(), discoverySynced)
	if err := waitFor(ctx, discoverySynced); err != nil {
		return err
	}
	hooks.Finish(HookDiscovery)
	go a.autoregistration(ctx)
	hooks.Finish(HookAutoregistration)
	go a.openAPI.run(ctx)
	hooks.Finish(HookOpenAPI, HookOpenAPIV3)
	return nil
}

// autoregistration runs kube-apiserver's autoregister and CRD registration controllers as kube
// does, the CRDs' first.
func (a *Aggregator) autoregistration(ctx context.Context) {
	go a.autoregister.crds.Run(autoregistrationWorkers, ctx.Done())
	// As kube: the CRDs' APIServices are known before the autoregister controller's first
	// sync, which would otherwise delete them.
	a.autoregister.crds.WaitForInitialSync()
	a.autoregister.controller.Run(autoregistrationWorkers, ctx.Done())
}

// Autoregistered is kube's autoregister-completion readiness check: it fails until every local
// APIService has been seen available.
func (a *Aggregator) Autoregistered(r *http.Request) error {
	return a.autoregister.completed(r)
}

func waitFor(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
