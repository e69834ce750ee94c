package allocate

import (
	"context"
	"encoding/json"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	networkingv1informers "k8s.io/client-go/informers/networking/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	networkingv1listers "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// manager is the field manager of what kube-apiserver writes through its loopback client.
const manager = "kube-apiserver"

// listWatch lists and watches a resource through the objects pipeline, for in-process informers
// (kube's allocator reads IPAddresses and ServiceCIDRs through informers).
type listWatch struct {
	ctx     context.Context
	objects *objects.Service
	r       *catalog.Resource
	newList func() runtime.Object
	newObj  func() runtime.Object
}

func (lw *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	items, raw, err := lw.objects.List(lw.ctx, lw.r, "", objects.ListOptions{ResourceVersion: opts.ResourceVersion})
	if err != nil {
		return nil, err
	}
	contents := make([]any, len(items))
	for i, item := range items {
		contents[i] = item.Object
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": raw.ResourceVersion}, "items": contents})
	if err != nil {
		return nil, err
	}
	list := lw.newList()
	return list, json.Unmarshal(data, list)
}

func (lw *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(lw.ctx)
	events, err := lw.objects.Watch(ctx, lw.r, "", objects.ListOptions{ResourceVersion: opts.ResourceVersion, AllowWatchBookmarks: opts.AllowWatchBookmarks})
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan watch.Event)
	w := watch.NewProxyWatcher(out)
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case <-w.StopChan():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				var obj runtime.Object
				if ev.Type == watch.Error {
					obj = &metav1.Status{}
				} else {
					obj = lw.newObj()
				}
				if err := json.Unmarshal(ev.Object, obj); err != nil {
					return
				}
				select {
				case out <- watch.Event{Type: ev.Type, Object: obj}:
				case <-w.StopChan():
					return
				}
			}
		}
	}()
	return w, nil
}

// IsWatchListSemanticsUnSupported keeps reflectors on list-then-watch, which is all listWatch does.
func (lw *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

func newInformer(lw *listWatch) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(lw, lw.newObj(), 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// ipAddressInformer and serviceCIDRInformer are client-go's informer interfaces over listWatch.
type ipAddressInformer struct{ informer cache.SharedIndexInformer }

func (i ipAddressInformer) Informer() cache.SharedIndexInformer { return i.informer }
func (i ipAddressInformer) Lister() networkingv1listers.IPAddressLister {
	return networkingv1listers.NewIPAddressLister(i.informer.GetIndexer())
}

type serviceCIDRInformer struct{ informer cache.SharedIndexInformer }

func (i serviceCIDRInformer) Informer() cache.SharedIndexInformer { return i.informer }
func (i serviceCIDRInformer) Lister() networkingv1listers.ServiceCIDRLister {
	return networkingv1listers.NewServiceCIDRLister(i.informer.GetIndexer())
}

var (
	_ networkingv1informers.IPAddressInformer   = ipAddressInformer{}
	_ networkingv1informers.ServiceCIDRInformer = serviceCIDRInformer{}
)

// networking is the networking.k8s.io/v1 client kube's ipallocator writes IPAddresses with
// (Create, Get, Delete), served in-process by the objects pipeline; nothing else of the
// interface is used.
type networking struct {
	networkingv1client.NetworkingV1Interface
	ips ipAddresses
}

func (n networking) IPAddresses() networkingv1client.IPAddressInterface { return n.ips }

type ipAddresses struct {
	networkingv1client.IPAddressInterface
	ctx     context.Context // kube's allocator passes context.Background(): lapis's run context instead
	objects *objects.Service
	r       *catalog.Resource
}

func (c ipAddresses) Create(_ context.Context, ip *networkingv1.IPAddress, _ metav1.CreateOptions) (*networkingv1.IPAddress, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ip)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion("networking.k8s.io/v1")
	u.SetKind("IPAddress")
	res, err := c.objects.Create(c.ctx, c.r, "", u, objects.WriteOptions{Manager: manager})
	if err != nil {
		return nil, err
	}
	return toIPAddress(res.Object)
}

func (c ipAddresses) Get(_ context.Context, name string, _ metav1.GetOptions) (*networkingv1.IPAddress, error) {
	u, err := c.objects.Get(c.ctx, c.r, "", name)
	if err != nil {
		return nil, err
	}
	return toIPAddress(u)
}

func (c ipAddresses) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	_, err := c.objects.Delete(c.ctx, c.r, "", name, objects.DeleteOptions{})
	return err
}

func toIPAddress(u *unstructured.Unstructured) (*networkingv1.IPAddress, error) {
	ip := &networkingv1.IPAddress{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ip); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("IPAddress %q: %w", u.GetName(), err))
	}
	return ip, nil
}

func metaType(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}
