package hardening

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
	"sigs.k8s.io/yaml"
)

const (
	clients = 8
	// requestTimeout bounds every answer but a watch's. lapis runs with --request-timeout
	// serverTimeout, which it must honour (504 at the latest): most answers take well under a
	// second, but a server-side apply of tens of thousands of fields costs kube's field manager
	// over 20 s of CPU (its field sets insert into sorted slices; kube-apiserver takes as long).
	requestTimeout = 30 * time.Second
	serverTimeout  = "20s"
	// watchGrace is how long past its timeoutSeconds a watch may stay open.
	watchGrace = 10 * time.Second
	// maxAnswer bounds an answer: no object is over 3 MiB (the body limit) and the pools of names
	// keep lists to a few dozen objects, so 64 MiB is a blow-up, not a big list.
	maxAnswer = 64 << 20
	// maxWarnings bounds the Warning headers of an answer: kube-apiserver's recorder stops at
	// 4096 runes of warning text (a few more when truncating), at most 4 bytes each.
	maxWarnings = 64 << 10
	// rssBound is lapis's memory bound under this load. Without the known blow-ups, lapis peaks
	// at 650-720 MiB here (seeds 7 and 11, 60 s): eight clients sending bodies up to the 3 MiB
	// limit, each decoded a few times, plus the watch cache's history of such objects and etcd.
	// 1 GiB leaves room for that, and each blow-up (a copy-bomb patch, the YAML of a deep
	// object) passes it within a second.
	rssBound = 1 << 30
)

// loadSettings reads the seed and duration: fixed by default, from the environment to explore.
func loadSettings(t *testing.T) (uint64, time.Duration) {
	seed, dur := uint64(7), 60*time.Second
	if s := os.Getenv("LAPIS_HARDENING_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LAPIS_HARDENING_SEED=%q: %v", s, err)
		}
		seed = n
	}
	if s := os.Getenv("LAPIS_HARDENING_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LAPIS_HARDENING_DURATION=%q: %v", s, err)
		}
		dur = d
	}
	return seed, dur
}

// TestLoad sends random requests from concurrent clients for a bounded time and checks that lapis
// answers each promptly, never with a 5xx but 503/504, never panics, stays within its memory
// bound and is still ready at the end.
func TestLoad(t *testing.T) {
	seed, dur := loadSettings(t)
	t.Logf("seed %d (LAPIS_HARDENING_SEED), duration %v (LAPIS_HARDENING_DURATION)", seed, dur)
	l := startLapis(t, "--request-timeout="+serverTimeout)
	setupFixtures(t, l)

	run := &loadRun{l: l, failures: map[string]*failure{}, inflight: map[int64]*fuzzReq{}, statuses: map[int]int{}, byVerb: map[string]map[int]int{}}
	deadline := time.Now().Add(dur)
	stop := make(chan struct{})
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		run.monitor(stop)
	}()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.client(newGen(seed, i), deadline)
		}()
	}
	wg.Wait()
	close(stop)
	<-monitorDone

	if run.aborted.Load() {
		t.Errorf("lapis could not be restarted; the load stopped early")
	}
	readyCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !l.Running() {
		run.fail("lapis not running at the end", "")
	} else if !l.Ready(readyCtx) {
		run.fail("lapis not ready (/readyz) within 10s at the end", "")
	}
	run.scanLog(l.Log().String())

	var codes []int
	for c := range run.statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var summary []string
	for _, c := range codes {
		summary = append(summary, fmt.Sprintf("%d×%d", run.statuses[c], c))
	}
	t.Logf("%d requests (%d not sendable), %d restarts, peak RSS %d MiB; answers: %s",
		run.sent.Load(), run.unsendable.Load(), run.restarts, run.peakKiB.Load()>>10, strings.Join(summary, " "))
	var perVerb []string
	for _, verb := range sortedKeys(run.byVerb) {
		perVerb = append(perVerb, fmt.Sprintf("%s %d/%d/%d", verb, run.byVerb[verb][200], run.byVerb[verb][400], run.byVerb[verb][500]))
	}
	t.Logf("2xx/4xx/5xx by verb: %s", strings.Join(perVerb, ", "))
	run.report(t)
}

// failure is one kind of failure, with its first examples.
type failure struct {
	count    int
	examples []string
}

type loadRun struct {
	l *lapisproc.Proc

	mu       sync.Mutex
	failures map[string]*failure
	order    []string
	inflight map[int64]*fuzzReq
	statuses map[int]int
	byVerb   map[string]map[int]int
	restarts int

	// gen counts lapis processes: a request that fails while the monitor replaces lapis is
	// no failure of its own.
	gen        atomic.Int64
	nextID     atomic.Int64
	sent       atomic.Int64
	unsendable atomic.Int64
	peakKiB    atomic.Int64
	aborted    atomic.Bool
}

func (run *loadRun) fail(class, example string) {
	run.mu.Lock()
	defer run.mu.Unlock()
	f := run.failures[class]
	if f == nil {
		f = &failure{}
		run.failures[class] = f
		run.order = append(run.order, class)
	}
	f.count++
	if len(f.examples) < 2 {
		f.examples = append(f.examples, example)
	}
}

func (run *loadRun) report(t *testing.T) {
	run.mu.Lock()
	defer run.mu.Unlock()
	sort.Strings(run.order)
	for _, class := range run.order {
		f := run.failures[class]
		t.Errorf("%s (%d times), e.g.:\n  %s", class, f.count, strings.Join(f.examples, "\n  "))
	}
}

func (run *loadRun) inflightReport() string {
	run.mu.Lock()
	defer run.mu.Unlock()
	ids := make([]int64, 0, len(run.inflight))
	for id := range run.inflight {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	b.WriteString("requests in flight:")
	for _, id := range ids {
		fmt.Fprintf(&b, "\n  %s", run.inflight[id])
	}
	return b.String()
}

// monitor samples lapis's RSS and liveness; it restarts lapis when it died or outgrew its bound.
func (run *loadRun) monitor(stop chan struct{}) {
	l := run.l
	logFrom := 0
	for {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		why := ""
		if !l.Running() {
			why = fmt.Sprintf("lapis exited (%v); its log ends:\n%s", l.ExitErr(), lapisproc.Tail(l.Log().String()[logFrom:], 3000))
			run.fail("lapis exited during the load", why+"\n  "+run.inflightReport())
		} else if rss, hwm, err := l.RSSKiB(); err == nil {
			if hwm > run.peakKiB.Load() {
				run.peakKiB.Store(hwm)
			}
			if rss > rssBound>>10 {
				why = fmt.Sprintf("RSS %d MiB", rss>>10)
				run.fail(fmt.Sprintf("lapis RSS over %d MiB (killed and restarted)", rssBound>>20), why+"; "+run.inflightReport())
			}
		}
		if why == "" {
			continue
		}
		// Replace lapis on the same data dir so the load goes on finding other bugs.
		run.gen.Add(1)
		l.Kill()
		logFrom = l.Log().Len()
		if err := l.Start(context.Background()); err != nil {
			run.fail("lapis did not restart", err.Error())
			run.aborted.Store(true)
			return
		}
		run.gen.Add(1)
		run.mu.Lock()
		run.restarts++
		run.mu.Unlock()
	}
}

// client sends requests until the deadline.
func (run *loadRun) client(g *gen, deadline time.Time) {
	c := run.l.Client(0)
	defer c.CloseIdleConnections()
	for time.Now().Before(deadline) && !run.aborted.Load() {
		run.do(c, g, g.next())
	}
}

// do sends q and checks its answer.
func (run *loadRun) do(c *http.Client, g *gen, q *fuzzReq) {
	l := run.l
	timeout := requestTimeout
	if q.watch {
		timeout = time.Duration(q.watchTimeout)*time.Second + watchGrace
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	path := q.path
	if q.query != "" {
		path += "?" + q.query
	}
	req, err := l.NewRequest(ctx, q.method, path, q.body)
	if err != nil {
		run.unsendable.Add(1) // a path or method Go's client will not send
		return
	}
	if q.contentType != "" {
		req.Header.Set("Content-Type", q.contentType)
	}
	if q.accept != "" {
		req.Header.Set("Accept", q.accept)
	}
	gen := run.gen.Load()
	id := run.nextID.Add(1)
	run.mu.Lock()
	run.inflight[id] = q
	run.mu.Unlock()
	defer func() {
		run.mu.Lock()
		delete(run.inflight, id)
		run.mu.Unlock()
	}()
	run.sent.Add(1)

	start := time.Now()
	resp, err := c.Do(req)
	var head []byte
	var size int64
	warnings := 0
	if err == nil {
		for _, w := range resp.Header.Values("Warning") {
			warnings += len(w)
		}
		head, size, err = readAnswer(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		if run.gen.Load() != gen || gen%2 == 1 {
			return // lapis was being replaced
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			class := fmt.Sprintf("no answer within %v to %s %s%s", timeout, q.verb, q.resource, subOf(q))
			if q.watch {
				class = fmt.Sprintf("watch with timeoutSeconds=%s still open after %v", timeoutParam(q.query), timeout)
			}
			run.fail(class, q.String())
			return
		}
		// A transport error while lapis dies is the monitor's to report.
		for range 40 {
			if !l.Running() || run.gen.Load() != gen {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		run.fail(fmt.Sprintf("transport error on %s %s%s: %s", q.verb, q.resource, subOf(q), normalize(err.Error())),
			fmt.Sprintf("%s\n    after %v: %v", q, time.Since(start).Round(time.Millisecond), err))
		return
	}
	run.mu.Lock()
	run.statuses[resp.StatusCode]++
	if run.byVerb[q.verb] == nil {
		run.byVerb[q.verb] = map[int]int{}
	}
	run.byVerb[q.verb][resp.StatusCode/100*100]++
	run.mu.Unlock()

	code := resp.StatusCode
	answer := fmt.Sprintf("%s\n    → %d %s", q, code, truncate(string(head), 400))
	switch {
	case code >= 500 && code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout:
		run.fail(fmt.Sprintf("%d to %s: %s", code, q.verb, statusMessage(head)), answer)
	case warnings > maxWarnings:
		run.fail(fmt.Sprintf("Warning headers over %d KiB to %s", maxWarnings>>10, q.verb), fmt.Sprintf("%s\n    Warning headers: %d bytes", answer, warnings))
	case size > maxAnswer:
		run.fail(fmt.Sprintf("answer over %d MiB to %s %s%s as %s", maxAnswer>>20, q.verb, q.resource, subOf(q), q.accept), answer)
	case code == http.StatusConflict && q.method == "PATCH" && !strings.Contains(string(q.body)+q.query, "resourceVersion") &&
		strings.Contains(string(head), "the object has been modified"):
		// A patch without a precondition is retried by kube until it applies.
		run.fail("409 \"the object has been modified\" to a patch without a resourceVersion", answer)
	case q.method == "DELETE" && q.sub != "" && q.verb == "delete" && code < 300:
		run.fail(fmt.Sprintf("%d to DELETE on a subresource, %s (kube: 405 MethodNotAllowed)", code, q.sub), answer)
	}
	if code < 300 {
		g.learn(q, head, size)
	} else if code == http.StatusNotFound && q.verb != "create" && q.verb != "other" && g.chance(0.5) {
		g.missing(q)
	}
}

// readAnswer reads an answer up to just over maxAnswer and returns its start and size.
func readAnswer(body io.Reader) ([]byte, int64, error) {
	var head bytes.Buffer
	n, err := io.Copy(&head, io.LimitReader(body, 64<<10))
	if err != nil {
		return head.Bytes(), n, err
	}
	m, err := io.Copy(io.Discard, io.LimitReader(body, maxAnswer+1-n))
	return head.Bytes(), n + m, err
}

// learn remembers objects and continue tokens from an answer, for later requests.
func (g *gen) learn(q *fuzzReq, head []byte, size int64) {
	if size > int64(len(head)) || len(head) == 0 || head[0] != '{' {
		return // not JSON, or too big to keep
	}
	var o map[string]any
	if json.Unmarshal(head, &o) != nil {
		return
	}
	meta, _ := o["metadata"].(map[string]any)
	if token, _ := meta["continue"].(string); token != "" {
		if len(g.continues) >= 16 {
			g.continues = g.continues[1:]
		}
		g.continues = append(g.continues, token)
	}
	name, _ := meta["name"].(string)
	switch {
	case q.sub != "" || q.kind == nil || name == "":
	case q.verb == "get" || q.verb == "update" || q.verb == "patch":
		g.known[q.path] = o
	case q.verb == "create":
		g.known[strings.TrimSuffix(q.path, "/"+name)+"/"+name] = o
	}
}

func subOf(q *fuzzReq) string {
	if q.sub == "" {
		return ""
	}
	return "/" + q.sub
}

func timeoutParam(query string) string {
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "timeoutSeconds="); ok {
			return v
		}
	}
	return "unset"
}

var digits = regexp.MustCompile(`[0-9]+`)

// normalize makes messages that differ only in numbers one class.
func normalize(s string) string {
	s = digits.ReplaceAllString(s, "N")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// statusMessage is the normalized message of a metav1.Status answer in JSON or YAML, or the
// longest printable run of another (Protobuf) answer.
func statusMessage(b []byte) string {
	var st struct {
		Message string `json:"message"`
	}
	if yaml.Unmarshal(b, &st) == nil && st.Message != "" {
		return normalize(st.Message)
	}
	longest := ""
	for _, run := range nonPrintable.Split(string(b), -1) {
		if len(run) > len(longest) {
			longest = run
		}
	}
	return normalize(longest)
}

var nonPrintable = regexp.MustCompile(`[^ -~]+`)

var panicValue = regexp.MustCompile(`panic="((?:[^"\\]|\\.)*)"`)

// scanLog reports every panic lapis logged (recovered, with "request panicked") or died of.
func (run *loadRun) scanLog(log string) {
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(line, "request panicked"):
			value := "?"
			if m := panicValue.FindStringSubmatch(line); m != nil {
				value = m[1]
			}
			if i := strings.Index(line, " stack="); i > 0 {
				line = line[:i] + " stack=" + truncate(line[i+7:], 1500)
			}
			run.fail("panic in lapis's log: "+normalize(value), truncate(line, 2500))
		case strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:"):
			run.fail("lapis crashed: "+normalize(line), line)
		case strings.Contains(strings.ToLower(line), "panic") && !strings.HasPrefix(line, "panic(") &&
			!strings.Contains(line, "/panic.go") && !strings.HasPrefix(line, "goroutine ") && !strings.HasPrefix(line, "\t"):
			run.fail("\"panic\" in lapis's log", truncate(line, 1000))
		}
	}
}

// setupFixtures creates the main namespaces and the two CRDs, and waits for their resources.
func setupFixtures(t *testing.T, l *lapisproc.Proc) {
	t.Helper()
	c := l.Client(requestTimeout)
	defer c.CloseIdleConnections()
	send := func(method, path string, body []byte) (int, string) { return do(t, l, c, method, path, mJSON, body) }
	must := func(method, path string, body []byte) {
		if code, answer := send(method, path, body); code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, code, answer)
		}
	}
	for _, ns := range mainNamespaces {
		must("POST", "/api/v1/namespaces", mustJSON(obj("v1", "Namespace", "", ns, nil, false)))
	}
	must("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", mustJSON(crd(widgetsCRD, "widgets", crGroup, "Widget", true, false)))
	must("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", mustJSON(crd(gadgetsCRD, "gadgets", crGroup, "Gadget", false, false)))
	for _, path := range []string{"/apis/" + crGroup + "/v1/namespaces/hz-a/widgets", "/apis/" + crGroup + "/v1/gadgets"} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, answer := send("GET", path, nil)
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %d %s, 30s after creating its CRD", path, code, answer)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
