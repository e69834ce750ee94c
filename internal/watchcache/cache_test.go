package watchcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
)

func newTestCache(t *testing.T) (*Cache, *storage.Store) {
	t.Helper()
	b, err := storage.OpenEmbedded(context.Background(), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := storage.NewStore(b.Client)
	caches := New(ctx, store, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := caches.For("/registry/things/", func(key string) (string, string) {
		ns, name, _ := strings.Cut(strings.TrimPrefix(key, "/registry/things/"), "/")
		return ns, name
	})
	return c, store
}

func thing(name string, labels string) []byte {
	v, _ := codec.Encode(map[string]any{"apiVersion": "v1", "kind": "Thing",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app": labels}}})
	return v
}

func fresh(t *testing.T, c *Cache, s *storage.Store) {
	t.Helper()
	rev, err := s.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFresh(context.Background(), rev, 5*time.Second); err != nil {
		t.Fatalf("cache did not reach %d: %v", rev, err)
	}
}

func TestListAndGet(t *testing.T) {
	c, s := newTestCache(t)
	ctx := context.Background()
	for _, k := range []string{"a/x", "a/y", "b/z"} {
		if _, err := s.Create(ctx, "/registry/things/"+k, thing(k, "web")); err != nil {
			t.Fatal(err)
		}
	}
	fresh(t, c, s)
	entries, rev := c.List("/registry/things/a/")
	if len(entries) != 2 || entries[0].Name != "x" || entries[1].Name != "y" || entries[0].Namespace != "a" {
		t.Fatalf("list %v", entries)
	}
	if entries[0].Labels["app"] != "web" {
		t.Errorf("labels %v", entries[0].Labels)
	}
	// Values are served JSON: resourceVersion spliced in.
	if want := fmt.Sprintf(`"resourceVersion":"%d"`, entries[0].ModRevision); !strings.Contains(string(entries[0].Value), want) {
		t.Errorf("value %s lacks %s", entries[0].Value, want)
	}
	if _, _, ok := c.Get("/registry/things/b/z"); !ok {
		t.Error("get of a cached object failed")
	}
	// Progress notifications move the cache along with writes elsewhere in storage.
	if _, err := s.Create(ctx, "/registry/other/q", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	fresh(t, c, s)
	if c.Revision() <= rev {
		t.Error("revision did not advance on progress")
	}
	if err := c.WaitFresh(ctx, c.Revision()+100, 200*time.Millisecond); !errors.Is(err, ErrNotFresh) {
		t.Errorf("waiting for a future revision: %v", err)
	}
}

func TestWatchReplayAndTooOld(t *testing.T) {
	c, s := newTestCache(t)
	ctx := context.Background()
	rev1, _ := s.Create(ctx, "/registry/things/a/x", thing("x", "v1"))
	fresh(t, c, s)
	rev2, _, _ := s.Update(ctx, "/registry/things/a/x", thing("x", "v2"), rev1)
	_, _, _ = s.Delete(ctx, "/registry/things/a/x", rev2)
	fresh(t, c, s)

	// Resuming after rev1 replays the update and the deletion.
	w, _, err := c.Watch(ctx, "/registry/things/", rev1, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		e := <-w.Events()
		got = append(got, fmt.Sprintf("%d:%s", e.Type, e.Object.Labels["app"]))
	}
	w.Stop()
	if fmt.Sprint(got) != "[0:v2 1:v2]" {
		t.Errorf("replayed %v", got)
	}
	// After a compaction the history before it is gone.
	c.Compacted(rev2)
	var tooOld *TooOldError
	if _, _, err := c.Watch(ctx, "/registry/things/", rev1, false); !errors.As(err, &tooOld) || !errors.Is(err, ErrTooOld) {
		t.Errorf("watch from before the compaction: %v", err)
	}
}

func TestInitialSnapshotThenChanges(t *testing.T) {
	c, s := newTestCache(t)
	ctx := context.Background()
	rev, _ := s.Create(ctx, "/registry/things/a/x", thing("x", "one"))
	fresh(t, c, s)
	w, snap, err := c.Watch(ctx, "/registry/things/a/", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if len(snap.Objects) != 1 || snap.Revision < rev {
		t.Fatalf("snapshot %+v", snap)
	}
	if _, _, err := s.Update(ctx, "/registry/things/a/x", thing("x", "two"), rev); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.Events():
		if e.Previous == nil || e.Previous.Labels["app"] != "one" || e.Object.Labels["app"] != "two" {
			t.Errorf("event %+v", e)
		}
		// One encoding per event, shared by every watcher.
		calls := 0
		enc := func() ([]byte, error) { calls++; return []byte("x"), nil }
		_, _ = e.Encoded("v1", enc)
		_, _ = e.Encoded("v1", enc)
		if calls != 1 {
			t.Errorf("encoded %d times", calls)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
}

func TestSlowWatcherIsClosed(t *testing.T) {
	c, s := newTestCache(t)
	ctx := context.Background()
	fresh(t, c, s)
	w, _, err := c.Watch(ctx, "/registry/things/", c.Revision(), false)
	if err != nil {
		t.Fatal(err)
	}
	// Never read: after watcherBuffer events the watcher is dropped, the cache goes on.
	for i := 0; i < watcherBuffer+10; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/things/a/t%d", i), thing("t", "x")); err != nil {
			t.Fatal(err)
		}
	}
	fresh(t, c, s)
	n := 0
	for range w.Events() {
		n++
	}
	if n != watcherBuffer {
		t.Errorf("slow watcher got %d events before being closed, want %d", n, watcherBuffer)
	}
	if entries, _ := c.List("/registry/things/"); len(entries) != watcherBuffer+10 {
		t.Errorf("cache holds %d objects", len(entries))
	}
}

// Lists walk the keys under their prefix in order, whatever the order of writes, and see
// deletions and re-creations.
func TestListOrderedByKey(t *testing.T) {
	c, s := newTestCache(t)
	ctx := context.Background()
	for _, k := range []string{"a1/z", "a/y", "a10/q", "a/b", "b/c", "a/x", "a1/a"} {
		if _, err := s.Create(ctx, "/registry/things/"+k, thing(k, "web")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Delete(ctx, "/registry/things/a/x", 0); err != nil {
		t.Fatal(err)
	}
	fresh(t, c, s)
	keys := func(prefix string) string {
		entries, _ := c.List(prefix)
		var out []string
		for _, e := range entries {
			out = append(out, strings.TrimPrefix(e.Key, "/registry/things/"))
		}
		return strings.Join(out, " ")
	}
	for prefix, want := range map[string]string{
		"/registry/things/a/":  "a/b a/y",
		"/registry/things/a1/": "a1/a a1/z",
		"/registry/things/":    "a/b a/y a1/a a1/z a10/q b/c",
		"/registry/things/c/":  "",
	} {
		if got := keys(prefix); got != want {
			t.Errorf("list %s: %q, want %q", prefix, got, want)
		}
	}
}
