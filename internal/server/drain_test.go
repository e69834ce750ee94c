package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRequestTrackerWaitsForRequestsNotWatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		counted bool // wait waits for it
		tracked bool // waitAll waits for it
	}{
		{"get", "/api/v1/namespaces/default/configmaps/x", true, true},
		{"list", "/api/v1/configmaps", true, true},
		{"watch", "/api/v1/configmaps?watch=true", false, true},
		{"legacy watch", "/api/v1/watch/configmaps", false, true},
		{"health", "/readyz", true, true},
		{"profiling", "/debug/pprof/profile", false, true},
		{"OpenAPI", "/openapi/v3", true, true},
		{"lapis's own OpenAPI fetch", "https://" + loopbackServerName + "/openapi/v3", false, false},
		{"lapis's own other requests", "https://" + loopbackServerName + "/api/v1/namespaces", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr requestTracker
			release := make(chan struct{})
			entered := make(chan struct{})
			h := tr.track(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				close(entered)
				<-release
			}))
			served := make(chan struct{})
			go func() {
				defer close(served)
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
			}()
			<-entered
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			err := tr.wait(ctx)
			if tc.counted && err == nil {
				t.Error("wait returned while the request was in flight")
			}
			if !tc.counted && err != nil {
				t.Errorf("wait waited for a long-running request: %v", err)
			}
			// waitAll waits for every request.
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if err := tr.waitAll(ctx); tc.tracked && err == nil {
				t.Error("waitAll returned while a request was in flight")
			} else if !tc.tracked && err != nil {
				t.Errorf("waitAll waited for lapis's own OpenAPI fetch: %v", err)
			}
			waited := make(chan error, 2)
			go func() { waited <- tr.wait(context.Background()) }()
			go func() { waited <- tr.waitAll(context.Background()) }()
			close(release)
			<-served
			for range 2 {
				select {
				case err := <-waited:
					if err != nil {
						t.Error(err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("wait or waitAll did not return once the request ended")
				}
			}
		})
	}
}

func TestRequestTrackerIdle(t *testing.T) {
	var tr requestTracker
	if err := tr.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A request that came and went leaves nothing to wait for.
	tr.track(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/version", nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tr.waitAll(ctx); err != nil {
		t.Fatal(err)
	}
}
