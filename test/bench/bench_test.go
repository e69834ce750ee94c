package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// smallEnv, when set, shrinks every benchmark to a size that runs in a moment: TestBenchmarksRun
// runs the benchmarks that way so that `go test` exercises their code.
const smallEnv = "LAPIS_BENCH_SMALL"

func small() bool { return os.Getenv(smallEnv) != "" }

// createConcurrency is how many clients create the objects a list benchmark reads.
const createConcurrency = 16

// BenchmarkList times full lists (no limit; served from the watch cache) and lists paged by 500
// (the first page from the cache, the rest from etcd) of N small custom resources in one
// namespace, through the dynamic client: the time includes the client decoding the JSON. The
// -raw variants read the bytes without decoding them (the server's share): all-raw as JSON,
// table-raw as kubectl's Table, limit500-raw page by page.
func BenchmarkList(b *testing.B) {
	sizes := []int{2000, 20000}
	if small() {
		sizes = []int{20}
	}
	for _, n := range sizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			dyn := setup(b)
			ns := seedList(b, dyn, n)
			ri := dyn.Resource(widgetGVR).Namespace(ns)
			b.Run("all", func(b *testing.B) { benchListing(b, ri, n, 0) })
			b.Run("all-raw", func(b *testing.B) { benchRawListing(b, ns, n, "application/json", 0) })
			b.Run("table-raw", func(b *testing.B) { benchRawListing(b, ns, n, tableAccept, 0) })
			limit := int64(500)
			if small() {
				limit = 7
			}
			b.Run(fmt.Sprintf("limit%d", limit), func(b *testing.B) { benchListing(b, ri, n, limit) })
			b.Run(fmt.Sprintf("limit%d-raw", limit), func(b *testing.B) { benchRawListing(b, ns, n, "application/json", int(limit)) })
		})
	}
}

// listSeeds remembers, per size, the namespace holding that many widgets, so that the objects are
// created once however often the benchmark functions run.
var listSeeds sync.Map // int -> *listSeed

type listSeed struct {
	once sync.Once
	ns   string
	err  error
}

func seedList(b *testing.B, dyn dynamic.Interface, n int) string {
	b.Helper()
	v, _ := listSeeds.LoadOrStore(n, &listSeed{})
	s := v.(*listSeed)
	s.once.Do(func() {
		ctx := context.Background()
		s.ns = fmt.Sprintf("bench-list-%d", n)
		if s.err = ensureNamespace(ctx, dyn, s.ns); s.err != nil {
			return
		}
		ri := dyn.Resource(widgetGVR).Namespace(s.ns)
		start := time.Now()
		s.err = parallel(n, createConcurrency, func(i int) error {
			_, err := ri.Create(ctx, widget(s.ns, fmt.Sprintf("w-%06d", i), i), metav1.CreateOptions{})
			return err
		})
		if s.err == nil {
			b.Logf("created %d widgets in %v (%.0f/s, %d clients)", n, time.Since(start).Round(time.Millisecond),
				float64(n)/time.Since(start).Seconds(), createConcurrency)
		}
	})
	if s.err != nil {
		b.Fatalf("seeding %d widgets: %v", n, s.err)
	}
	return s.ns
}

// benchListing lists every object of ri, in pages of limit when limit > 0, once per iteration.
func benchListing(b *testing.B, ri dynamic.ResourceInterface, want int, limit int64) {
	ctx := context.Background()
	pages := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, cont := 0, ""
		for {
			l, err := ri.List(ctx, metav1.ListOptions{Limit: limit, Continue: cont})
			if err != nil {
				b.Fatalf("list: %v", err)
			}
			pages++
			got += len(l.Items)
			if cont = l.GetContinue(); cont == "" {
				break
			}
		}
		if got != want {
			b.Fatalf("listed %d objects, want %d", got, want)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(want), "objects/op")
	b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
	if limit > 0 {
		b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
	}
}

// benchRawListing lists every object of namespace ns as bytes of the accept representation
// (JSON, or a Table), not decoded: the server's share of a full list. With limit > 0 it follows
// continue tokens through pages of that size.
func benchRawListing(b *testing.B, ns string, want int, accept string, limit int) {
	hc, err := rest.HTTPClientFor(lapis.cfg)
	if err != nil {
		b.Fatal(err)
	}
	base := lapis.cfg.Host + "/apis/" + widgetGVR.Group + "/" + widgetGVR.Version + "/namespaces/" + ns + "/" + widgetGVR.Resource
	// counting decodes every page whole (the untimed check); otherwise a page is read only up
	// to its list metadata, for the continue token: the client's decoding is not the server's
	// share.
	listAll := func(counting bool) (items, size, pages int, err error) {
		cont := ""
		for {
			u := base
			if limit > 0 {
				u += "?limit=" + strconv.Itoa(limit) + "&continue=" + url.QueryEscape(cont)
			}
			body, err := getRaw(hc, u, accept)
			if err != nil {
				return 0, 0, 0, err
			}
			pages++
			size += len(body)
			if limit == 0 {
				return 0, size, pages, nil
			}
			if !counting {
				if cont, err = continueOf(body); err != nil {
					return 0, 0, 0, err
				}
				if cont == "" {
					return 0, size, pages, nil
				}
				continue
			}
			var page struct {
				Items    []json.RawMessage
				Rows     []json.RawMessage
				Metadata struct{ Continue string }
			}
			if err := json.Unmarshal(body, &page); err != nil {
				return 0, 0, 0, err
			}
			items += len(page.Items) + len(page.Rows)
			if cont = page.Metadata.Continue; cont == "" {
				return items, size, pages, nil
			}
		}
	}
	// Check once, untimed, that the list is complete.
	if limit == 0 {
		body, err := getRaw(hc, base, accept)
		if err != nil {
			b.Fatal(err)
		}
		if got := countItems(b, body); got != want {
			b.Fatalf("listed %d objects, want %d", got, want)
		}
	} else if got, _, _, err := listAll(true); err != nil || got != want {
		b.Fatalf("listed %d objects (%v), want %d", got, err, want)
	}
	size, pages := 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, s, p, err := listAll(false)
		if err != nil {
			b.Fatal(err)
		}
		size, pages = s, p
	}
	b.StopTimer()
	b.ReportMetric(float64(want), "objects/op")
	b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
	b.ReportMetric(float64(size)/1e6, "MB/op")
	if limit > 0 {
		b.ReportMetric(float64(pages), "pages/op")
	}
}

// continueOf returns the continue token of a list or Table, reading its top-level fields only
// until its metadata (kube-apiserver and lapis both write it before the items).
func continueOf(body []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		return "", err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key == "metadata" {
			var meta struct{ Continue string }
			err := dec.Decode(&meta)
			return meta.Continue, err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}

// countItems counts a list's items or a Table's rows.
func countItems(b *testing.B, body []byte) int {
	b.Helper()
	var list struct{ Items, Rows []json.RawMessage }
	if err := json.Unmarshal(body, &list); err != nil {
		b.Fatalf("decoding a list: %v", err)
	}
	return len(list.Items) + len(list.Rows)
}

// tableAccept asks for kube's Table representation, as kubectl get does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// BenchmarkWatchFanout: W watchers (each on its own connection, as separate controllers are)
// watch one object; an iteration makes M sequential updates to it and waits until every watcher
// has seen every update. Latency (p50-ms, p99-ms) runs from the update's acknowledgement (the
// PATCH response) to a watcher's receipt of the event; one that arrives before the
// acknowledgement counts as 0. send-p50-ms and send-p99-ms run from the PATCH request instead.
func BenchmarkWatchFanout(b *testing.B) {
	// 100 watchers of 50 updates, and 1 000 watchers (issue 11's two sizes) of 10.
	sizes := [][2]int{{100, 50}, {1000, 10}}
	if small() {
		sizes = [][2]int{{3, 2}}
	}
	for _, size := range sizes {
		watchers, updates := size[0], size[1]
		b.Run(fmt.Sprintf("watchers-%d", watchers), func(b *testing.B) { benchWatchFanout(b, watchers, updates) })
	}
}

// fanoutRound is one iteration of the watch fan-out: its updates' sequence numbers start at base.
type fanoutRound struct {
	base      int
	sent      []time.Time   // per update: when its request was made
	ack       []time.Time   // per update: when its response came
	recv      [][]time.Time // per update, per watcher
	delivered atomic.Int64
	done      chan struct{}
}

var fanoutRuns atomic.Int64

func benchWatchFanout(b *testing.B, watchers, updates int) {
	dyn := setup(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "bench-watch"
	if err := ensureNamespace(ctx, dyn, ns); err != nil {
		b.Fatal(err)
	}
	// A fresh object per run of this function: no event of an earlier run can reach these watchers.
	name := fmt.Sprintf("fanout-%d", fanoutRuns.Add(1))
	ri := dyn.Resource(widgetGVR).Namespace(ns)
	obj, err := ri.Create(ctx, widget(ns, name, 0), metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}

	var (
		cur      atomic.Pointer[fanoutRound]
		broken   = make(chan string, watchers)
		wg       sync.WaitGroup
		clients  []*http.Client
		streams  []watch.Interface
		selector = "metadata.name=" + name
	)
	defer func() {
		for _, s := range streams {
			s.Stop()
		}
		cancel()
		wg.Wait()
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	for w := 0; w < watchers; w++ {
		wdyn, hc, err := separateClient(lapis.cfg)
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, hc)
		stream, err := wdyn.Resource(widgetGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{
			ResourceVersion: obj.GetResourceVersion(), FieldSelector: selector})
		if err != nil {
			b.Fatalf("watch %d: %v", w, err)
		}
		streams = append(streams, stream)
		wg.Add(1)
		go func() {
			defer wg.Done()
			receiveFanout(ctx, stream, w, watchers, &cur, broken)
		}()
	}

	var rounds []*fanoutRound
	seq := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := &fanoutRound{base: seq, sent: make([]time.Time, updates), ack: make([]time.Time, updates), recv: make([][]time.Time, updates), done: make(chan struct{})}
		for k := range r.recv {
			r.recv[k] = make([]time.Time, watchers)
		}
		cur.Store(r)
		for k := 0; k < updates; k++ {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"seq":"%d"}}}`, seq+k)
			r.sent[k] = time.Now()
			if _, err := ri.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				b.Fatalf("update: %v", err)
			}
			r.ack[k] = time.Now()
		}
		select {
		case <-r.done:
		case msg := <-broken:
			b.Fatal(msg)
		case <-time.After(30 * time.Second):
			b.Fatalf("after 30s, %d of %d events delivered", r.delivered.Load(), updates*watchers)
		}
		seq += updates
		rounds = append(rounds, r)
	}
	b.StopTimer()

	reportFanout(b, rounds, updates)
}

// receiveFanout records, for watcher w, when each update of the current round reached it, and
// closes the round's done channel once every watcher has every update.
func receiveFanout(ctx context.Context, stream watch.Interface, w, watchers int, cur *atomic.Pointer[fanoutRound], broken chan<- string) {
	for ev := range stream.ResultChan() {
		now := time.Now()
		if ev.Type == watch.Error {
			broken <- fmt.Sprintf("watcher %d: error event %v", w, ev.Object)
			return
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Modified || !ok {
			continue
		}
		seq, err := strconv.Atoi(u.GetLabels()["seq"])
		r := cur.Load()
		if err != nil || r == nil || seq < r.base || seq >= r.base+len(r.ack) {
			continue
		}
		r.recv[seq-r.base][w] = now
		if r.delivered.Add(1) == int64(len(r.ack)*watchers) {
			close(r.done)
		}
	}
	if ctx.Err() == nil {
		broken <- fmt.Sprintf("watcher %d: watch ended early", w)
	}
}

// reportFanout reports the delivery latencies of rounds: from each update's acknowledgement, and
// from its sending.
func reportFanout(b *testing.B, rounds []*fanoutRound, updates int) {
	var lat, fromSend []time.Duration
	for _, r := range rounds {
		for k, ack := range r.ack {
			for _, got := range r.recv[k] {
				lat = append(lat, max(got.Sub(ack), 0))
				fromSend = append(fromSend, got.Sub(r.sent[k]))
			}
		}
	}
	slices.Sort(lat)
	slices.Sort(fromSend)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(fromSend, 0.50)), "send-p50-ms")
	b.ReportMetric(ms(percentile(fromSend, 0.99)), "send-p99-ms")
	b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(updates*b.N)/b.Elapsed().Seconds(), "updates/s")
}

// separateClient is a dynamic client with a connection of its own (client-go otherwise shares
// one HTTP/2 connection among all clients of the same config).
func separateClient(cfg *rest.Config) (dynamic.Interface, *http.Client, error) {
	c := rest.CopyConfig(cfg)
	c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil } // uncacheable transport
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, nil, err
	}
	d, err := dynamic.NewForConfigAndClient(c, hc)
	return d, hc, err
}

// percentile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// BenchmarkServerSideApply: C concurrent clients force-apply Widgets, each client to its own
// objects, alternating two field managers that both own spec.size (so every apply takes fields
// from the other manager) and changing content each time. One iteration is one apply to every
// object (C × objects-per-client applies); applies/s and per-apply latency are reported.
func BenchmarkServerSideApply(b *testing.B) {
	clients, perClient := 16, 4
	if small() {
		clients, perClient = 2, 1
	}
	b.Run(fmt.Sprintf("clients-%d", clients), func(b *testing.B) { benchApply(b, clients, perClient) })
}

var (
	applySeeds sync.Map // objects -> *listSeed
	applyGen   atomic.Int64
)

func benchApply(b *testing.B, clients, perClient int) {
	dyn := setup(b)
	ctx := context.Background()
	objects := clients * perClient
	v, _ := applySeeds.LoadOrStore(objects, &listSeed{})
	seed := v.(*listSeed)
	seed.once.Do(func() {
		seed.ns = fmt.Sprintf("bench-ssa-%d", objects)
		if seed.err = ensureNamespace(ctx, dyn, seed.ns); seed.err != nil {
			return
		}
		ri := dyn.Resource(widgetGVR).Namespace(seed.ns)
		seed.err = parallel(objects, clients, func(i int) error {
			name := fmt.Sprintf("w-%04d", i)
			if _, err := ri.Apply(ctx, name, widget(seed.ns, name, 0), metav1.ApplyOptions{FieldManager: "bench-a", Force: true}); err != nil {
				return err
			}
			_, err := ri.Apply(ctx, name, sidecar(seed.ns, name, 0), metav1.ApplyOptions{FieldManager: "bench-b", Force: true})
			return err
		})
	})
	if seed.err != nil {
		b.Fatalf("seeding: %v", seed.err)
	}
	ri := dyn.Resource(widgetGVR).Namespace(seed.ns)

	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var (
			wg    sync.WaitGroup
			errMu sync.Mutex
			first error
		)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < perClient; j++ {
					o := c*perClient + j
					name := fmt.Sprintf("w-%04d", o)
					g := int(applyGen.Add(1)) // new content every time
					obj, manager := widget(seed.ns, name, g), "bench-a"
					if (i+o)%2 == 1 {
						obj, manager = sidecar(seed.ns, name, g), "bench-b"
					}
					t := time.Now()
					_, err := ri.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: manager, Force: true})
					lat[c] = append(lat[c], time.Since(t))
					if err != nil {
						errMu.Lock()
						if first == nil {
							first = fmt.Errorf("apply %s as %s: %w", name, manager, err)
						}
						errMu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
	}
	b.StopTimer()
	reportApplies(b, lat)
}

// sidecar is the second manager's configuration of a Widget: its own container and spec.size.
func sidecar(ns, name string, gen int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.lapis.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"size": int64(gen%7 + 10), "containers": []any{
			map[string]any{"name": "sidecar", "image": fmt.Sprintf("sidecar:%d", gen)},
		}},
	}}
}

// TestBenchmarksRun runs every benchmark once at a tiny size (in a child process of this test
// binary, so their output is seen), so that `go test` exercises the benchmark code.
func TestBenchmarksRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "-test.bench=.", "-test.benchtime=1x", "-test.timeout=3m")
	cmd.Env = append(os.Environ(), smallEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchmarks failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, want := range []string{
		"BenchmarkList/20/all", "BenchmarkList/20/all-raw", "BenchmarkList/20/table-raw", "BenchmarkList/20/limit7",
		"BenchmarkList/20/limit7-raw", "MB/op", "objects/op", "pages/op",
		"BenchmarkGet/clients-2", "gets/s", "BenchmarkStartup/objects-100", "ready-ms", "first-list-ms",
		"BenchmarkWatchFanout/watchers-3", "p50-ms", "p99-ms", "events/s",
		"BenchmarkServerSideApply/clients-2", "applies/s",
		"BenchmarkDeploymentApply/clients-2", "BenchmarkDeploymentList/20/json-raw", "BenchmarkDeploymentList/20/protobuf-raw",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("benchmark output lacks %q:\n%s", want, out)
		}
	}
}

// reportApplies reports the throughput and latency percentiles of the applies timed in lat
// (one slice per client).
func reportApplies(b *testing.B, lat [][]time.Duration) {
	all := slices.Concat(lat...)
	slices.Sort(all)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "applies/s")
	b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
}
