package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func TestHoldOpenAPI(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		held bool
		// then: "ready", "stop" or "cancel"
		then string
		err  error
	}{
		{"discovery waits for ready", "/openapi/v3", true, "ready", nil},
		{"a document waits for ready", "/openapi/v3/apis/apps/v1", true, "ready", nil},
		{"v2 waits for ready", "/openapi/v2", true, "ready", nil},
		{"stopping ends the wait", "/openapi/v3", true, "stop", errStopping},
		{"the request's context ends the wait", "/openapi/v3", true, "cancel", context.Canceled},
		{"other requests go at once", "/api/v1/namespaces", false, "", nil},
		{"discovery of groups goes at once", "/apis", false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, stopped := make(chan struct{}), make(chan struct{})
			h := holdOpenAPI{next: okTransport{}, ready: ready, stopped: stopped}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequest(http.MethodGet, "https://127.0.0.1:6443"+tc.path, nil).WithContext(ctx)
			done := make(chan error, 1)
			go func() {
				resp, err := h.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if tc.held {
					t.Fatalf("answered before lapis was ready: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				return
			case <-time.After(20 * time.Millisecond):
				if !tc.held {
					t.Fatal("held a request that is not for OpenAPI")
				}
			}
			switch tc.then {
			case "ready":
				close(ready)
			case "stop":
				close(stopped)
			case "cancel":
				cancel()
			}
			if err := <-done; !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
		})
	}
}
