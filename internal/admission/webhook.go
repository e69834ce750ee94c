package admission

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	"k8s.io/apiserver/pkg/util/proxy"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// ServiceResolver finds where a webhook's service reference is served (kube's).
type ServiceResolver = webhookutil.ServiceResolver

// syncTimeout bounds how long the first webhook called through a Service waits for the
// Services and EndpointSlices to be read.
const syncTimeout = 10 * time.Second

// NewServiceResolver resolves a Service reference to one of the Service's ready endpoints, read
// from its EndpointSlices, as kube-apiserver does with --enable-aggregator-routing (lapis runs no
// proxy: a cluster IP would lead nowhere). The kubernetes Service (default/kubernetes:443)
// resolves to loopbackHost (lapis's own https://host:port; "" for none), as kube-apiserver
// resolves it. The Services and EndpointSlices informers start, in factory, with the first
// webhook called through a Service: until then lapis holds neither.
func NewServiceResolver(factory informers.SharedInformerFactory, loopbackHost string, stop <-chan struct{}) (ServiceResolver, error) {
	r := &endpointResolver{factory: factory, stop: stop}
	if loopbackHost != "" {
		u, err := url.Parse(loopbackHost)
		if err != nil {
			return nil, fmt.Errorf("loopback host %q: %w", loopbackHost, err)
		}
		r.loopback = u
	}
	return r, nil
}

type endpointResolver struct {
	factory  informers.SharedInformerFactory
	stop     <-chan struct{}
	loopback *url.URL // where the kubernetes Service is; nil: resolved as any Service

	mu       sync.Mutex
	services corelisters.ServiceLister // nil until first used
	slices   proxy.EndpointSliceGetter
	synced   []cache.InformerSynced
}

// ResolveEndpoint is kube-aggregator's endpoint routing (NewEndpointServiceResolver) behind
// its loopback resolver (NewLoopbackServiceResolver), over informers started on first use.
func (r *endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if r.loopback != nil && namespace == metav1.NamespaceDefault && name == "kubernetes" && port == 443 {
		return r.loopback, nil
	}
	services, slices, synced, err := r.start()
	if err != nil {
		return nil, err
	}
	if err := r.waitForSync(synced); err != nil {
		return nil, err
	}
	return proxy.ResolveEndpoint(services, slices, namespace, name, port)
}

// start makes the informers, once.
func (r *endpointResolver) start() (corelisters.ServiceLister, proxy.EndpointSliceGetter, []cache.InformerSynced, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.services != nil {
		return r.services, r.slices, r.synced, nil
	}
	services := r.factory.Core().V1().Services()
	slices := r.factory.Discovery().V1().EndpointSlices()
	getter, err := proxy.NewEndpointSliceIndexerGetter(slices)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("endpointslices: %w", err)
	}
	r.services, r.slices = services.Lister(), getter
	r.synced = []cache.InformerSynced{services.Informer().HasSynced, slices.Informer().HasSynced}
	r.factory.Start(r.stop) // starts only the informers not yet running
	return r.services, r.slices, r.synced, nil
}

func (r *endpointResolver) waitForSync(synced []cache.InformerSynced) error {
	all := func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	}
	if done, _ := all(context.Background()); done {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, all); err != nil {
		return fmt.Errorf("services and endpointslices not read yet: %w", err)
	}
	return nil
}

// newWebhookInitializer gives the webhook plugins kube-apiserver's service resolution and
// credentials: none of lapis's for webhooks (kube-apiserver without an admission
// kubeconfig), the loopback's for the kubernetes Service, which is lapis itself.
func newWebhookInitializer(loopback *rest.Config, services ServiceResolver) admission.PluginInitializer {
	var wrapper webhookutil.AuthenticationInfoResolverWrapper
	if loopback != nil {
		wrapper = webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, loopback, noop.NewTracerProvider())
	}
	return webhookinit.NewPluginInitializer(wrapper, services)
}
