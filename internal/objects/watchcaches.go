package objects

import "github.com/lapis-dev/lapis/internal/watchcache"

// WatchCaches returns the watch caches the service reads from, nil if none (for /metrics'
// stored object counts).
func (s *Service) WatchCaches() *watchcache.Caches { return s.caches }
