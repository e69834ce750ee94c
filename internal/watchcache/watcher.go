package watchcache

import (
	"context"
	"strings"
	"sync"
)

// Watcher receives the changes under a key prefix after a revision.
type Watcher struct {
	prefix string
	after  int64
	events chan *Event
	once   sync.Once
	done   chan struct{}
	cache  *Cache
}

// Events delivers changes in revision order. It is closed when the watch stops: by Stop, because
// the watcher fell too far behind, or because the cache had to start over.
func (w *Watcher) Events() <-chan *Event { return w.events }

// After is the revision the watch starts after.
func (w *Watcher) After() int64 { return w.after }

// Stop ends the watch.
func (w *Watcher) Stop() {
	w.cache.mu.Lock()
	delete(w.cache.watchers, w)
	w.cache.mu.Unlock()
	w.stop()
}

func (w *Watcher) stop() { w.once.Do(func() { close(w.events) }) }

// deliver hands e to the watcher without ever blocking the cache; a watcher with no room left
// is closed. The cache's lock is held.
func (w *Watcher) deliver(e *Event, c *Cache) {
	if e.Revision <= w.after || !strings.HasPrefix(e.Object.Key, w.prefix) {
		return
	}
	select {
	case w.events <- e:
	default:
		delete(c.watchers, w)
		w.stop()
	}
}

// Snapshot is the state a watch starts from when it asks for initial events.
type Snapshot struct {
	Objects  []*Entry
	Revision int64
}

// Watch starts a watch of the keys under prefix. With initial true it returns the current
// objects and streams what changes after them; otherwise it streams every change after revision
// after (waiting for changes not yet seen), failing with a *TooOldError when the history no
// longer reaches back that far.
func (c *Cache) Watch(ctx context.Context, prefix string, after int64, initial bool) (*Watcher, Snapshot, error) {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, Snapshot{}, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &Watcher{prefix: prefix, cache: c, done: make(chan struct{})}
	var snap Snapshot
	var replay []*Event
	if initial {
		snap = Snapshot{Objects: c.listLocked(prefix), Revision: c.revision}
		w.after = c.revision
	} else {
		if after < c.oldest {
			return nil, Snapshot{}, &TooOldError{Requested: after, Oldest: c.oldest + 1}
		}
		w.after = after
		for _, e := range c.history {
			if e.Revision > after && strings.HasPrefix(e.Object.Key, prefix) {
				replay = append(replay, e)
			}
		}
	}
	w.events = make(chan *Event, watcherBuffer+len(replay))
	for _, e := range replay {
		w.events <- e
	}
	c.watchers[w] = struct{}{}
	return w, snap, nil
}
