package aggregator

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/tracing"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	apiregistrationinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
	"k8s.io/kubernetes/pkg/controlplane/controller/crdregistration"

	"github.com/lapis-dev/lapis/internal/discovery"
	"github.com/lapis-dev/lapis/internal/openapi"
	upstream "github.com/lapis-dev/lapis/internal/upstream/aggregator"
)

// Config is what the aggregation layer is built from.
type Config struct {
	// Loopback reaches lapis itself: APIServices are read and written through it.
	Loopback *rest.Config
	// Core is the loopback's informer factory: Services and EndpointSlices resolve an
	// APIService's service. The caller starts it; Run starts what it adds.
	Core informers.SharedInformerFactory
	// Discovery is where the extension servers' groups are listed.
	Discovery *discovery.Handler
	// ProxyClientCertKey is the client certificate and key the proxy presents to extension
	// servers (kube's --proxy-client-cert-file and --proxy-client-key-file), current at each call.
	ProxyClientCertKey func() (cert, key []byte)
	// EndpointRouting proxies to an endpoint of an APIService's Service, not its cluster IP
	// (kube's --enable-aggregator-routing).
	EndpointRouting bool
	// Local are the group versions lapis serves itself, apart from custom resources: each gets
	// its local APIService as kube-apiserver's autoregister controller keeps them.
	Local []schema.GroupVersion
}

// apiServiceResync is kube's aggregator informers' resync period. It is also what lets the
// availability controllers' own 30 s resync of APIServices happen (an informer without one
// resyncs no handler), which notices an extension server that went away unannounced.
const apiServiceResync = 5 * time.Minute

// Aggregator is kube-apiserver's aggregation layer on lapis: it serves the group versions of
// APIServices with a service by proxying to their extension server, keeps the local
// APIServices and every APIService's Available condition, and feeds discovery.
type Aggregator struct {
	cfg       Config
	client    apiregistrationclient.Interface
	informers apiregistrationinformers.SharedInformerFactory
	resolver  upstream.ServiceResolver
	discovery upstream.DiscoveryAggregationController
	openAPI   *openAPIDocs

	autoregister autoregistration
	registration *upstream.APIServiceRegistrationController

	mu      sync.Mutex // serialises AddAPIService and RemoveAPIService, as kube's
	proxies map[string]*upstream.ProxyHandler
	routes  atomic.Pointer[map[schema.GroupVersion]http.Handler] // remote group versions' proxies
}

var _ upstream.APIHandlerManager = (*Aggregator)(nil)

// New builds the aggregation layer; Run starts it.
func New(cfg Config) (*Aggregator, error) {
	client, err := apiregistrationclient.NewForConfig(cfg.Loopback)
	if err != nil {
		return nil, fmt.Errorf("aggregator client: %w", err)
	}
	resolver, err := serviceResolver(cfg)
	if err != nil {
		return nil, err
	}
	a := &Aggregator{
		cfg: cfg, client: client, resolver: resolver,
		informers: apiregistrationinformers.NewSharedInformerFactory(client, apiServiceResync),
		discovery: upstream.NewDiscoveryManager(cfg.Discovery),
		proxies:   map[string]*upstream.ProxyHandler{},
		openAPI:   newOpenAPIDocs(),
	}
	a.routes.Store(&map[schema.GroupVersion]http.Handler{})
	if a.autoregister, err = newAutoregistration(cfg, client, a.informers); err != nil {
		return nil, err
	}
	a.registration = upstream.NewAPIServiceRegistrationController(a.informers.Apiregistration().V1().APIServices(), a)
	return a, nil
}

// CertificateListener is told when the proxy's client certificate changes: every APIService
// is handled again, with the new certificate (kube adds its registration controller as a
// listener of the certificate's files).
func (a *Aggregator) CertificateListener() dynamiccertificates.Listener { return a.registration }

// autoregistration is kube-apiserver's autoregister controller, given a local APIService for
// each built-in group version lapis serves, its CRD registration controller, which gives it
// the custom resources' versions, and its check that they have all been seen available.
type autoregistration struct {
	controller controller
	crds       interface {
		controller
		WaitForInitialSync()
	}
	crdInformers apiextensionsinformers.SharedInformerFactory
	completed    func(*http.Request) error
}

// controller is how kube's controllers run (kube keeps these two's types unexported).
type controller interface {
	Run(workers int, stopCh <-chan struct{})
}

func newAutoregistration(cfg Config, client apiregistrationclient.Interface, factory apiregistrationinformers.SharedInformerFactory) (autoregistration, error) {
	apiServices := factory.Apiregistration().V1().APIServices()
	controller := autoregister.NewAutoRegisterController(apiServices, client.ApiregistrationV1())
	priorities := upstream.KubeAPIServerPriorities()
	var locals []*apiregistrationv1.APIService
	for _, gv := range cfg.Local {
		if s := upstream.MakeAPIService(gv, priorities); s != nil {
			controller.AddAPIServiceToSyncOnStart(s)
			locals = append(locals, s)
		}
	}
	crdClient, err := apiextensionsclient.NewForConfig(cfg.Loopback)
	if err != nil {
		return autoregistration{}, fmt.Errorf("aggregator CRD client: %w", err)
	}
	crdInformers := apiextensionsinformers.NewSharedInformerFactory(crdClient, 0)
	return autoregistration{
		controller:   controller,
		crds:         crdregistration.NewCRDRegistrationController(crdInformers.Apiextensions().V1().CustomResourceDefinitions(), controller),
		crdInformers: crdInformers,
		completed:    upstream.MakeAPIServiceAvailableHealthCheck(locals, apiServices),
	}, nil
}

// serviceResolver resolves an APIService's service as kube-apiserver does
// (buildServiceResolver): at an endpoint or the cluster IP, lapis's own kubernetes Service at
// its loopback address.
func serviceResolver(cfg Config) (upstream.ServiceResolver, error) {
	services := cfg.Core.Core().V1().Services()
	var resolver upstream.ServiceResolver
	if cfg.EndpointRouting {
		slices, err := proxy.NewEndpointSliceIndexerGetter(cfg.Core.Discovery().V1().EndpointSlices())
		if err != nil {
			return nil, err
		}
		resolver = upstream.NewEndpointServiceResolver(services.Lister(), slices)
	} else {
		resolver = upstream.NewClusterIPServiceResolver(services.Lister())
	}
	if host, err := url.Parse(cfg.Loopback.Host); err == nil {
		resolver = upstream.NewLoopbackServiceResolver(resolver, host)
	}
	return resolver, nil
}

// OpenAPI is what the extension servers add to the OpenAPI documents.
func (a *Aggregator) OpenAPI() openapi.Aggregated { return a.openAPI }

// Route returns the proxy for a path of a group version an extension server serves
// (/apis/GROUP/VERSION and below).
func (a *Aggregator) Route(path string) (http.Handler, bool) {
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		return nil, false
	}
	group, rest, _ := strings.Cut(rest, "/")
	version, _, _ := strings.Cut(rest, "/")
	if group == "" || version == "" {
		return nil, false
	}
	h, ok := (*a.routes.Load())[schema.GroupVersion{Group: group, Version: version}]
	return h, ok
}

// AddAPIService starts or updates the handling of an APIService, as kube's aggregator does.
func (a *Aggregator) AddAPIService(apiService *apiregistrationv1.APIService) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.listAPIServices()
	h, exists := a.proxies[apiService.Name]
	if !exists {
		h = upstream.NewProxyHandler(nil, a.cfg.ProxyClientCertKey, nil, a.resolver, false, tracing.NewNoopTracerProvider())
		a.proxies[apiService.Name] = h
	}
	h.UpdateAPIService(apiService)
	if apiService.Spec.Service != nil {
		a.openAPI.add(apiService, h)
	} else {
		a.openAPI.remove(apiService.Name)
	}
	if exists {
		a.discovery.AddAPIService(apiService, h.AvailableCopy())
	} else {
		a.discovery.AddAPIService(apiService, h)
	}
	a.setRoute(helper.APIServiceNameToGroupVersion(apiService.Name), h, apiService.Spec.Service != nil)
	return nil
}

// RemoveAPIService stops the handling of an APIService.
func (a *Aggregator) RemoveAPIService(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.listAPIServices()
	a.discovery.RemoveAPIService(name)
	a.openAPI.remove(name)
	delete(a.proxies, name)
	a.setRoute(helper.APIServiceNameToGroupVersion(name), nil, false)
}

// setRoute proxies gv's requests with h when remote, and serves them locally otherwise.
func (a *Aggregator) setRoute(gv schema.GroupVersion, h http.Handler, remote bool) {
	old := *a.routes.Load()
	routes := make(map[schema.GroupVersion]http.Handler, len(old)+1)
	for k, v := range old {
		routes[k] = v
	}
	delete(routes, gv)
	if remote {
		routes[gv] = h
	}
	a.routes.Store(&routes)
}

// listAPIServices tells discovery every APIService there is now.
func (a *Aggregator) listAPIServices() {
	all, err := a.informers.Apiregistration().V1().APIServices().Lister().List(labels.Everything())
	if err != nil {
		return // a lister over an informer's store does not fail
	}
	a.cfg.Discovery.SetAPIServices(all)
}
