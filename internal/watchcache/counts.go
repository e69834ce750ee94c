package watchcache

// Counts returns, for each cache that has loaded its prefix, the prefix and the number of
// objects under it (what /metrics reports as stored object counts).
func (cs *Caches) Counts() map[string]int {
	cs.mu.Lock()
	caches := make([]*Cache, 0, len(cs.caches))
	for _, c := range cs.caches {
		caches = append(caches, c)
	}
	cs.mu.Unlock()
	out := make(map[string]int, len(caches))
	for _, c := range caches {
		if n, ok := c.Len(); ok {
			out[c.prefix] = n
		}
	}
	return out
}

// Len returns the number of objects the cache holds, and false until it has loaded them.
func (c *Cache) Len() (int, bool) {
	select {
	case <-c.ready:
	default:
		return 0, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.objects), true
}
