package watchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
)

// Entry is one object, with what filtering needs parsed once. Its Value is the JSON served for
// it at the version it is stored at: the stored value with its resourceVersion spliced in, so a
// list from the cache is a concatenation. An entry never changes: a change makes a new one.
type Entry struct {
	storage.KeyValue
	Namespace, Name string
	Labels          labels.Set

	encodings memo
}

// Encoded returns encode's result for this object and key (an encoding of it other than its
// JSON, say Protobuf), computing it once for as long as the object is unchanged.
func (e *Entry) Encoded(key string, encode func() ([]byte, error)) ([]byte, error) {
	return e.encodings.get(key, encode)
}

// Event is one change. Watchers share it; Encoded memoizes per-version encodings.
type Event struct {
	Type     storage.EventType
	Revision int64
	// Object is the object after the change; for a deletion, the object as it was.
	Object *Entry
	// Previous is the object before the change (nil when it was created).
	Previous *Entry

	encodings memo
}

// Encoded returns encode's result for this event and version key, computing it once.
func (e *Event) Encoded(version string, encode func() ([]byte, error)) ([]byte, error) {
	return e.encodings.get(version, encode)
}

// memo keeps encodings by key.
type memo struct {
	mu      sync.Mutex
	encoded map[string][]byte
}

func (m *memo) get(key string, encode func() ([]byte, error)) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.encoded[key]; ok {
		return b, nil
	}
	b, err := encode()
	if err != nil {
		return nil, err
	}
	if m.encoded == nil {
		m.encoded = map[string][]byte{}
	}
	m.encoded[key] = b
	return b, nil
}

// Errors callers turn into API errors.
var (
	// ErrTooOld: the requested revision is older than the retained history (410 Gone).
	ErrTooOld = errors.New("too old resource version")
	// ErrNotFresh: the cache did not reach the requested revision in time (504).
	ErrNotFresh = errors.New("too large resource version")
)

// TooOldError says which revision was asked for and which is the oldest still served.
type TooOldError struct{ Requested, Oldest int64 }

func (e *TooOldError) Error() string {
	return fmt.Sprintf("too old resource version: %d (%d)", e.Requested, e.Oldest)
}
func (e *TooOldError) Unwrap() error { return ErrTooOld }

// Limits on memory.
const (
	// historySize is how many recent changes a cache keeps for watches that resume; the bytes
	// of objects all caches' histories hold together are bounded too (a Budget).
	historySize = 1024
	// DefaultHistoryBytes is the default Budget of all histories together.
	DefaultHistoryBytes = 64 << 20
	// watcherBuffer is how many events a watcher may lag behind before it is closed.
	watcherBuffer = 1024
)

// Budget bounds the bytes of objects the histories of a set of caches hold together: a cache
// that goes over it forgets its own oldest events until all fit (keeping its newest one), so
// a resource written heavily gives up history rather than memory growing.
type Budget struct {
	limit int64
	held  atomic.Int64
}

// NewBudget returns a budget of limit bytes (DefaultHistoryBytes when limit <= 0).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultHistoryBytes
	}
	return &Budget{limit: limit}
}

func (b *Budget) over() bool { return b.held.Load() > b.limit }

// Cache mirrors the objects under one storage prefix.
type Cache struct {
	store  *storage.Store
	prefix string
	split  func(key string) (namespace, name string)
	log    *slog.Logger

	ready chan struct{}

	mu      sync.RWMutex
	objects map[string]*Entry
	// ordered holds objects' entries by key: a list walks the keys under its prefix in order
	// instead of scanning and sorting every object of the resource.
	ordered  *btree.BTreeG[*Entry]
	revision int64    // the cache reflects storage as of this revision
	oldest   int64    // watches may resume after any revision >= oldest
	history  []*Event // the latest changes, oldest first
	// historyHeld is the bytes of the objects of history's events (see eventBytes), which
	// budget counts with every other cache's.
	historyHeld int
	budget      *Budget
	watchers    map[*Watcher]struct{}
	advanced    chan struct{} // closed (and replaced) whenever revision advances
}

func newCache(store *storage.Store, prefix string, split func(string) (string, string), budget *Budget, log *slog.Logger) *Cache {
	return &Cache{store: store, prefix: prefix, split: split, budget: budget, log: log, ready: make(chan struct{}),
		objects: map[string]*Entry{}, ordered: newOrdered(), watchers: map[*Watcher]struct{}{}, advanced: make(chan struct{})}
}

func (c *Cache) entry(kv storage.KeyValue) *Entry {
	ns, name := c.split(kv.Key)
	if kv.Corrupt != nil {
		// Kept, so that reads and lists of it answer as kube's do; never served.
		c.log.Error("an object in etcd cannot be read; reads and lists that include it fail until it is deleted (with ignoreStoreReadErrorWithClusterBreakingPotential)",
			"key", kv.Key, "revision", kv.ModRevision, "err", kv.Corrupt.Err)
		return &Entry{KeyValue: kv, Namespace: ns, Name: name}
	}
	var meta struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(kv.Value, &meta)
	if served, ok := codec.Served(kv.Value, kv.ModRevision); ok {
		kv.Value = served
	}
	return &Entry{KeyValue: kv, Namespace: ns, Name: name, Labels: meta.Metadata.Labels}
}

// run keeps the cache in step with storage until ctx ends: list, then watch; on any failure,
// list again (closing the watchers, which then resume from their last revision).
func (c *Cache) run(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := c.store.List(ctx, c.prefix, storage.ListOptions{})
		if err != nil {
			c.log.Warn("watch cache list failed", "prefix", c.prefix, "err", err)
			sleep(ctx, time.Second)
			continue
		}
		c.reset(list)
		batches, errc := c.store.Watch(ctx, c.prefix, list.Revision)
		for b := range batches {
			c.apply(b)
		}
		select {
		case err := <-errc:
			if ctx.Err() == nil {
				c.log.Warn("watch cache restarting", "prefix", c.prefix, "err", err)
			}
		default:
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (c *Cache) reset(list storage.ListResult) {
	objects := make(map[string]*Entry, len(list.Items))
	ordered := newOrdered()
	for _, kv := range list.Items {
		e := c.entry(kv)
		objects[kv.Key] = e
		ordered.ReplaceOrInsert(e)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects, c.ordered = objects, ordered
	c.budget.held.Add(-int64(c.historyHeld))
	c.history, c.historyHeld = nil, 0
	c.oldest = list.Revision
	for w := range c.watchers {
		w.stop() // their view has a gap: they resume from their last revision
	}
	c.watchers = map[*Watcher]struct{}{}
	c.advance(list.Revision)
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

// advance records a new revision and wakes whoever waits for one. Callers hold mu.
func (c *Cache) advance(rev int64) {
	if rev <= c.revision {
		return
	}
	c.revision = rev
	close(c.advanced)
	c.advanced = make(chan struct{})
}

func (c *Cache) apply(b storage.WatchBatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range b.Events {
		e := &Event{Type: ev.Type, Revision: ev.KV.ModRevision}
		if prev, ok := c.objects[ev.KV.Key]; ok {
			e.Previous = prev
		}
		if ev.Type == storage.Deleted {
			if e.Previous == nil && ev.Previous.Value != nil {
				e.Previous = c.entry(ev.Previous)
			}
			if e.Previous == nil {
				continue
			}
			e.Object = e.Previous
			delete(c.objects, ev.KV.Key)
			c.ordered.Delete(e.Previous)
		} else {
			e.Object = c.entry(ev.KV)
			c.objects[ev.KV.Key] = e.Object
			c.ordered.ReplaceOrInsert(e.Object)
		}
		c.remember(e)
		for w := range c.watchers {
			w.deliver(e, c)
		}
	}
	c.advance(b.Revision)
}

// remember adds an event to the history, forgetting the oldest past historySize events or
// while the histories of all caches hold more than their budget.
func (c *Cache) remember(e *Event) {
	c.history = append(c.history, e)
	c.historyHeld += eventBytes(e)
	c.budget.held.Add(int64(eventBytes(e)))
	for len(c.history) > historySize || (c.budget.over() && len(c.history) > 1) {
		c.forgetOldest()
	}
}

// forgetOldest drops the oldest event: watches can no longer resume at or before it.
func (c *Cache) forgetOldest() {
	e := c.history[0]
	c.history[0] = nil // let the object go
	c.history = c.history[1:]
	c.historyHeld -= eventBytes(e)
	c.budget.held.Add(-int64(eventBytes(e)))
	c.oldest = e.Revision
}

// eventBytes is the memory an event keeps: its object's value (entries are shared between an
// event and the cache's current objects; this counts every version once per event, an upper
// bound).
func eventBytes(e *Event) int { return len(e.Object.Value) }

// Compacted drops history at or before revision: resuming there must fail as it does in etcd.
func (c *Cache) Compacted(revision int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if revision <= c.oldest {
		return
	}
	for len(c.history) > 0 && c.history[0].Revision <= revision {
		c.forgetOldest()
	}
	c.oldest = revision
}

// Revision is the revision the cache reflects.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.revision
}

// WaitFresh waits until the cache reflects revision, asking etcd for progress if nothing else
// moves it; it fails with ErrNotFresh after timeout.
func (c *Cache) WaitFresh(ctx context.Context, revision int64, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case <-c.ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-deadline.C:
		return ErrNotFresh
	}
	asked := false
	for {
		c.mu.RLock()
		rev, advanced := c.revision, c.advanced
		c.mu.RUnlock()
		if rev >= revision {
			return nil
		}
		if !asked {
			_ = c.store.RequestProgress(context.Background())
			asked = true
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return ErrNotFresh
		case <-time.After(50 * time.Millisecond):
			asked = false // progress requests can be lost in a reconnect: ask again
		}
	}
}

// List returns the objects whose keys start with prefix, in key order, and the revision they
// reflect.
func (c *Cache) List(prefix string) ([]*Entry, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.listLocked(prefix), c.revision
}

func (c *Cache) listLocked(prefix string) []*Entry {
	var out []*Entry
	c.ordered.AscendGreaterOrEqual(&Entry{KeyValue: storage.KeyValue{Key: prefix}}, func(e *Entry) bool {
		if !strings.HasPrefix(e.Key, prefix) {
			return false
		}
		out = append(out, e)
		return true
	})
	return out
}

func newOrdered() *btree.BTreeG[*Entry] {
	return btree.NewG(32, func(a, b *Entry) bool { return a.Key < b.Key })
}

// Get returns the object at key as the cache has it.
func (c *Cache) Get(key string) (*Entry, int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.objects[key]
	return e, c.revision, ok
}
