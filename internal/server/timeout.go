package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/lapis-dev/lapis/internal/handlers"
)

// timeoutWriteGrace is how long after its deadline a request may still take to write its
// answer (begun, or the 504) before the connection or stream is cut: a client that does not
// read cannot hold a handler forever.
const timeoutWriteGrace = 5 * time.Second

// longRunning is kube-apiserver's check (longRunningRequest): watches, including the legacy
// /watch/ paths, proxies and the attach, exec, log and port-forward subresources an extension
// server may serve (streams the aggregator proxies), and profiling run as long as they need.
func longRunning(req *http.Request) bool {
	info, ok := genericapirequest.RequestInfoFrom(req.Context())
	if !ok {
		var err error
		if info, err = requestInfoResolver.NewRequestInfo(req); err != nil {
			return false
		}
	}
	return longRunningRequest(req, info) || strings.HasPrefix(req.URL.Path, "/debug/pprof/")
}

// withRequestTimeout bounds every request that is not long-running as kube-apiserver's
// WithRequestDeadline and WithTimeoutForNonLongRunningRequests do: the request's context ends
// after timeout (or the shorter `timeout` query parameter), so storage calls stop too, and the
// client gets a 504 then even if the handler is still busy. A handler that had begun its
// answer may finish it within timeoutWriteGrace, then is cut off (connection closed, or HTTP/2
// stream reset).
func withRequestTimeout(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if longRunning(req) {
			h.ServeHTTP(w, req)
			return
		}
		limit := timeout
		if v := req.URL.Query().Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				handlers.WriteError(w, req, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err)))
				return
			}
			// As kube: 0 (or more than the server's limit) means the server's limit.
			if d > 0 && d < limit {
				limit = d
			}
		}
		deadline := time.Now().Add(limit)
		ctx, cancel := context.WithDeadline(req.Context(), deadline)
		defer cancel()
		req = req.WithContext(ctx)
		_ = http.NewResponseController(w).SetWriteDeadline(deadline.Add(timeoutWriteGrace))

		tw := &timeoutWriter{w: w, header: w.Header().Clone()}
		done := make(chan any, 1)
		go func() {
			defer func() {
				done <- recover()
			}()
			h.ServeHTTP(tw, req.Clone(ctx))
		}()
		select {
		case p := <-done:
			if p != nil {
				panic(p) // the chain recovers its own panics: this is http.ErrAbortHandler
			}
		case <-ctx.Done():
			if tw.timeout(req) {
				return
			}
			// The handler had begun its answer (often its own error, as its context ended
			// too): let it finish within the grace, rather than cut it off as kube does.
			select {
			case p := <-done:
				if p != nil {
					panic(p)
				}
			case <-time.After(timeoutWriteGrace):
				tw.mu.Lock()
				tw.timedOut = true
				tw.mu.Unlock()
				panic(http.ErrAbortHandler)
			}
		}
	})
}

// timeoutWriter is the ResponseWriter of a bounded request: once the request has timed out,
// the handler's writes fail with http.ErrHandlerTimeout and the filter answers instead.
type timeoutWriter struct {
	w http.ResponseWriter

	mu          sync.Mutex
	header      http.Header // the handler's, copied to w when it writes
	timedOut    bool
	wroteHeader bool
}

func (tw *timeoutWriter) Header() http.Header {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return http.Header{}
	}
	return tw.header
}

func (tw *timeoutWriter) writeHeaderLocked(code int) {
	if tw.wroteHeader {
		return
	}
	tw.wroteHeader = true
	dst := tw.w.Header()
	for k, v := range tw.header {
		dst[k] = v
	}
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.timedOut {
		tw.writeHeaderLocked(code)
	}
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	tw.writeHeaderLocked(http.StatusOK)
	return tw.w.Write(p)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if f, ok := tw.w.(http.Flusher); ok && !tw.timedOut {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (tw *timeoutWriter) Unwrap() http.ResponseWriter { return tw.w }

// timeout answers kube-apiserver's 504, and ends the handler's use of the writer, if the
// handler has written nothing yet; it reports whether it did.
func (tw *timeoutWriter) timeout(req *http.Request) bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.wroteHeader {
		return false
	}
	tw.timedOut = true
	handlers.WriteError(tw.w, req, apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0))
	return true
}
