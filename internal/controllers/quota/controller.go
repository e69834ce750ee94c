package quota

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/kubernetes/pkg/controller/resourcequota"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"

	"github.com/lapis-dev/lapis/internal/objects"
)

// kube-controller-manager's defaults: --concurrent-resource-quota-syncs,
// --resource-quota-sync-period, and how often it rediscovers resources (custom resources come
// and go).
const (
	workers          = 5
	fullResync       = 5 * time.Minute
	discoveryPeriod  = 30 * time.Second
	controllerClient = "kube-controller-manager/resourcequota-controller" // its field manager
)

// wholeObjects are the resources kube's evaluators and update filter read beyond metadata.
var wholeObjects = map[schema.GroupResource]bool{
	{Resource: "pods"}:                                     true,
	{Resource: "services"}:                                 true,
	{Resource: "persistentvolumeclaims"}:                   true,
	{Group: "resource.k8s.io", Resource: "resourceclaims"}: true,
}

// Run keeps ResourceQuota status until ctx ends. config reaches lapis itself (the loopback);
// shared is the typed informer factory admission reads through, already started.
func Run(ctx context.Context, config *rest.Config, shared informers.SharedInformerFactory, log *slog.Logger) error {
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(log.Handler()))
	c, sync, err := newController(ctx, config, shared)
	if err != nil {
		return err
	}
	go c.Sync(ctx, sync, discoveryPeriod)
	c.Run(ctx, workers)
	return nil
}

// newController builds kube's controller as kube-controller-manager does (its
// newResourceQuotaController), and starts the informers it asked for.
func newController(ctx context.Context, config *rest.Config, shared informers.SharedInformerFactory) (*resourcequota.Controller, resourcequota.NamespacedResourcesFunc, error) {
	config = rest.CopyConfig(config)
	config.UserAgent = controllerClient
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("quota controller client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("quota controller discovery: %w", err)
	}
	metaClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("quota controller metadata client: %w", err)
	}
	factory := &informerFactory{
		typed:    shared,
		metadata: metadatainformer.NewSharedInformerFactoryWithOptions(metaClient, 0, metadatainformer.WithTransform(trimManagedFields)),
	}
	quotaConfig, err := quotainstall.NewQuotaConfigurationForControllers(generic.ListerFuncForResourceFunc(factory.ForResource), shared)
	if err != nil {
		return nil, nil, fmt.Errorf("quota configuration: %w", err)
	}
	started := make(chan struct{})
	c, err := resourcequota.NewController(ctx, &resourcequota.ControllerOptions{
		QuotaClient:               client.CoreV1(),
		ResourceQuotaInformer:     shared.Core().V1().ResourceQuotas(),
		ResyncPeriod:              controller.StaticResyncPeriodFunc(fullResync),
		InformerFactory:           factory,
		ReplenishmentResyncPeriod: controller.NoResyncPeriodFunc, // informers already started cannot resync; fullResync recounts
		DiscoveryFunc:             disc.ServerPreferredNamespacedResources,
		IgnoredResourcesFunc:      quotaConfig.IgnoredResources,
		InformersStarted:          started,
		Registry:                  generic.NewRegistry(quotaConfig.Evaluators()),
		UpdateFilter:              quotainstall.DefaultUpdateFilter(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("quota controller: %w", err)
	}
	factory.Start(ctx.Done())
	close(started)
	return c, disc.ServerPreferredNamespacedResources, nil
}

// informerFactory is kube-controller-manager's typed-or-metadata informer factory, typed only
// for wholeObjects.
type informerFactory struct {
	typed    informers.SharedInformerFactory
	metadata metadatainformer.SharedInformerFactory
}

func (f *informerFactory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	if wholeObjects[gvr.GroupResource()] {
		if i, err := f.typed.ForResource(gvr); err == nil {
			return i, nil
		}
	}
	return f.metadata.ForResource(gvr), nil
}

func (f *informerFactory) Start(stop <-chan struct{}) {
	f.typed.Start(stop)
	f.metadata.Start(stop)
}

// trimManagedFields is kube-controller-manager's informer transform.
func trimManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// RunOnceNeeded is Run, started when the first ResourceQuota appears: until then kube's
// controller would have nothing to do, and its informers (some thirty resources' metadata)
// would only cost memory.
func RunOnceNeeded(ctx context.Context, svc *objects.Service, config *rest.Config, shared informers.SharedInformerFactory, log *slog.Logger) error {
	quotas, ok := svc.Catalog().Lookup(schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"})
	if !ok {
		return nil
	}
	seen := make(chan struct{})
	var once sync.Once
	follow, stop := context.WithCancel(ctx)
	go svc.Follow(follow, quotas, func(_ *unstructured.Unstructured, deleted bool) {
		if !deleted {
			once.Do(func() { close(seen) })
		}
	})
	select {
	case <-ctx.Done():
		stop()
		return nil
	case <-seen:
		stop()
	}
	return Run(ctx, config, shared, log)
}
