package allocate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	netutils "k8s.io/utils/net"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/upstream/servicealloc"
)

// Defaults of kube-apiserver's --service-cluster-ip-range and --service-node-port-range.
const (
	DefaultClusterIPRange = "10.0.0.0/24"
	DefaultNodePortRange  = "30000-32767"
)

// DefaultServiceCIDRName is the ServiceCIDR kube-apiserver keeps for its flags.
const DefaultServiceCIDRName = "kubernetes"

var (
	ipAddressesGVR  = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ipaddresses"}
	serviceCIDRsGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "servicecidrs"}
)

// Config is what kube-apiserver's service flags say.
type Config struct {
	// ClusterIPRanges are the service CIDRs, the primary (whose family is the default) first;
	// two only for dual-stack.
	ClusterIPRanges []*net.IPNet
	NodePortRange   utilnet.PortRange
}

// ParseConfig checks the flags as kube-apiserver does; empty values take kube's defaults.
func ParseConfig(clusterIPRange, nodePortRange string) (Config, error) {
	if clusterIPRange == "" {
		clusterIPRange = DefaultClusterIPRange
	}
	if nodePortRange == "" {
		nodePortRange = DefaultNodePortRange
	}
	var cfg Config
	parts := strings.Split(clusterIPRange, ",")
	if len(parts) > 2 {
		return cfg, errors.New("--service-cluster-ip-range must not contain more than two entries")
	}
	for _, p := range parts {
		_, cidr, err := netutils.ParseCIDRSloppy(strings.TrimSpace(p))
		if err != nil {
			return cfg, fmt.Errorf("--service-cluster-ip-range %q: %w", clusterIPRange, err)
		}
		if ones, bits := cidr.Mask.Size(); netutils.IsIPv6CIDR(cidr) && ones < 64 || bits-ones < 2 {
			// kube's allocator refuses IPv6 prefixes shorter than /64; a range needs a usable address.
			return cfg, fmt.Errorf("--service-cluster-ip-range %q: %s leaves no usable service addresses (IPv6 prefixes must be /64 or longer)", clusterIPRange, cidr)
		}
		cfg.ClusterIPRanges = append(cfg.ClusterIPRanges, cidr)
	}
	if len(cfg.ClusterIPRanges) == 2 {
		if dual, err := netutils.IsDualStackCIDRs(cfg.ClusterIPRanges); err != nil || !dual {
			return cfg, errors.New("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family")
		}
	}
	pr, err := utilnet.ParsePortRange(nodePortRange)
	if err != nil {
		return cfg, fmt.Errorf("--service-node-port-range %q: %w", nodePortRange, err)
	}
	cfg.NodePortRange = *pr
	return cfg, nil
}

func familyOfCIDR(cidr *net.IPNet) api.IPFamily {
	if netutils.IsIPv6CIDR(cidr) {
		return api.IPv6Protocol
	}
	return api.IPv4Protocol
}

// Start keeps the default ServiceCIDR, starts the IP and port allocators, takes the stored
// Services into account and makes them the services resource's Allocator. It returns once
// allocation works; the allocators stop with ctx.
func Start(ctx context.Context, svc *objects.Service, cfg Config) (*Services, error) {
	services, ok := svc.Catalog().Lookup(catalog.ServicesGVR)
	if !ok {
		return nil, errors.New("services are not served")
	}
	return start(ctx, svc, services, cfg)
}

// start is Start, setting services' Allocator.
func start(ctx context.Context, svc *objects.Service, services *catalog.Resource, cfg Config) (*Services, error) {
	cat := svc.Catalog()
	ips, ok2 := cat.Lookup(ipAddressesGVR)
	cidrs, ok3 := cat.Lookup(serviceCIDRsGVR)
	if !ok2 || !ok3 {
		return nil, errors.New("ipaddresses or servicecidrs are not served")
	}
	ipInformer := ipAddressInformer{newInformer(&listWatch{ctx: ctx, objects: svc, r: ips,
		newList: func() runtime.Object { return &networkingv1.IPAddressList{} },
		newObj:  func() runtime.Object { return &networkingv1.IPAddress{} }})}
	cidrInformer := serviceCIDRInformer{newInformer(&listWatch{ctx: ctx, objects: svc, r: cidrs,
		newList: func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
		newObj:  func() runtime.Object { return &networkingv1.ServiceCIDR{} }})}
	// The informers sync while the default ServiceCIDR is written (on a first start that write
	// waits for the admission chain); they stop with ctx, or at once when starting fails.
	informers, stopInformers := context.WithCancel(ctx)
	started := false
	defer func() {
		if !started {
			stopInformers()
		}
	}()
	go ipInformer.informer.RunWithContext(informers)
	go cidrInformer.informer.RunWithContext(informers)
	if err := ensureServiceCIDR(ctx, svc, cidrs, cfg); err != nil {
		return nil, fmt.Errorf("default ServiceCIDR: %w", err)
	}
	if !cache.WaitFor(ctx, "", ipInformer.informer.HasSyncedChecker(), cidrInformer.informer.HasSyncedChecker()) {
		return nil, errors.New("IPAddress and ServiceCIDR informers did not sync")
	}
	// The allocators are made once the informers have synced: kube's MetaAllocator checks their
	// sync when made and then every 100 ms (up to 100 ms lost). Their handlers get the informers'
	// objects as they register.
	client := networking{ips: ipAddresses{ctx: ctx, objects: svc, r: ips}}
	byFamily := map[api.IPFamily]ipallocator.Interface{}
	metas := make([]*ipallocator.MetaAllocator, 0, len(cfg.ClusterIPRanges))
	for _, cidr := range cfg.ClusterIPRanges {
		meta, err := ipallocator.NewMetaAllocator(client, cidrInformer, ipInformer, netutils.IsIPv6CIDR(cidr), nil)
		if err != nil {
			return nil, err
		}
		byFamily[familyOfCIDR(cidr)] = meta
		metas = append(metas, meta)
	}
	go func() {
		<-ctx.Done()
		for _, m := range metas {
			m.Destroy()
		}
	}()
	// The MetaAllocators build their per-CIDR allocators from ServiceCIDR events, asynchronously.
	for i, meta := range metas {
		first, _ := netutils.GetIndexedIP(cfg.ClusterIPRanges[i], 1)
		if err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return hasAllocator(meta, first), nil
		}); err != nil {
			return nil, fmt.Errorf("cluster IP allocator for %s did not become ready: %w", cfg.ClusterIPRanges[i], err)
		}
	}

	var nodePorts *rangeStore
	ports, err := portallocator.New(cfg.NodePortRange, func(max int, rangeSpec string, offset int) (allocator.Interface, error) {
		nodePorts = newRangeStore(ctx, svc.Store(), svc.Keys().Under(nodePortsKey), max, rangeSpec, offset)
		return nodePorts, nil
	})
	if err != nil {
		return nil, err
	}
	s := &Services{rest: servicealloc.NewREST(familyOfCIDR(cfg.ClusterIPRanges[0]), byFamily, ports)}
	if err := repair(ctx, svc, services, client.ips, nodePorts, cfg); err != nil {
		// Serving matters more (reads go on; a disk too full to write refuses writes anyway):
		// what repair could not write stays as it was, as after kube's failed repair loop.
		klog.ErrorS(err, "repairing Service allocations at start")
	}
	services.Allocator = s
	started = true
	return s, nil
}

// StartInBackground is Start without the wait: the services resource's Allocator is set at once
// and makes Service writes wait until the allocators have started (their informers and repair
// take about 100 ms), so that lapis serves without waiting for them. It must be called before
// lapis serves. The channel returned is closed once the allocators have started, or failed to.
func StartInBackground(ctx context.Context, svc *objects.Service, cfg Config, log func(error)) <-chan struct{} {
	services, ok := svc.Catalog().Lookup(catalog.ServicesGVR)
	if !ok {
		done := make(chan struct{})
		close(done)
		return done
	}
	w := &waiting{ready: make(chan struct{})}
	services.Allocator = w
	go func() {
		defer close(w.ready)
		// Start sets the resource's Allocator too; the catalogue entry is read concurrently from
		// here on, so it works on a copy and w forwards to what it makes.
		copied := *services
		w.s, w.err = start(ctx, svc, &copied, cfg)
		if w.err != nil {
			log(w.err)
		}
	}()
	return w.ready
}

// waiting is the Allocator of Services until the allocators have started.
type waiting struct {
	ready chan struct{}
	s     *Services
	err   error
}

func (w *waiting) wait(ctx context.Context) error {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return apierrors.NewServiceUnavailable("Service allocation is starting")
	}
	if w.err != nil {
		return apierrors.NewServiceUnavailable("Service allocation is not available: " + w.err.Error())
	}
	return nil
}

// Allocate implements catalog.Allocator.
func (w *waiting) Allocate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (catalog.Allocation, error) {
	if err := w.wait(ctx); err != nil {
		return nil, err
	}
	return w.s.Allocate(ctx, obj, old, dryRun)
}

// Release implements catalog.Allocator.
func (w *waiting) Release(ctx context.Context, obj *unstructured.Unstructured) {
	if w.wait(ctx) == nil {
		w.s.Release(ctx, obj)
	}
}

// hasAllocator says whether meta has a ready allocator for the CIDR holding ip.
func hasAllocator(meta *ipallocator.MetaAllocator, ip net.IP) bool {
	// A dry-run allocation of a specific address goes to the allocator holding it and checks
	// readiness and range only.
	return meta.DryRun().Allocate(ip) == nil
}

// ensureServiceCIDR creates the default ServiceCIDR and marks it ready, as kube-apiserver's
// default ServiceCIDR controller does (an existing one that differs is kept, as kube keeps it).
func ensureServiceCIDR(ctx context.Context, svc *objects.Service, r *catalog.Resource, cfg Config) error {
	specCIDRs := make([]any, len(cfg.ClusterIPRanges))
	for i, c := range cfg.ClusterIPRanges {
		specCIDRs[i] = c.String()
	}
	current, err := svc.Get(ctx, r, "", DefaultServiceCIDRName)
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
			"metadata": map[string]any{"name": DefaultServiceCIDRName},
			"spec":     map[string]any{"cidrs": specCIDRs},
		}}
		res, cerr := svc.Create(ctx, r, "", obj, objects.WriteOptions{Manager: manager})
		if cerr != nil && !apierrors.IsAlreadyExists(cerr) {
			return cerr
		}
		if cerr == nil {
			current = res.Object
		} else {
			current, err = svc.Get(ctx, r, "", DefaultServiceCIDRName)
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	conditions, _, _ := unstructured.NestedSlice(current.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == networkingv1.ServiceCIDRConditionReady {
			return nil
		}
	}
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
		"metadata": map[string]any{"name": DefaultServiceCIDRName},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": networkingv1.ServiceCIDRConditionReady, "status": string(metav1.ConditionTrue),
			"message": "Kubernetes default Service CIDR is ready", "reason": "",
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}}},
	}}
	_, err = svc.Apply(ctx, r, "", DefaultServiceCIDRName, status, objects.ApplyOptions{
		WriteOptions: objects.WriteOptions{Manager: "kubernetes-service-cidr-controller", Subresource: "status"}, Force: true})
	return err
}
