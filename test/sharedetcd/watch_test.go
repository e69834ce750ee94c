package sharedetcd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// watchWindow is how long watches are read for events that should not come.
const watchWindow = 2 * time.Second

// watchEvent is one event of a watch, its object decoded.
type watchEvent struct {
	Type   string
	Object map[string]any
}

// watched is what one watch delivered until it was stopped.
type watched struct {
	refused string // "CODE: body" when the watch was not established
	events  []watchEvent
}

// watchAll watches every resource of rs on s from the resourceVersion rv gives it, until
// stop is closed, and returns what each delivered, by resource id.
func watchAll(t *testing.T, s *server, rs []resource, rv func(resource) string, stop <-chan struct{}) func() map[string]*watched {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]*watched{}
	for _, r := range rs {
		w := &watched{}
		got[r.id()] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchOne(ctx, s, r, rv(r), w, &mu)
		}()
	}
	return func() map[string]*watched {
		<-stop
		cancel()
		wg.Wait()
		return got
	}
}

func watchOne(ctx context.Context, s *server, r resource, rv string, w *watched, mu *sync.Mutex) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.config.Host+r.listPath()+"?watch=1&allowWatchBookmarks=false&resourceVersion="+rv, nil)
	if err != nil {
		w.refused = err.Error()
		return
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			w.refused = err.Error()
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.StatusCode, ": ")
		buf := make([]byte, 600)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		w.refused = b.String()
		return
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			return
		}
		mu.Lock()
		w.events = append(w.events, ev)
		mu.Unlock()
	}
}

// checkStaleWatch watches every resource on s, the second server, from the resourceVersion of
// the first server's list of it (want), for watchWindow. kube-apiserver 1.37 answers such a
// watch, after a restart, with an ERROR event 410 Expired "too old resource version": its watch
// cache starts at the revision it listed at start (k8s.io/apiserver's cacher,
// watchCacheHistory.GetIntervalLocked), and the first server's last writes (and the second's
// start) came after the recorded list. Events (core and events.k8s.io) have no watch cache
// (kubeapiserver.DefaultWatchCacheSizes): their watch is etcd's, from that revision. Nothing
// stale may come: no event of an object but the server-own.
//
// kube's watch cache answers 410 only to a resourceVersion older than the revision it listed at
// (watch_cache.go, getAllEventsSinceLocked): one at least since, the revision etcd was at when
// s started (a snapshot taken right after the recording), may be answered with nothing instead.
func checkStaleWatch(t *testing.T, s *server, rs []resource, want *recording, since int64) {
	t.Helper()
	stop := make(chan struct{})
	results := watchAll(t, s, rs, func(r resource) string { return want.lists[r.id()].rv }, stop)
	time.Sleep(watchWindow)
	close(stop)
	got := results()
	var notExpired, expiredEvents []string
	for _, r := range rs {
		w, rv := got[r.id()], want.lists[r.id()].rv
		if w.refused != "" {
			t.Errorf("%s: watch from resourceVersion %s: refused: %s", r.id(), rv, w.refused)
			continue
		}
		expired, objects := staleEvents(r, w.events)
		if expired && r.name == "configmaps" {
			t.Logf("%s: watch from %s: %s", r.id(), rv, shorten(w.events[0].Object, 300))
		}
		if len(objects) > 0 {
			t.Errorf("%s: watch from the first server's list resourceVersion %s delivered (%s):\n\t%s", r.id(), rv, s.name, strings.Join(objects, "\n\t"))
		}
		switch uncached := r.name == "events"; {
		case uncached && expired:
			expiredEvents = append(expiredEvents, r.id())
		case !uncached && !expired && olderThan(rv, since):
			notExpired = append(notExpired, fmt.Sprintf("%s (from %s: %d events)", r.id(), rv, len(w.events)))
		}
	}
	if len(notExpired) > 0 {
		t.Errorf("watches from the first server's list resourceVersion (before %s started) not answered 410 Expired, as kube-apiserver answers them:\n\t%s", s.name, strings.Join(notExpired, "\n\t"))
	}
	if len(expiredEvents) > 0 {
		t.Errorf("watches answered 410 Expired, which kube-apiserver, with no watch cache for them, watches from etcd: %s", strings.Join(expiredEvents, ", "))
	}
}

// staleEvents tells whether a watch was answered 410 Expired, and describes the events of
// objects it delivered but server-own ones.
func staleEvents(r resource, events []watchEvent) (expired bool, objects []string) {
	for _, ev := range events {
		if ev.Type == "ERROR" && ev.Object["reason"] == "Expired" && fmt.Sprint(ev.Object["code"]) == "410" {
			expired = true
			continue
		}
		if md, _ := ev.Object["metadata"].(map[string]any); md == nil || !serverOwn(r, md) {
			objects = append(objects, describeEvent(ev))
		}
	}
	return expired, objects
}

// checkFreshWatch watches every resource on s from the resourceVersion of s's own list of it,
// writes one ConfigMap through s, and checks that exactly its ADDED event comes, on the
// ConfigMaps' watch, and nothing on the others but server-own objects.
func checkFreshWatch(t *testing.T, s *server, rs []resource, probe string) {
	t.Helper()
	rvs := map[string]string{}
	for _, r := range rs {
		var list struct {
			Metadata struct{ ResourceVersion string }
		}
		a := s.do(t, "GET", r.listPath()+"?limit=1", "", "", nil)
		if err := json.Unmarshal(a.body, &list); err != nil || a.code != http.StatusOK {
			t.Errorf("%s: list %s: %d %s", s.name, r.id(), a.code, a.body)
		}
		rvs[r.id()] = list.Metadata.ResourceVersion
	}
	stop := make(chan struct{})
	results := watchAll(t, s, rs, func(r resource) string { return rvs[r.id()] }, stop)
	time.Sleep(500 * time.Millisecond) // the watches are established
	created := s.must(t, "POST", "/api/v1/namespaces/sd/configmaps?fieldManager="+fieldOwner, jsonType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+probe+`"},"data":{"probe":"yes"}}`), http.StatusCreated)
	time.Sleep(watchWindow)
	close(stop)
	got := results()
	for _, r := range rs {
		w := got[r.id()]
		if w.refused != "" {
			t.Errorf("%s: watch from resourceVersion %s: refused: %s", r.id(), rvs[r.id()], w.refused)
			continue
		}
		var events []watchEvent
		for _, ev := range w.events {
			if md, _ := ev.Object["metadata"].(map[string]any); md == nil || !serverOwn(r, md) {
				events = append(events, ev)
			}
		}
		wantEvents := 0
		if r.name == "configmaps" && r.group == "" {
			wantEvents = 1
			if len(events) > 0 {
				if d := diff(decode(created.body), any(events[0].Object), 10); events[0].Type != "ADDED" || len(d) > 0 {
					t.Errorf("configmaps: the watch's first event is %s, not ADDED of what the create answered:\n\t%s", describeEvent(events[0]), strings.Join(d, "\n\t"))
				}
			}
		}
		if len(events) != wantEvents {
			var lines []string
			for _, ev := range events {
				lines = append(lines, describeEvent(ev))
			}
			t.Errorf("%s: watch from resourceVersion %s delivered %d events, want %d (the ConfigMap %s written through %s):\n\t%s",
				r.id(), rvs[r.id()], len(events), wantEvents, probe, s.name, strings.Join(lines, "\n\t"))
		}
	}
}

func describeEvent(ev watchEvent) string {
	md, _ := ev.Object["metadata"].(map[string]any)
	if md == nil {
		return ev.Type + " " + shorten(ev.Object, 300)
	}
	return fmt.Sprintf("%s %s resourceVersion %v", ev.Type, objectKey(md), md["resourceVersion"])
}

// olderThan tells whether resourceVersion rv is older than revision since.
func olderThan(rv string, since int64) bool {
	n, err := strconv.ParseInt(rv, 10, 64)
	return err != nil || n < since
}
