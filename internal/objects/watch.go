package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

// WatchEvent is one event of a watch, its object already encoded as JSON. Watchers of the same
// change at the same version share the encoded bytes.
type WatchEvent struct {
	Type   watch.EventType
	Object json.RawMessage
}

// bookmarkInterval is how often a watch that allows bookmarks is told how far it has come;
// kube-apiserver also sends one shortly (bookmarkBeforeTimeout) before the watch times out, so
// the client can resume from there.
const (
	bookmarkInterval      = time.Minute
	bookmarkBeforeTimeout = 2 * time.Second
)

// bookmarkTimer fires when a watch's next bookmark is due: every bookmarkInterval, and once
// shortly before the watch's timeout. A watch without bookmarks never fires.
type bookmarkTimer struct {
	deadline time.Time // zero: no timeout
	timer    *time.Timer
}

func newBookmarkTimer(opts ListOptions, now time.Time) *bookmarkTimer {
	b := &bookmarkTimer{}
	if !opts.AllowWatchBookmarks {
		return b
	}
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		b.deadline = now.Add(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	b.next(now)
	return b
}

// next schedules the bookmark after now, if one is still due before the deadline.
func (b *bookmarkTimer) next(now time.Time) {
	at := now.Add(bookmarkInterval)
	if !b.deadline.IsZero() {
		if pre := b.deadline.Add(-bookmarkBeforeTimeout); pre.Before(at) {
			at = pre
		}
		if !at.After(now) {
			b.stop()
			b.timer = nil
			return
		}
	}
	b.stop()
	b.timer = time.NewTimer(at.Sub(now))
}

func (b *bookmarkTimer) c() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C
}

func (b *bookmarkTimer) stop() {
	if b.timer != nil {
		b.timer.Stop()
	}
}

// initialEventsEnd marks the bookmark that ends a watch's initial events (sendInitialEvents).
const initialEventsEnd = "k8s.io/initial-events-end"

// Watch streams changes to the objects opts selects in namespace ("" for all): with no
// resourceVersion (the most recent state) or "0" (any state) it starts with an ADDED event for
// each object, with a resourceVersion it streams the changes after it. sendInitialEvents starts
// with the objects at a state not older than resourceVersion and marks their end with a bookmark.
func (s *Service) Watch(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions) (<-chan WatchEvent, error) {
	f, err := s.newFilter(r, &opts)
	if err != nil {
		return nil, err
	}
	if s.caches == nil {
		return s.watchStorage(ctx, r, namespace, opts, f)
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	initial := sendInitial || opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	var after int64
	var c *watchcache.Cache
	if initial {
		c, err = s.freshCache(ctx, r, opts.ResourceVersion)
		if errors.Is(err, errUseStorage) && !sendInitial {
			return s.watchStorage(ctx, r, namespace, opts, f)
		}
		if err != nil {
			return nil, err
		}
	} else {
		if after, err = parseRevision(opts.ResourceVersion); err != nil {
			return nil, err
		}
		c = s.cacheOf(r)
	}
	w, snap, err := c.Watch(ctx, s.keys.list(r, namespace), after, initial)
	var tooOld *watchcache.TooOldError
	switch {
	case errors.As(err, &tooOld) && r.WatchesFromStorage:
		// Older than the cache's memory: storage may still have the history (or answers 410).
		return s.watchStorage(ctx, r, namespace, opts, f)
	case tooOld != nil:
		// kube's watch cache answers so (its message names the revision its history starts
		// after), and clients list again.
		out := make(chan WatchEvent, 1)
		out <- errorEvent(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", tooOld.Requested, tooOld.Oldest-1)))
		close(out)
		return out, nil
	case err != nil:
		return nil, storageError(r, "", err)
	}
	out := make(chan WatchEvent, 64)
	go s.streamCached(ctx, r, f, opts, w, snap, sendInitial, out)
	return out, nil
}

func (s *Service) streamCached(ctx context.Context, r *catalog.Resource, f *filter, opts ListOptions, w *watchcache.Watcher,
	snap watchcache.Snapshot, sendInitial bool, out chan<- WatchEvent) {
	defer close(out)
	defer w.Stop()
	send := sender(ctx, out)
	for _, e := range snap.Objects {
		if e.Corrupt != nil || !s.matchesEntry(r, f, e) {
			continue // a corrupt object is never sent: reads and lists name it
		}
		raw, err := s.rawFromEntry(r, e, e.ModRevision)
		if err != nil || !send(WatchEvent{Type: watch.Added, Object: raw}) {
			return
		}
	}
	last := snap.Revision
	start := w.After()
	if sendInitial && !send(WatchEvent{Type: watch.Bookmark, Object: bookmark(r, last, true)}) {
		return
	}
	bookmarks := newBookmarkTimer(opts, time.Now())
	defer bookmarks.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-bookmarks.c():
			// Like kube-apiserver, bookmark once the watch has moved past where it started.
			if rev := s.cacheOf(r).Revision(); rev >= last && rev > start {
				last = rev
				if !send(WatchEvent{Type: watch.Bookmark, Object: bookmark(r, rev, false)}) {
					return
				}
			}
			bookmarks.next(time.Now())
		case e, ok := <-w.Events():
			if !ok {
				return // fell behind, or the cache started over: the client resumes from last
			}
			last = e.Revision
			typ, show := s.eventType(r, f, e)
			if !show || e.Object.Corrupt != nil || (e.Previous != nil && e.Previous.Corrupt != nil && typ == watch.Deleted) {
				continue
			}
			// An object leaving the selection is reported as it was while selected (kube's
			// cache watcher does so), at the revision of the change.
			shown, key := e.Object, r.GroupVersion.String()
			if typ == watch.Deleted && e.Type != storage.Deleted {
				shown, key = e.Previous, key+"/left-selection"
			}
			raw, err := e.Encoded(key, func() ([]byte, error) { return s.rawFromEntry(r, shown, e.Revision) })
			if err != nil {
				send(errorEvent(apierrors.NewInternalError(err)))
				return
			}
			if !send(WatchEvent{Type: typ, Object: raw}) {
				return
			}
		}
	}
}

// eventType is what a watcher with filter f sees of a change: an object moving out of the
// selection is DELETED, moving in ADDED.
func (s *Service) eventType(r *catalog.Resource, f *filter, e *watchcache.Event) (watch.EventType, bool) {
	if e.Type == storage.Deleted {
		return watch.Deleted, s.matchesEntry(r, f, e.Object)
	}
	now := s.matchesEntry(r, f, e.Object)
	before := e.Previous != nil && s.matchesEntry(r, f, e.Previous)
	switch {
	case now && before:
		return watch.Modified, true
	case now:
		return watch.Added, true
	case before:
		return watch.Deleted, true
	}
	return "", false
}

// bookmark is a BOOKMARK event's object: the resource's kind with only a resourceVersion (and
// the initial-events-end annotation where it ends a watch's initial events).
func bookmark(r *catalog.Resource, rev int64, initialEnd bool) json.RawMessage {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(r.GroupVersionKind())
	u.SetResourceVersion(revisionString(rev))
	if initialEnd {
		u.SetAnnotations(map[string]string{initialEventsEnd: "true"})
	}
	raw, _ := u.MarshalJSON()
	return raw
}

// watchStorage watches etcd directly: when no cache is in use, or for resourceVersions older
// than the cache remembers.
func (s *Service) watchStorage(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions, f *filter) (<-chan WatchEvent, error) {
	out := make(chan WatchEvent, 64)
	var initial [][]byte
	start, err := parseRevision(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if start == 0 {
		list, err := s.ListRaw(ctx, r, namespace, ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
		if err != nil {
			return nil, err
		}
		initial = list.Items
		start, _ = parseRevision(list.ResourceVersion)
	}
	batches, errc := s.store.Watch(ctx, s.keys.list(r, namespace), start)
	go func() {
		defer close(out)
		send := sender(ctx, out)
		for _, raw := range initial {
			if !send(WatchEvent{Type: watch.Added, Object: raw}) {
				return
			}
		}
		for batch := range batches {
			for _, ev := range batch.Events {
				we, ok, err := s.watchEvent(r, f, ev)
				if err != nil {
					send(errorEvent(apierrors.NewInternalError(err)))
					return
				}
				if ok && !send(we) {
					return
				}
			}
		}
		select {
		case err := <-errc:
			if errors.Is(err, storage.ErrCompacted) {
				send(errorEvent(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", start))))
			}
		default:
		}
	}()
	return out, nil
}

// watchEvent translates a storage change into what a watcher with filter f sees.
func (s *Service) watchEvent(r *catalog.Resource, f *filter, ev storage.Event) (WatchEvent, bool, error) {
	decode := func(kv storage.KeyValue) (*unstructured.Unstructured, error) {
		if kv.Value == nil {
			return nil, nil
		}
		return s.fromStorage(r, kv)
	}
	cur, err := decode(ev.KV)
	if err != nil {
		return WatchEvent{}, false, err
	}
	prev, err := decode(ev.Previous)
	if err != nil {
		return WatchEvent{}, false, err
	}
	matches := func(obj *unstructured.Unstructured, key string) bool {
		return obj != nil && (f.everything() || f.matches(key, obj))
	}
	var typ watch.EventType
	obj := cur
	switch {
	case ev.Type == storage.Deleted:
		if !matches(prev, ev.Previous.Key) {
			return WatchEvent{}, false, nil
		}
		typ, obj = watch.Deleted, prev
		// A deleted object is reported at the revision of its deletion, as kube-apiserver does.
		obj.SetResourceVersion(revisionString(ev.KV.ModRevision))
	case matches(cur, ev.KV.Key) && matches(prev, ev.Previous.Key):
		typ = watch.Modified
	case matches(cur, ev.KV.Key):
		typ = watch.Added
	case matches(prev, ev.Previous.Key):
		// Leaving the selection: reported as it was while selected, at this change's revision.
		typ, obj = watch.Deleted, prev
		obj.SetResourceVersion(revisionString(ev.KV.ModRevision))
	default:
		return WatchEvent{}, false, nil
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return WatchEvent{}, false, err
	}
	return WatchEvent{Type: typ, Object: raw}, true, nil
}

// sender returns a send to out that gives up (false) once ctx ends.
func sender(ctx context.Context, out chan<- WatchEvent) func(WatchEvent) bool {
	return func(ev WatchEvent) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

func errorEvent(err *apierrors.StatusError) WatchEvent {
	status := err.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	raw, _ := json.Marshal(status)
	return WatchEvent{Type: watch.Error, Object: raw}
}
