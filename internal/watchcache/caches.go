package watchcache

import (
	"context"
	"log/slog"
	"sync"

	"github.com/lapis-dev/lapis/internal/storage"
)

// Caches holds one Cache per storage prefix, each started on first use.
type Caches struct {
	ctx    context.Context
	store  *storage.Store
	budget *Budget
	log    *slog.Logger

	mu     sync.Mutex
	caches map[string]*Cache
}

// New returns an empty set of caches whose feeds run until ctx ends; their histories hold at
// most historyBytes of objects together (DefaultHistoryBytes when historyBytes <= 0).
func New(ctx context.Context, store *storage.Store, historyBytes int64, log *slog.Logger) *Caches {
	return &Caches{ctx: ctx, store: store, budget: NewBudget(historyBytes), log: log, caches: map[string]*Cache{}}
}

// For returns the cache of prefix, starting it if needed; split tells a key's namespace and name.
func (cs *Caches) For(prefix string, split func(key string) (namespace, name string)) *Cache {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.caches[prefix]; ok {
		return c
	}
	c := newCache(cs.store, prefix, split, cs.budget, cs.log)
	cs.caches[prefix] = c
	go c.run(cs.ctx)
	return c
}

// Compacted tells every cache that storage history up to revision is gone.
func (cs *Caches) Compacted(revision int64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.caches {
		c.Compacted(revision)
	}
}
