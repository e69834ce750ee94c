package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
)

// requestTracker counts the requests in flight, the long-running ones (watches, which never end
// by themselves) apart, so that a shutdown lets the others finish, then ends the watches and
// closes the connections once every handler has returned, rather than guessing how long each
// step needs.
type requestTracker struct {
	mu          sync.Mutex
	short, long inFlight
}

// inFlight is a count of requests and, while someone waits, what is closed when it drops to 0.
type inFlight struct {
	n       int
	drained chan struct{}
}

// track counts h's requests but lapis's own OpenAPI fetches (ownOpenAPIFetch).
func (t *requestTracker) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if ownOpenAPIFetch(req) {
			h.ServeHTTP(w, req)
			return
		}
		c := &t.short
		if longRunning(req) {
			c = &t.long
		}
		t.mu.Lock()
		c.n++
		t.mu.Unlock()
		defer t.done(c)
		h.ServeHTTP(w, req)
	})
}

func (t *requestTracker) done(c *inFlight) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.n--
	if c.n == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
}

// wait returns once no request that ends by itself is in flight, or ctx's error when ctx ends
// first.
func (t *requestTracker) wait(ctx context.Context) error {
	return t.waitFor(ctx, &t.short)
}

// waitAll returns once no request at all is in flight, or ctx's error when ctx ends first.
func (t *requestTracker) waitAll(ctx context.Context) error {
	if err := t.waitFor(ctx, &t.short); err != nil {
		return err
	}
	return t.waitFor(ctx, &t.long)
}

func (t *requestTracker) waitFor(ctx context.Context, c *inFlight) error {
	t.mu.Lock()
	if c.n == 0 {
		t.mu.Unlock()
		return nil
	}
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	drained := c.drained
	t.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ownOpenAPIFetch tells lapis's own requests for OpenAPI documents (kube's admission policy
// plugin's, held until lapis is ready: holdOpenAPI): a shutdown right after start does not wait
// for the documents to be built (~200 ms of CPU) for a plugin that is stopping.
func ownOpenAPIFetch(req *http.Request) bool {
	return req.TLS != nil && req.TLS.ServerName == loopbackServerName && strings.HasPrefix(req.URL.Path, "/openapi/")
}
