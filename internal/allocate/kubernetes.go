package allocate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	netutils "k8s.io/utils/net"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// KubernetesServiceName is the Service in `default` through which Pods reach the API server.
const KubernetesServiceName = "kubernetes"

// endpointInterval is kube-apiserver's DefaultEndpointReconcilerInterval.
const endpointInterval = 10 * time.Second

var (
	endpointsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	endpointSlicesGVR = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
)

// KubernetesService keeps the `kubernetes` Service, its Endpoints and its EndpointSlice, as
// kube-apiserver's kubernetesservice controller and lease endpoint reconciler do for a single
// API server: the Service (first IP of the primary range, port 443 to lapis's port) is created
// when missing and never updated; the Endpoints and EndpointSlice list lapis's address.
type KubernetesService struct {
	objects   *objects.Service
	log       *slog.Logger
	serviceIP net.IP
	publicIP  net.IP
	port      int
	// peers, when set, lists the live API servers sharing the storage (host:port), as the
	// lease endpoint reconciler's master leases do; this one is listed whatever it says.
	peers func(context.Context) ([]string, error)
	// leases, when set, are kube's master leases: this API server keeps its own, and the
	// kube-apiservers that keep theirs are listed too (at this one's port, as kube assumes).
	leases *masterLeases
	left   atomic.Bool // this API server is stopping: its endpoint is gone
}

// Leave takes this API server out of the Endpoints and EndpointSlice for good, as kube's lease
// reconciler's RemoveEndpoints does on a graceful stop; its live peers stay.
func (k *KubernetesService) Leave(ctx context.Context) error {
	k.left.Store(true)
	if k.leases != nil {
		if err := k.leases.remove(ctx, k.publicIP.String()); err != nil {
			return err
		}
	}
	cat := k.objects.Catalog()
	endpoints, ok1 := cat.Lookup(endpointsGVR)
	slices, ok2 := cat.Lookup(endpointSlicesGVR)
	if !ok1 || !ok2 {
		return nil
	}
	return k.syncEndpoints(ctx, endpoints, slices)
}

// UsePeers makes the Endpoints and EndpointSlice list every live API server peers tells of,
// not this one alone. It must be called before Run.
func (k *KubernetesService) UsePeers(peers func(context.Context) ([]string, error)) { k.peers = peers }

// UseMasterLeases makes this API server keep its master lease and list the API servers that
// keep theirs, as kube's lease endpoint reconciler does. It must be called before Run.
func (k *KubernetesService) UseMasterLeases() {
	k.leases = &masterLeases{store: k.objects.Store(), prefix: k.objects.Keys().Under("masterleases/")}
}

// Address is where this API server is reached (host:port), as its endpoint says.
func (k *KubernetesService) Address() string {
	return net.JoinHostPort(k.publicIP.String(), strconv.Itoa(k.port))
}

// NewKubernetesService is the controller for a lapis serving at addr.
func NewKubernetesService(svc *objects.Service, cfg Config, addr net.Addr, log *slog.Logger) (*KubernetesService, error) {
	host, portText, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, err
	}
	// kube's --advertise-address default: the bind address, or the host's default interface
	// when bound to all interfaces or to loopback (Endpoints refuse loopback addresses).
	public, err := utilnet.ResolveBindAddress(netutils.ParseIPSloppy(host))
	if err != nil {
		return nil, fmt.Errorf("the kubernetes Service's endpoint address: %w", err)
	}
	serviceIP, err := netutils.GetIndexedIP(cfg.ClusterIPRanges[0], 1)
	if err != nil {
		return nil, err
	}
	return &KubernetesService{objects: svc, log: log, serviceIP: serviceIP, publicIP: public, port: port}, nil
}

// Run reconciles every endpointInterval until ctx ends.
func (k *KubernetesService) Run(ctx context.Context) {
	for {
		wait := endpointInterval
		if err := k.Sync(ctx); err != nil && ctx.Err() == nil {
			k.log.Warn("syncing the kubernetes Service", "err", err)
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Sync is one pass: the Service, then its Endpoints and EndpointSlice.
func (k *KubernetesService) Sync(ctx context.Context) error {
	cat := k.objects.Catalog()
	services, ok1 := cat.Lookup(catalog.ServicesGVR)
	endpoints, ok2 := cat.Lookup(endpointsGVR)
	slices, ok3 := cat.Lookup(endpointSlicesGVR)
	if !ok1 || !ok2 || !ok3 {
		return errors.New("services, endpoints or endpointslices are not served")
	}
	var renewed error
	if k.leases != nil && !k.left.Load() {
		renewed = k.leases.renew(ctx, k.publicIP.String())
	}
	return errors.Join(k.syncService(ctx, services), renewed, k.syncEndpoints(ctx, endpoints, slices))
}

func (k *KubernetesService) syncService(ctx context.Context, r *catalog.Resource) error {
	if _, err := k.objects.Get(ctx, r, "default", KubernetesServiceName); !apierrors.IsNotFound(err) {
		return err
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": KubernetesServiceName, "namespace": "default",
			"labels": map[string]any{"provider": "kubernetes", "component": "apiserver"}},
		"spec": map[string]any{
			"ports":           []any{map[string]any{"name": "https", "protocol": "TCP", "port": int64(443), "targetPort": int64(k.port)}},
			"clusterIP":       k.serviceIP.String(),
			"ipFamilyPolicy":  "SingleStack",
			"sessionAffinity": "None",
			"type":            "ClusterIP",
		},
	}}
	_, err := k.objects.Create(ctx, r, "default", svc, objects.WriteOptions{Manager: manager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// syncEndpoints is the lease reconciler's doReconcile, the live API servers being this one and
// its peers, and kube's EndpointsAdapter mirroring the Endpoints' first subset into the
// EndpointSlice. API servers normally share a port (one subset); one subset per port otherwise.
func (k *KubernetesService) syncEndpoints(ctx context.Context, endpoints, slices *catalog.Resource) error {
	byPort, err := k.live(ctx)
	if err != nil {
		return err
	}
	subsets := []any{}
	for _, port := range sortedKeys(byPort) {
		addresses := make([]any, 0, len(byPort[port]))
		for _, ip := range byPort[port] {
			addresses = append(addresses, map[string]any{"ip": ip})
		}
		subsets = append(subsets, map[string]any{"addresses": addresses, "ports": httpsPorts(port)})
	}
	wantEndpoints := map[string]any{
		"labels":  map[string]any{"endpointslice.kubernetes.io/skip-mirror": "true"},
		"subsets": subsets,
	}
	if err := k.ensure(ctx, endpoints, "Endpoints", "v1", wantEndpoints); err != nil {
		return err
	}
	addressType := "IPv4"
	if netutils.IsIPv6(k.publicIP) {
		addressType = "IPv6"
	}
	first := k.port // no API server left: no endpoints, this one's port
	if ports := sortedKeys(byPort); len(ports) > 0 {
		first = ports[0]
	}
	sliceEndpoints := []any{}
	for _, ip := range byPort[first] {
		if netutils.IsIPv6String(ip) == (addressType == "IPv6") {
			sliceEndpoints = append(sliceEndpoints, map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}})
		}
	}
	wantSlice := map[string]any{
		"labels":      map[string]any{"kubernetes.io/service-name": KubernetesServiceName},
		"addressType": addressType,
		"endpoints":   sliceEndpoints,
		"ports":       httpsPorts(first),
	}
	return k.ensure(ctx, slices, "EndpointSlice", "discovery.k8s.io/v1", wantSlice)
}

// live is the live API servers' IPs (sorted) by port, this one among them unless it left.
func (k *KubernetesService) live(ctx context.Context) (map[int][]string, error) {
	var addrs []string
	if !k.left.Load() {
		addrs = append(addrs, k.Address())
	}
	if k.peers != nil {
		peers, err := k.peers(ctx)
		if err != nil {
			return nil, fmt.Errorf("live API servers: %w", err)
		}
		for _, p := range peers {
			if !k.left.Load() || p != k.Address() {
				addrs = append(addrs, p)
			}
		}
	}
	if k.leases != nil {
		ips, err := k.leases.ips(ctx)
		if err != nil {
			return nil, fmt.Errorf("master leases: %w", err)
		}
		for _, ip := range ips {
			if a := net.JoinHostPort(ip, strconv.Itoa(k.port)); !k.left.Load() || a != k.Address() {
				addrs = append(addrs, a)
			}
		}
	}
	byPort := map[int][]string{}
	for _, a := range addrs {
		host, portText, err := net.SplitHostPort(a)
		ip := netutils.ParseIPSloppy(host)
		port, perr := strconv.Atoi(portText)
		if err != nil || perr != nil || ip == nil {
			continue // not an address: skipped, as the reconciler skips bad master leases
		}
		if !slices.Contains(byPort[port], ip.String()) {
			byPort[port] = append(byPort[port], ip.String())
		}
	}
	for _, ips := range byPort {
		slices.Sort(ips)
	}
	return byPort, nil
}

func sortedKeys(m map[int][]string) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func httpsPorts(port int) []any {
	return []any{map[string]any{"name": "https", "port": int64(port), "protocol": "TCP"}}
}

// ensure creates default/kubernetes of r with the top-level fields want (labels go into
// metadata), or updates it when they differ.
func (k *KubernetesService) ensure(ctx context.Context, r *catalog.Resource, kind, apiVersion string, want map[string]any) error {
	current, err := k.objects.Get(ctx, r, "default", KubernetesServiceName)
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": KubernetesServiceName, "namespace": "default"}}}
		apply(obj, want)
		_, err = k.objects.Create(ctx, r, "default", obj, objects.WriteOptions{Manager: manager})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	desired := current.DeepCopy()
	apply(desired, want)
	if reflect.DeepEqual(desired.Object, current.Object) {
		return nil
	}
	_, err = k.objects.Update(ctx, r, "default", KubernetesServiceName, func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		out := live.DeepCopy()
		apply(out, want)
		return out, nil
	}, objects.WriteOptions{Manager: manager})
	return err
}

func apply(obj *unstructured.Unstructured, want map[string]any) {
	for field, v := range want {
		if field == "labels" {
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			for key, value := range v.(map[string]any) {
				labels[key] = value.(string)
			}
			obj.SetLabels(labels)
			continue
		}
		obj.Object[field] = v
	}
}
