package healthz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Check is one named check of /healthz, /livez or /readyz (k8s.io/apiserver's healthz).
type Check struct {
	Name string
	Run  func(*http.Request) error
}

// Endpoints are the checks each health path runs, in the order they are listed.
type Endpoints map[string][]Check

// Handler returns the handler for path, if it is a health path.
func (h Endpoints) Handler(path string) (http.HandlerFunc, bool) {
	if checks, ok := h[path]; ok {
		return func(w http.ResponseWriter, req *http.Request) {
			serveChecks(w, req, strings.TrimPrefix(path, "/"), checks)
		}, true
	}
	// Every request asks: find the health path path is under without building strings.
	for root, checks := range h {
		name, ok := strings.CutPrefix(path, root)
		if !ok || !strings.HasPrefix(name, "/") {
			continue
		}
		if c, ok := named(checks, name[1:]); ok {
			return func(w http.ResponseWriter, req *http.Request) {
				if err := c.Run(req); err != nil {
					http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
					return
				}
				fmt.Fprint(w, "ok")
			}, true
		}
	}
	return nil, false
}

func named(checks []Check, name string) (Check, bool) {
	for _, c := range checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// serveChecks runs checks: 200 "ok" (or, with ?verbose, each check) when all pass, 500 with
// each check and no reasons (the endpoint is public) when one fails.
func serveChecks(w http.ResponseWriter, req *http.Request, name string, checks []Check) {
	excluded := sets.New(req.URL.Query()["exclude"]...)
	unknown := excluded.Clone()
	// Checks run at once (kube runs them in turn): each may take its whole timeout.
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		if !excluded.Has(c.Name) {
			wg.Go(func() { errs[i] = c.Run(req) })
		}
	}
	wg.Wait()
	var out bytes.Buffer
	failed := false
	for i, c := range checks {
		if excluded.Has(c.Name) {
			unknown.Delete(c.Name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		if err := errs[i]; err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
			failed = true
		} else {
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
	}
	if unknown.Len() > 0 {
		quoted := make([]string, 0, unknown.Len())
		for _, n := range sets.List(unknown) {
			quoted = append(quoted, fmt.Sprintf("%q", n))
		}
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	if failed {
		http.Error(w, fmt.Sprintf("%s%s check failed", out.String(), name), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := req.URL.Query()["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	out.WriteTo(w)
	fmt.Fprintf(w, "%s check passed\n", name)
}

// EtcdProbe reads from etcd within Timeout, at most once per half timeout as kube's check does,
// so health polling cannot pile requests on a struggling etcd. Checks made while a probe is
// under way wait for its answer (kube's give the previous one, "ok" early in an outage).
type EtcdProbe struct {
	Read    func(context.Context) error // one read from etcd
	Timeout time.Duration

	mu      sync.Mutex
	last    time.Time     // when the last probe started
	lastErr error         // its result, once done is closed
	done    chan struct{} // closed when the last probe has finished
}

// Check is the probe as a health check's Run.
func (p *EtcdProbe) Check(*http.Request) error {
	p.mu.Lock()
	if p.done != nil && time.Since(p.last) < p.Timeout/2 {
		done := p.done
		p.mu.Unlock()
		<-done
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.lastErr
	}
	done := make(chan struct{})
	p.last, p.done = time.Now(), done
	p.mu.Unlock()

	// Not the request's context: a client that hangs up must not become the result others see.
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout)
	defer cancel()
	err := p.Read(ctx)
	if err != nil {
		err = fmt.Errorf("error getting data from etcd: %w", err)
	}
	p.mu.Lock()
	p.lastErr = err
	p.mu.Unlock()
	close(done)
	return err
}

// LogProbe is kube's "log" check: logging is blocked when a flush of klog has not come back
// for two minutes (a writer stuck on a full pipe holds klog's lock). It flushes at most once a
// minute, when asked, rather than in a goroutine of its own.
type LogProbe struct {
	Flush func()           // klog.Flush
	Now   func() time.Time // time.Now

	mu       sync.Mutex
	flushing bool
	started  time.Time // when the flush under way started
	flushed  time.Time // when the last flush came back
}

const (
	logFlushInterval = time.Minute
	logBlockedAfter  = 2 * time.Minute
)

// Check is the probe as a health check's Run.
func (p *LogProbe) Check(*http.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Now()
	if !p.flushing && now.Sub(p.flushed) >= logFlushInterval {
		p.flushing, p.started = true, now
		go func() {
			p.Flush()
			p.mu.Lock()
			p.flushing, p.flushed = false, p.Now()
			p.mu.Unlock()
		}()
	}
	if p.flushing && now.Sub(p.started) >= logBlockedAfter {
		return errors.New("logging blocked")
	}
	return nil
}
