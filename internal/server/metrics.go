package server

import (
	"github.com/lapis-dev/lapis/internal/metrics"
)

// newMetrics returns the server's metrics, fed by its etcd client and its watch caches; the
// request chain and the watch handler feed the rest.
func (s *Server) newMetrics() *metrics.Metrics {
	m := metrics.New(Version)
	s.backend.ObserveRequests(m.ObserveEtcd)
	m.MeasureStorage(s.backend.DBSize)
	if caches := s.objects.WatchCaches(); caches != nil {
		m.CountObjects(caches.Counts)
	}
	return m
}
