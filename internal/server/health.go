package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/lapis-dev/lapis/internal/storage"
)

// kube-apiserver's defaults for --etcd-healthcheck-timeout and --etcd-readycheck-timeout.
const (
	etcdHealthcheckTimeout = 2 * time.Second
	etcdReadycheckTimeout  = 2 * time.Second
)

// healthCheck is one named check of /healthz, /livez or /readyz (k8s.io/apiserver's healthz).
type healthCheck struct {
	name  string
	check func(*http.Request) error
}

// healthEndpoints answers /healthz, /livez and /readyz, their ?verbose and ?exclude= forms and
// one path per check (/livez/etcd), as kube-apiserver's healthz package does.
type healthEndpoints map[string][]healthCheck

// healthSources is what the health checks ask.
type healthSources struct {
	store                  *storage.Store
	ready, informersSynced func() bool
	loopbackExpiry         time.Time     // when the loopback's serving certificate expires
	hooks                  []healthCheck // kube's post-start hooks that lapis runs (hooks.go)
}

// newHealth returns kube-apiserver's checks for the parts lapis runs, named and ordered as
// kube's: ping; log (logging is not blocked); in /healthz and /livez, loopback-serving-
// certificate; etcd in all three; in /readyz only, etcd-readiness and informer-sync (the
// informers lapis authorizes with hold their first list: until then RBAC denies what it would
// allow); then kube's post-start hooks that lapis runs, and /readyz's shutdown last.
func newHealth(src healthSources) healthEndpoints {
	ping := healthCheck{"ping", func(*http.Request) error { return nil }}
	log := healthCheck{"log", (&logProbe{flush: klog.Flush, now: time.Now}).check}
	loopback := healthCheck{"loopback-serving-certificate", func(*http.Request) error {
		if time.Now().After(src.loopbackExpiry) {
			return errLoopbackCertificateExpired
		}
		return nil
	}}
	etcd := healthCheck{"etcd", (&etcdProbe{store: src.store, timeout: etcdHealthcheckTimeout}).check}
	etcdReady := healthCheck{"etcd-readiness", (&etcdProbe{store: src.store, timeout: etcdReadycheckTimeout}).check}
	informers := healthCheck{"informer-sync", func(*http.Request) error {
		if !src.informersSynced() {
			return errors.New("informers not started yet")
		}
		return nil
	}}
	shutdown := healthCheck{"shutdown", func(*http.Request) error {
		if !src.ready() {
			return errors.New("process is shutting down")
		}
		return nil
	}}
	return healthEndpoints{
		"/healthz": slices.Concat([]healthCheck{ping, log, loopback, etcd}, src.hooks),
		"/livez":   slices.Concat([]healthCheck{ping, log, loopback, etcd}, src.hooks),
		"/readyz":  slices.Concat([]healthCheck{ping, log, etcd, etcdReady, informers}, src.hooks, []healthCheck{shutdown}),
	}
}

// errLoopbackCertificateExpired is kube's (options.LoopbackCertificateExpiredError): the
// certificate lapis's own client trusts has expired, and a restart makes a new one.
var errLoopbackCertificateExpired = errors.New("loopback serving certificate is expired")

// informersSynced is what /readyz's informer-sync check asks: whether the informers z
// authorizes with (RBAC's) hold their first list; an authorizer without any has none to wait for.
func informersSynced(z authorizer.Authorizer) func() bool {
	if s, ok := z.(interface{ HasSynced() bool }); ok {
		return s.HasSynced
	}
	return func() bool { return true }
}

// handler returns the handler for path, if it is a health path.
func (h healthEndpoints) handler(path string) (http.HandlerFunc, bool) {
	if checks, ok := h[path]; ok {
		return func(w http.ResponseWriter, req *http.Request) {
			serveChecks(w, req, strings.TrimPrefix(path, "/"), checks)
		}, true
	}
	root, name, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok {
		return nil, false
	}
	for _, c := range h["/"+root] {
		if c.name == name {
			return func(w http.ResponseWriter, req *http.Request) {
				if err := c.check(req); err != nil {
					http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
					return
				}
				fmt.Fprint(w, "ok")
			}, true
		}
	}
	return nil, false
}

// serveChecks runs checks: 200 "ok" (or, with ?verbose, each check) when all pass, 500 with
// each check and no reasons (the endpoint is public) when one fails.
func serveChecks(w http.ResponseWriter, req *http.Request, name string, checks []healthCheck) {
	excluded := sets.New(req.URL.Query()["exclude"]...)
	unknown := excluded.Clone()
	// Checks run at once (kube runs them in turn): each may take its whole timeout.
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		if !excluded.Has(c.name) {
			wg.Go(func() { errs[i] = c.check(req) })
		}
	}
	wg.Wait()
	var out bytes.Buffer
	failed := false
	for i, c := range checks {
		if excluded.Has(c.name) {
			unknown.Delete(c.name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := errs[i]; err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.name)
			failed = true
		} else {
			fmt.Fprintf(&out, "[+]%s ok\n", c.name)
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

// etcdProbe reads from etcd within timeout, at most once per half timeout as kube's check does,
// so health polling cannot pile requests on a struggling etcd. Checks made while a probe is
// under way wait for its answer (kube's give the previous one, "ok" early in an outage).
type etcdProbe struct {
	store   *storage.Store
	timeout time.Duration

	mu      sync.Mutex
	last    time.Time     // when the last probe started
	lastErr error         // its result, once done is closed
	done    chan struct{} // closed when the last probe has finished
}

func (p *etcdProbe) check(*http.Request) error {
	p.mu.Lock()
	if p.done != nil && time.Since(p.last) < p.timeout/2 {
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
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	_, err := p.store.Revision(ctx)
	if err != nil {
		err = fmt.Errorf("error getting data from etcd: %w", err)
	}
	p.mu.Lock()
	p.lastErr = err
	p.mu.Unlock()
	close(done)
	return err
}

// logProbe is kube's "log" check: logging is blocked when a flush of klog has not come back
// for two minutes (a writer stuck on a full pipe holds klog's lock). It flushes at most once a
// minute, when asked, rather than in a goroutine of its own.
type logProbe struct {
	flush func()
	now   func() time.Time

	mu       sync.Mutex
	flushing bool
	started  time.Time // when the flush under way started
	flushed  time.Time // when the last flush came back
}

const (
	logFlushInterval = time.Minute
	logBlockedAfter  = 2 * time.Minute
)

func (p *logProbe) check(*http.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.flushing && now.Sub(p.flushed) >= logFlushInterval {
		p.flushing, p.started = true, now
		go func() {
			p.flush()
			p.mu.Lock()
			p.flushing, p.flushed = false, p.now()
			p.mu.Unlock()
		}()
	}
	if p.flushing && now.Sub(p.started) >= logBlockedAfter {
		return errors.New("logging blocked")
	}
	return nil
}
