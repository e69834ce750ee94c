package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	compbasemetrics "k8s.io/component-base/metrics"
)

// ObserveEtcd records one etcd request (etcd_request_duration_seconds, etcd_requests_total,
// etcd_request_errors_total): operation as kube names it (get, list, create, update, delete,
// getCurrentResourceVersion), on key, started at start, failed with err.
func (m *Metrics) ObserveEtcd(operation, key string, start time.Time, err error) {
	gr := m.keys.of(key)
	m.etcdLatency.WithLabelValues(operation, gr.Group, gr.Resource).Observe(time.Since(start).Seconds())
	m.etcdRequests.WithLabelValues(operation, gr.Group, gr.Resource).Inc()
	if err != nil {
		m.etcdErrors.WithLabelValues(operation, gr.Group, gr.Resource).Inc()
	}
}

// ResolveKeys makes etcd and object-count metrics label a storage key or prefix with the
// resource of, which knows the server's key layout (its etcd prefix; built-in resources'
// prefixes carry no group). Until it is set, and for keys it gives no resource, the labels are
// empty.
func (m *Metrics) ResolveKeys(of func(key string) schema.GroupResource) { m.keys.f.Store(&of) }

// keyResolver is the resolver ResolveKeys set, shared by the etcd and object-count metrics.
type keyResolver struct {
	f atomic.Pointer[func(key string) schema.GroupResource]
}

func (k *keyResolver) of(key string) schema.GroupResource {
	if f := k.f.Load(); f != nil {
		return (*f)(key)
	}
	return schema.GroupResource{}
}

// CountObjects makes the stored object counts (apiserver_storage_objects and
// apiserver_resource_objects) come from counts, called at each scrape: storage prefix → the
// number of objects under it. Resources it does not name are not reported.
func (m *Metrics) CountObjects(counts func() map[string]int) { m.objects.counts.Store(&counts) }

// objectCounts reports stored object counts per resource when scraped, as kube's
// storage-object-count tracker does every minute.
type objectCounts struct {
	compbasemetrics.BaseStableCollector
	keys       *keyResolver
	counts     atomic.Pointer[func() map[string]int]
	storage    *compbasemetrics.Desc
	byResource *compbasemetrics.Desc
}

func newObjectCounts(keys *keyResolver) *objectCounts {
	return &objectCounts{
		keys: keys,
		// Deprecated since 1.34 and so hidden by kube-apiserver 1.37 unless
		// --show-hidden-metrics-for-version=1.36: served as kube serves it then (component-base
		// would hide it given its deprecated version), because its users still scrape it.
		storage: compbasemetrics.NewDesc("apiserver_storage_objects",
			"(Deprecated since 1.34.0) [DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
			[]string{"resource"}, nil, compbasemetrics.STABLE, ""),
		byResource: compbasemetrics.NewDesc("apiserver_resource_objects",
			"Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
			[]string{"group", "resource"}, nil, compbasemetrics.ALPHA, ""),
	}
}

func (c *objectCounts) DescribeWithStability(ch chan<- *compbasemetrics.Desc) {
	ch <- c.storage
	ch <- c.byResource
}

func (c *objectCounts) CollectWithStability(ch chan<- compbasemetrics.Metric) {
	counts := c.counts.Load()
	if counts == nil {
		return
	}
	for prefix, n := range (*counts)() {
		gr := c.keys.of(prefix)
		if gr.Resource == "" {
			continue
		}
		ch <- compbasemetrics.NewLazyConstMetric(c.storage, compbasemetrics.GaugeValue, float64(n), gr.String())
		ch <- compbasemetrics.NewLazyConstMetric(c.byResource, compbasemetrics.GaugeValue, float64(n), gr.Group, gr.Resource)
	}
}

// MeasureStorage makes apiserver_storage_size_bytes come from size, asked at each scrape with
// kube's timeout of a second (no sample when it fails, as kube's).
func (m *Metrics) MeasureStorage(size func(context.Context) (int64, error)) {
	m.storageSize.size.Store(&size)
}

// storageSize reports the etcd database's size, as kube's storage monitor collector: one
// storage cluster, "etcd-0".
type storageSize struct {
	compbasemetrics.BaseStableCollector
	size atomic.Pointer[func(context.Context) (int64, error)]
	desc *compbasemetrics.Desc
}

func newStorageSize() *storageSize {
	return &storageSize{desc: compbasemetrics.NewDesc("apiserver_storage_size_bytes",
		"Size of the storage database file physically allocated in bytes.",
		[]string{"storage_cluster_id"}, nil, compbasemetrics.STABLE, "")}
}

func (c *storageSize) DescribeWithStability(ch chan<- *compbasemetrics.Desc) { ch <- c.desc }

func (c *storageSize) CollectWithStability(ch chan<- compbasemetrics.Metric) {
	size := c.size.Load()
	if size == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := (*size)(ctx)
	if err != nil {
		return
	}
	ch <- compbasemetrics.NewLazyConstMetric(c.desc, compbasemetrics.GaugeValue, float64(n), "etcd-0")
}
