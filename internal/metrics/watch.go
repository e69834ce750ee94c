package metrics

import "k8s.io/apimachinery/pkg/runtime/schema"

// WatchStarted counts a watch of gvr (whose objects are of kind gvk) in
// apiserver_registered_watchers until the returned function is called; the watch handler
// calls it once the watch is registered, and done when it ends.
func (m *Metrics) WatchStarted(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (done func()) {
	g := m.registeredWatchers.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind)
	g.Inc()
	return g.Dec
}

// WatchEventSent counts one event of size bytes sent to a watch client of gvr
// (apiserver_watch_events_total, apiserver_watch_events_sizes).
func (m *Metrics) WatchEventSent(gvr schema.GroupVersionResource, size int) {
	m.watchEvents.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Inc()
	m.watchEventSizes.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Observe(float64(size))
}
