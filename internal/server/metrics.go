package server

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/metrics"
	"github.com/lapis-dev/lapis/internal/objects"
)

// newMetrics returns the server's metrics, fed by its etcd client and its watch caches; the
// request chain and the watch handler feed the rest.
func (s *Server) newMetrics() *metrics.Metrics {
	m := metrics.New(Version)
	m.ResolveKeys(objects.NewKeyResources(s.objects.Keys(), s.objects.Catalog().Stored()).Of)
	s.backend.ObserveRequests(m.ObserveEtcd)
	m.MeasureStorage(s.backend.DBSize)
	m.ServedResources(func(group, version, resource, subresource string) bool {
		r, ok := s.objects.Catalog().Lookup(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
		return ok && r.SubresourceVerbs(subresource) != nil
	})
	if caches := s.objects.WatchCaches(); caches != nil {
		m.CountObjects(caches.Counts)
	}
	return m
}
