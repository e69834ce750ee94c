package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestRequestTimeoutFilter(t *testing.T) {
	const limit = 200 * time.Millisecond
	// slow answers after d, or when its context ends (saying whether it had a deadline).
	slow := func(d time.Duration) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, hasDeadline := req.Context().Deadline()
			w.Header().Set("X-Deadline", map[bool]string{true: "yes", false: "no"}[hasDeadline])
			select {
			case <-time.After(d):
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "done")
			case <-req.Context().Done():
				time.Sleep(50 * time.Millisecond) // noticed late: the filter has answered
				w.WriteHeader(http.StatusTeapot)
				io.WriteString(w, "context ended")
			}
		})
	}
	// ownError answers its own error as soon as its context ends, racing the filter.
	ownError := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-req.Context().Done()
		w.WriteHeader(http.StatusGatewayTimeout)
		io.WriteString(w, "own")
	})
	// streaming writes its status at once, then answers after d.
	streaming := func(d time.Duration) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(d)
			io.WriteString(w, "late")
		})
	}
	timeoutBody := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}`
	for _, tc := range []struct {
		name     string
		handler  http.Handler
		path     string
		code     int
		body     string
		deadline string // X-Deadline the handler saw, "" for none expected
		within   time.Duration
		aborted  bool // the answer is cut off
	}{
		{name: "quick request", handler: slow(0), path: "/api/v1/namespaces", code: 200, body: "done", deadline: "yes"},
		{name: "slow list", handler: slow(time.Hour), path: "/api/v1/namespaces", code: 504, body: timeoutBody, within: 2 * limit},
		{name: "slow get", handler: slow(time.Hour), path: "/apis/acme.example.com/v1/namespaces/a/widgets/w", code: 504, body: timeoutBody, within: 2 * limit},
		{name: "slow non-resource", handler: slow(time.Hour), path: "/openapi/v2", code: 504, body: timeoutBody, within: 2 * limit},
		{name: "shorter timeout parameter", handler: slow(time.Hour), path: "/api/v1/namespaces?timeout=10ms", code: 504, body: timeoutBody, within: limit / 2},
		{name: "longer timeout parameter is capped", handler: slow(time.Hour), path: "/api/v1/namespaces?timeout=1h", code: 504, body: timeoutBody, within: 2 * limit},
		{name: "zero timeout parameter is the server's", handler: slow(2 * limit / 3), path: "/api/v1/namespaces?timeout=0s", code: 200, body: "done", deadline: "yes"},
		{name: "invalid timeout parameter", handler: slow(0), path: "/api/v1/namespaces?timeout=soon", code: 400,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid timeout specified in the request URL - time: invalid duration \"soon\"","reason":"BadRequest","code":400}`},
		{name: "watch outlasts the timeout", handler: slow(3 * limit), path: "/api/v1/namespaces/a/configmaps?watch=true", code: 200, body: "done", deadline: "no"},
		{name: "watch=1 outlasts the timeout", handler: slow(3 * limit), path: "/api/v1/configmaps?watch=1&timeout=1ms", code: 200, body: "done", deadline: "no"},
		{name: "legacy watch path outlasts the timeout", handler: slow(3 * limit), path: "/api/v1/watch/namespaces/a/configmaps/c", code: 200, body: "done", deadline: "no"},
		{name: "profiling outlasts the timeout", handler: slow(3 * limit), path: "/debug/pprof/profile", code: 200, body: "done", deadline: "no"},
		{name: "own error at the deadline", handler: ownError, path: "/api/v1/namespaces", code: 504, body: "own|" + timeoutBody, within: 2 * limit},
		{name: "answer begun and finished in the grace", handler: streaming(2 * limit), path: "/api/v1/namespaces", code: 200, body: "late"},
		{name: "answer begun then too slow is cut off", handler: streaming(time.Hour), path: "/api/v1/namespaces", code: 200, aborted: true, within: limit + timeoutWriteGrace + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(withRequestTimeout(tc.handler, limit))
			defer srv.Close()
			start := time.Now()
			resp, err := srv.Client().Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			took := time.Since(start)
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.code, b)
			}
			if tc.aborted {
				if err == nil {
					t.Errorf("answer read whole (%q), want it cut off", b)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if got := strings.TrimSpace(string(b)); !slices.Contains(strings.Split(tc.body, "|"), got) {
				t.Errorf("body\n got %s\nwant %s", got, tc.body)
			}
			if got := resp.Header.Get("X-Deadline"); got != tc.deadline {
				t.Errorf("handler saw a deadline: %q, want %q", got, tc.deadline)
			}
			if string(b) != "own" && tc.code == 504 && resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			if tc.within > 0 && took > tc.within {
				t.Errorf("answered after %v, want within %v", took, tc.within)
			}
		})
	}
}

// startShortTimeouts starts lapis in-process with short idle and request timeouts.
func startShortTimeouts(t *testing.T, idle, request time.Duration) *rest.Config {
	t.Helper()
	return startInProcess(t, Config{IdleTimeout: idle, RequestTimeout: request}, nil)
}

// startInProcess starts lapis in-process with cfg, on a fresh data dir and a loopback port unless
// cfg names them, logging to log (nil: nowhere), and stops it when the test ends. It returns the
// admin client configuration its kubeconfig gives.
func startInProcess(t *testing.T, cfg Config, log *slog.Logger) *rest.Config {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(t.TempDir(), "data")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	client, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath(cfg.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func TestIdleConnectionsClosed(t *testing.T) {
	const idle = time.Second
	cfg := startShortTimeouts(t, idle, 0)
	for _, proto := range []string{"http/1.1", "h2"} {
		t.Run(proto, func(t *testing.T) {
			tlsConfig, err := rest.TLSConfigFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tlsConfig.NextProtos = []string{proto}
			tr := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: proto == "h2"}
			if proto == "http/1.1" {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			// healthz reports whether it reused an open connection.
			healthz := func() bool {
				reused := false
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", cfg.Host+"/healthz", nil)
				// Authenticated: as kube-apiserver, lapis closes anonymous HTTP/2 connections after
				// each request (kube's UnauthenticatedHTTP2DOSMitigation).
				req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.Proto != map[string]string{"h2": "HTTP/2.0", "http/1.1": "HTTP/1.1"}[proto] {
					t.Fatalf("spoke %s", resp.Proto)
				}
				return reused
			}
			healthz()
			if !healthz() {
				t.Fatal("a connection used a moment ago was not reused")
			}
			time.Sleep(idle + idle/2 + 500*time.Millisecond)
			if healthz() {
				t.Errorf("a connection idle for longer than %v was still open", idle)
			}
		})
	}
}

func TestRequestTimeoutServed(t *testing.T) {
	const request = time.Second
	cfg := startShortTimeouts(t, 0, request)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", cfg.Host+path, nil)
		req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
		return client.Do(req)
	}

	// A request whose deadline has passed is answered as kube-apiserver does.
	resp, err := get("/api/v1/namespaces?timeout=1ns")
	if err != nil {
		t.Fatal(err)
	}
	var status metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 504 || status.Reason != metav1.StatusReasonTimeout || status.Message != "Timeout: request did not complete within the allotted timeout" {
		t.Errorf("expired request: %d %+v", resp.StatusCode, status)
	}

	// A watch stays open for longer than the request timeout, until its own timeoutSeconds.
	start := time.Now()
	resp, err = get("/api/v1/namespaces?watch=true&timeoutSeconds=3")
	if err != nil {
		t.Fatal(err)
	}
	events, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("watch ended with %v", err)
	}
	if took := time.Since(start); resp.StatusCode != 200 || took < 3*time.Second-100*time.Millisecond || !strings.Contains(string(events), `"ADDED"`) {
		t.Errorf("watch: %d after %v: %.200s", resp.StatusCode, took, events)
	}
}

// TestLongRunning: kube's long-running requests escape the request timeout, whoever serves
// them (an extension server's streams too).
func TestLongRunning(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true", true},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", true},
		{"GET", "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders?watch=1", true},
		{"POST", "/apis/example.com/v1/namespaces/ns/things/t/exec", true},
		{"GET", "/apis/example.com/v1/namespaces/ns/things/t/log", true},
		{"POST", "/api/v1/namespaces/ns/pods/p/portforward", true},
		{"GET", "/api/v1/namespaces/ns/services/s/proxy/x", true},
		{"GET", "/debug/pprof/profile", true},
		{"GET", "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders", false},
		{"GET", "/api/v1/namespaces/ns/pods/p/status", false},
		{"GET", "/apis", false},
	} {
		if got := longRunning(httptest.NewRequest(tt.method, tt.path, nil)); got != tt.want {
			t.Errorf("%s %s: long-running %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}
