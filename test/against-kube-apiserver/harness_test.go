package againstkube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/server"
	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
)

// target is one of the two servers under comparison.
type target struct {
	name   string
	host   string
	client *http.Client
	panics *panicLog // lapis only
}

// env is set up once by TestMain.
var env struct {
	lapis, kube *target
	skip        string
	auditDir    string // where both servers' audit logs are (audit_test.go)
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Building kube-apiserver takes about 15 minutes: never from `go test`.
	if env.skip = kubereference.Built(); env.skip != "" {
		return m.Run()
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "lapis-kubediff-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	env.auditDir = dir
	auditOptions, kubeAuditArgs, err := auditSetup(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	panics := &panicLog{}
	lapisDir := filepath.Join(dir, "lapis")
	srv, err := server.Start(ctx, server.Config{DataDir: lapisDir, Listen: "127.0.0.1:0", Audit: auditOptions}, slog.New(panics))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting lapis:", err)
		return 1
	}
	defer srv.Shutdown(context.Background())
	if env.lapis, err = newTarget("lapis", server.KubeconfigPath(lapisDir)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.lapis.panics = panics

	kubeDir := filepath.Join(dir, "kube")
	defer kubereference.Stop(kubeDir)
	kubeconfig, err := startKube(kubeDir, kubeAuditArgs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver:", err)
		return 1
	}
	if env.kube, err = newTarget("kube", kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "setting up both servers:", err)
		return 1
	}
	return m.Run()
}

// lapisControllers are kube-controller-manager's controllers that lapis has its own of.
const lapisControllers = "serviceaccount-controller,root-ca-certificate-publisher-controller,namespace-controller," +
	"garbage-collector-controller,resourcequota-controller,clusterrole-aggregation-controller,serviceaccount-token-controller," +
	"validatingadmissionpolicy-status-controller"

func startKube(dir, apiserverArgs string) (string, error) {
	// kube-controller-manager runs the controllers lapis runs itself, and only those: both
	// servers then keep the same objects (default ServiceAccounts, kube-root-ca.crt, quota
	// status, garbage collection, namespace deletion).
	return kubereference.Start(dir, "KCM=1", "KCM_CONTROLLERS="+lapisControllers, "KUBE_APISERVER_ARGS="+apiserverArgs)
}

func newTarget(name, kubeconfig string) (*target, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &target{name: name, host: cfg.Host, client: client}, nil
}

// servers returns lapis and kube, or skips the test saying why they are not there.
func servers(t *testing.T) (lapis, kube *target) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	return env.lapis, env.kube
}

// panicLog is lapis's logger: it keeps the requests that panicked (recovered by lapis's chain)
// and drops everything else.
type panicLog struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicLog) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *panicLog) WithGroup(string) slog.Handler            { return p }
func (p *panicLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panic") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "stack" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	p.mu.Lock()
	p.panics = append(p.panics, b.String())
	p.mu.Unlock()
	return nil
}

func (p *panicLog) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.panics)
}

func (p *panicLog) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.panics[n:]...)
}

// request is one raw HTTP request.
type request struct {
	method, path, contentType, body string
	// timeout bounds the whole exchange, body included; zero means 15 s.
	timeout time.Duration
}

func (r request) String() string {
	s := r.method + " " + r.path
	if r.contentType != "" {
		s += " (" + r.contentType + ")"
	}
	if r.body != "" {
		b := r.body
		if len(b) > 120 {
			b = fmt.Sprintf("%s… (%d bytes)", b[:120], len(b))
		}
		s += " " + b
	}
	return s
}

// response is what came back: the code (0 when there was no answer) and the body.
type response struct {
	code    int
	body    []byte
	err     error // transport error, or the body could not be read to its end in time
	elapsed time.Duration
}

func (s *target) do(r request) response {
	timeout := r.timeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := s.newRequest(ctx, r.method, r.path, r.body)
	if err != nil {
		return response{err: err}
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return response{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: b, err: err, elapsed: time.Since(start)}
}

// must sends r and fails the test unless the answer has one of the codes.
func (s *target) must(t *testing.T, r request, codes ...int) response {
	t.Helper()
	resp := s.do(r)
	for _, c := range codes {
		if resp.code == c {
			return resp
		}
	}
	t.Fatalf("%s: %s: %d %s (%v); want %v", s.name, r, resp.code, resp.body, resp.err, codes)
	return resp
}

// exchange is one request's answers from both servers.
type exchange struct {
	lapis, kube response
	panics      []string // recovered panics lapis logged meanwhile
}

// send sends forLapis to lapis and forKube to kube at the same time (usually the same request).
func send(forLapis, forKube request) exchange {
	before := env.lapis.panics.count()
	var x exchange
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		x.kube = env.kube.do(forKube)
	}()
	x.lapis = env.lapis.do(forLapis)
	wg.Wait()
	x.panics = env.lapis.panics.since(before)
	return x
}

// allowance is a difference from kube a case accepts, each with its reason.
type allowance struct {
	// kubeFails: kube answers 500 or panics (its HTTP/2 stream is reset, no answer at all) on
	// this bad input; lapis must answer a 4xx. Code, reason and message are then not compared.
	kubeFails string
	// kubeRacyWatch: kube ends this watch at once but races with its start: it may first send
	// some of the initial ADDED events, and may end with an ERROR event carrying a 500 "context
	// deadline exceeded". lapis must answer as kube does when it wins the race: 200, no event.
	kubeRacyWatch string
}

// compare fails t where the answers differ beyond what allow accepts.
func compare(t *testing.T, r request, x exchange, allow allowance) {
	t.Helper()
	for _, p := range x.panics {
		t.Errorf("%s: lapis logged a recovered panic: %s", r, p)
	}
	if allow.kubeFails != "" {
		if x.kube.code != http.StatusInternalServerError && x.kube.err == nil {
			t.Errorf("%s: allowance %q is stale: kube answered %s", r, allow.kubeFails, describe(x.kube))
		} else if x.lapis.code < 400 || x.lapis.code > 499 {
			t.Errorf("%s: kube fails (%s); lapis must answer a 4xx:\n  kube:  %s\n  lapis: %s", r, allow.kubeFails, describe(x.kube), describe(x.lapis))
		}
		return
	}
	if x.lapis.err != nil || x.kube.err != nil {
		if (x.lapis.err == nil) != (x.kube.err == nil) || x.lapis.code != x.kube.code {
			t.Errorf("%s:\n  kube:  %s\n  lapis: %s", r, describe(x.kube), describe(x.lapis))
			return
		}
	}
	sl, sk := summarize(x.lapis.body), summarize(x.kube.body)
	if allow.kubeRacyWatch != "" {
		var rest []string
		for _, e := range sk {
			if e != watchDeadlineError && !strings.HasPrefix(e, "event ADDED ") {
				rest = append(rest, e)
			}
		}
		if len(rest) != len(sk) {
			t.Logf("%s: kube lost the race (%s): %s", r, allow.kubeRacyWatch, strings.Join(sk, " | "))
		}
		sk = rest
	}
	if x.lapis.code != x.kube.code || !slices.Equal(sl, sk) {
		t.Errorf("%s:\n  kube:  %s\n  lapis: %s", r, describe(x.kube), describe(x.lapis))
	}
}

// watchDeadlineError is the ERROR event kube's cacher may end an expired watch with.
const watchDeadlineError = `event ERROR Status status=Failure code=500 reason=InternalError message="context deadline exceeded" details=null`

func describe(r response) string {
	s := fmt.Sprintf("%d %s", r.code, strings.Join(summarize(r.body), " | "))
	if r.err != nil {
		s += fmt.Sprintf(" (error: %v)", r.err)
	}
	return s
}

// summarize reduces a body to what is compared: each JSON value of it (a watch stream has
// several) as its kind, a Status in full but for uids, a watch event as its type and object.
// Anything that is not JSON is compared as trimmed text.
func summarize(body []byte) []string {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var v map[string]any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return append(out, fmt.Sprintf("text %q", strings.TrimSpace(string(body))))
		}
		if typ, ok := v["type"].(string); ok && v["object"] != nil {
			obj, _ := v["object"].(map[string]any)
			out = append(out, "event "+typ+" "+summarizeObject(obj))
			continue
		}
		out = append(out, summarizeObject(v))
	}
}

func summarizeObject(v map[string]any) string {
	if v["kind"] != "Status" {
		name, _ := nested(v, "metadata", "name").(string)
		return fmt.Sprintf("%v %v/%s", v["apiVersion"], v["kind"], name)
	}
	details, _ := v["details"].(map[string]any)
	delete(details, "uid")
	d, _ := json.Marshal(details) // map keys sorted
	return fmt.Sprintf("Status status=%v code=%v reason=%v message=%q details=%s",
		v["status"], v["code"], v["reason"], normalize(fmt.Sprint(v["message"])), normalize(string(d)))
}

func nested(v map[string]any, keys ...string) any {
	var cur any = v
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// Numbers that differ between two servers given the same requests.
var normalizations = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`current: \d+`), "current: N"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UID"},
	// Objects quoted in messages (a patch's result) carry each server's own.
	{regexp.MustCompile(`(resourceVersion[\\"]+:[\\"]+)\d+`), "${1}N"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "TIME"},
}

func normalize(s string) string {
	for _, n := range normalizations {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// Shared objects: the namespace the tests work in and a CRD with status and scale subresources.
const (
	ns          = "kubediff"
	widgetsCRD  = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.kubediff.example.com"
	widgets     = "/apis/kubediff.example.com/v1/namespaces/" + ns + "/widgets"
	configmaps  = "/api/v1/namespaces/" + ns + "/configmaps"
	crds        = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	jsonType    = "application/json"
	mergeType   = "application/merge-patch+json"
	applyType   = "application/apply-patch+yaml"
	jsonPatch   = "application/json-patch+json"
	strategic   = "application/strategic-merge-patch+json"
	widgetsJSON = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.kubediff.example.com"},
 "spec":{"group":"kubediff.example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},
   "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}}}]}}`
)

// setup creates the shared objects on both servers and waits until the custom resources are
// served.
func setup() error {
	for _, s := range []*target{env.lapis, env.kube} {
		steps := []request{
			{method: "POST", path: "/api/v1/namespaces", contentType: jsonType, body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`},
			{method: "POST", path: crds, contentType: jsonType, body: widgetsJSON},
		}
		for _, r := range steps {
			if resp := s.do(r); resp.code != http.StatusCreated {
				return fmt.Errorf("%s: %s: %d %s %v", s.name, r, resp.code, resp.body, resp.err)
			}
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, s := range []*target{env.lapis, env.kube} {
		for s.do(request{method: "GET", path: widgets}).code != http.StatusOK {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s is not served after 60 s", s.name, widgets)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// newRequest makes a request of s for method and path with body (none when empty), asking for
// JSON; callers add their own headers.
func (s *target) newRequest(ctx context.Context, method, path, body string) (*http.Request, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.host+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}
