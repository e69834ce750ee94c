package healthz

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHealthEndpoints(t *testing.T) {
	ok := func(*http.Request) error { return nil }
	down := func(*http.Request) error { return errors.New("etcd did not answer") }
	endpoints := func(etcd func(*http.Request) error) Endpoints {
		return Endpoints{
			"/healthz": {{"ping", ok}, {"etcd", etcd}},
			"/readyz":  {{"ping", ok}, {"etcd", etcd}, {"etcd-readiness", etcd}, {"shutdown", ok}, {"poststarthook/rbac", ok}},
		}
	}
	for _, c := range []struct {
		name     string
		etcd     func(*http.Request) error
		path     string
		code     int
		body     string
		notFound bool
	}{
		{"healthy", ok, "/healthz", 200, "ok", false},
		{"healthy, verbose", ok, "/readyz?verbose", 200, "[+]ping ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]shutdown ok\n[+]poststarthook/rbac ok\nreadyz check passed\n", false},
		{"failing", down, "/healthz", 500, "[+]ping ok\n[-]etcd failed: reason withheld\nhealthz check failed\n", false},
		{"failing, verbose", down, "/readyz?verbose", 500,
			"[+]ping ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[+]shutdown ok\n[+]poststarthook/rbac ok\nreadyz check failed\n", false},
		{"failing check excluded", down, "/healthz?exclude=etcd", 200, "ok", false},
		{"excluded, verbose", down, "/healthz?exclude=etcd&verbose", 200, "[+]ping ok\n[+]etcd excluded: ok\nhealthz check passed\n", false},
		{"unknown exclusion", ok, "/healthz?exclude=nope&exclude=log&verbose", 200,
			"[+]ping ok\n[+]etcd ok\nwarn: some health checks cannot be excluded: no matches for \"log\",\"nope\"\nhealthz check passed\n", false},
		{"one check", ok, "/healthz/etcd", 200, "ok", false},
		{"one failing check, with its reason", down, "/readyz/etcd-readiness", 500, "internal server error: etcd did not answer\n", false},
		{"one passing check while another fails", down, "/readyz/shutdown", 200, "ok", false},
		{"a hook's check", down, "/readyz/poststarthook/rbac", 200, "ok", false},
		{"no such check", ok, "/healthz/nope", 0, "", true},
		{"a check under a longer name", ok, "/healthzz/etcd", 0, "", true},
		{"an API path", ok, "/api/v1/namespaces/default/pods/etcd", 0, "", true},
		{"no such endpoint", ok, "/healthzz", 0, "", true},
		{"unserved endpoint", ok, "/livez", 0, "", true},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		h, found := endpoints(c.etcd).Handler(req.URL.Path)
		if found == c.notFound {
			t.Errorf("%s: %s served: %v", c.name, c.path, found)
			continue
		}
		if !found {
			continue
		}
		w := httptest.NewRecorder()
		h(w, req)
		if w.Code != c.code || w.Body.String() != c.body {
			t.Errorf("%s: GET %s: %d %q, want %d %q", c.name, c.path, w.Code, w.Body.String(), c.code, c.body)
		}
		if ct := w.Header().Get("Content-Type"); strings.Count(c.path, "/") == 1 && ct != "text/plain; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
	}
}

// The log check fails only when a flush has not come back for two minutes, and flushes at
// most once a minute.
func TestLogProbe(t *testing.T) {
	now := time.Unix(1000, 0)
	flushes := make(chan chan struct{}, 10)
	p := &LogProbe{Now: func() time.Time { return now }, Flush: func() {
		done := make(chan struct{})
		flushes <- done
		<-done
	}}
	// The first check starts a flush, which does not come back.
	if err := p.Check(nil); err != nil {
		t.Fatalf("first check: %v", err)
	}
	stuck := <-flushes
	for _, c := range []struct {
		after time.Duration
		fails bool
	}{{time.Minute, false}, {59 * time.Second, false}, {time.Second, true}} {
		now = now.Add(c.after)
		if err := p.Check(nil); (err != nil) != c.fails {
			t.Errorf("%v after the flush started: %v, want failing %v", now.Sub(time.Unix(1000, 0)), err, c.fails)
		}
	}
	if len(flushes) != 0 {
		t.Errorf("a second flush started while one was under way")
	}
	close(stuck)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := p.Check(nil); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("still failing once the flush came back: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	// Flushed just now: no new flush within the minute.
	now = now.Add(30 * time.Second)
	_ = p.Check(nil)
	if len(flushes) != 0 {
		t.Errorf("flushed again within a minute")
	}
	now = now.Add(31 * time.Second)
	_ = p.Check(nil)
	select {
	case done := <-flushes:
		close(done)
	case <-time.After(5 * time.Second):
		t.Errorf("no flush a minute after the last")
	}
}
