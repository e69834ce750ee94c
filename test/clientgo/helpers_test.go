package clientgo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// dialer makes the connections of one client: the test can kill them all, breaking every
// in-flight request and watch stream, and refuse new ones for a while.
type dialer struct {
	d     net.Dialer
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
	down  bool
}

type trackedConn struct {
	net.Conn
	d    *dialer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.d.mu.Lock()
		delete(c.d.conns, c)
		c.d.mu.Unlock()
	})
	return c.Conn.Close()
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	down := d.down
	d.mu.Unlock()
	if down {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	c, err := d.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, d: d}
	d.mu.Lock()
	d.conns[tc] = struct{}{}
	d.mu.Unlock()
	return tc, nil
}

// kill closes every open connection and returns how many there were.
func (d *dialer) kill() int {
	d.mu.Lock()
	conns := make([]*trackedConn, 0, len(d.conns))
	for c := range d.conns {
		conns = append(conns, c)
	}
	d.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

// setDown makes new connections fail with "connection refused" (true) or succeed again.
func (d *dialer) setDown(down bool) {
	d.mu.Lock()
	d.down = down
	d.mu.Unlock()
}

// exchange is one recorded request and its response, whose body is captured as the client reads
// it (watch streams included).
type exchange struct {
	Seq         int64
	At          time.Time
	Method      string
	URL         *url.URL
	Accept      string
	Status      int
	ContentType string
	Err         error

	mu   sync.Mutex
	body bytes.Buffer
}

func (e *exchange) isWatch() bool {
	w := e.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

func (e *exchange) Body() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]byte(nil), e.body.Bytes()...)
}

func (e *exchange) String() string {
	return fmt.Sprintf("#%d %s %s -> %d %s", e.Seq, e.Method, e.URL.RequestURI(), e.Status, e.ContentType)
}

// events decodes the captured watch stream, JSON or protobuf (a trailing partial event is
// ignored). Objects are decoded with client-go's scheme; ERROR events carry a *metav1.Status.
func (e *exchange) events() []watch.Event {
	mediaType, _, err := mime.ParseMediaType(e.ContentType)
	if err != nil {
		return nil
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		return nil
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(e.Body())))
	dec := streaming.NewDecoder(frames, info.StreamSerializer.Serializer)
	var out []watch.Event
	for {
		var we metav1.WatchEvent
		if _, _, err := dec.Decode(nil, &we); err != nil {
			return out
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(we.Object.Raw, nil, nil)
		if err != nil {
			return out
		}
		out = append(out, watch.Event{Type: watch.EventType(we.Type), Object: obj})
	}
}

type tapBody struct {
	io.ReadCloser
	e *exchange
}

func (t *tapBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.e.mu.Lock()
		if t.e.body.Len() < 8<<20 {
			t.e.body.Write(p[:n])
		}
		t.e.mu.Unlock()
	}
	return n, err
}

// recorder logs every request of the clients built on one rest.Config.
type recorder struct {
	seq atomic.Int64
	mu  sync.Mutex
	log []*exchange
}

type recordingTransport struct {
	rt  http.RoundTripper
	rec *recorder
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	e := &exchange{Seq: t.rec.seq.Add(1), At: time.Now(), Method: req.Method, URL: req.URL, Accept: req.Header.Get("Accept")}
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		e.Err = err
	} else {
		e.Status, e.ContentType = resp.StatusCode, resp.Header.Get("Content-Type")
		resp.Body = &tapBody{ReadCloser: resp.Body, e: e}
	}
	t.rec.mu.Lock()
	t.rec.log = append(t.rec.log, e)
	t.rec.mu.Unlock()
	return resp, err
}

// exchanges returns the recorded exchanges whose path ends with suffix, in order.
func (r *recorder) exchanges(suffix string) []*exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*exchange
	for _, e := range r.log {
		if strings.HasSuffix(e.URL.Path, suffix) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

func describe(es []*exchange) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("\n  " + e.String())
	}
	return b.String()
}

// client is a clientset whose connections the test controls and whose requests it records.
type client struct {
	cfg    *rest.Config
	cs     kubernetes.Interface
	dialer *dialer
	rec    *recorder
}

func newClient(t *testing.T, base *rest.Config, mutate ...func(*rest.Config)) *client {
	t.Helper()
	c := &client{cfg: rest.CopyConfig(base), dialer: &dialer{conns: map[*trackedConn]struct{}{}}, rec: &recorder{}}
	c.cfg.Dial = c.dialer.DialContext
	c.cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{rt: rt, rec: c.rec} }
	for _, m := range mutate {
		m(c.cfg)
	}
	var err error
	if c.cs, err = kubernetes.NewForConfig(c.cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.dialer.kill() })
	return c
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var nsCounter atomic.Int64

// rootCA is the ConfigMap lapis publishes in every namespace, as kube-controller-manager does.
const rootCA = "kube-root-ca.crt"

// namespace creates a namespace named after the test, and waits for its kube-root-ca.crt, so
// that it is there before the test starts rather than appearing in the middle of it.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", name, nsCounter.Add(1))
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	poll.Eventually(t, 10*time.Second, rootCA+" in "+name, func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(name).Get(context.Background(), rootCA, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return name
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// configMap is a ConfigMap named name with data and labels.
func configMap(name string, data, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
}

// cmState is what decides whether two views of a ConfigMap agree.
type cmState struct {
	RV     string
	Data   map[string]string
	Labels map[string]string
}

func key(namespace, name string) string { return namespace + "/" + name }

func stateOf(cms []*corev1.ConfigMap) map[string]cmState {
	out := map[string]cmState{}
	for _, cm := range cms {
		s := cmState{RV: cm.ResourceVersion, Data: cm.Data, Labels: cm.Labels}
		if s.Data == nil {
			s.Data = map[string]string{}
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		out[key(cm.Namespace, cm.Name)] = s
	}
	return out
}

// diffStates describes how got differs from want ("" when they are equal).
func diffStates(got, want map[string]cmState) string {
	var b strings.Builder
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "\n  missing %s (rv %s)", k, w.RV)
		case !wok:
			fmt.Fprintf(&b, "\n  extra %s (rv %s)", k, g.RV)
		case !reflect.DeepEqual(g, w):
			fmt.Fprintf(&b, "\n  %s: got %+v, want %+v", k, g, w)
		}
	}
	return b.String()
}

// nextEvent waits for w's next event, failing if none comes or the watch ends.
func nextEvent(t *testing.T, w watch.Interface, timeout time.Duration) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch ended while an event was expected")
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %v", timeout)
	}
	return watch.Event{}
}

// expectQuiet fails if w delivers anything within d.
func expectQuiet(t *testing.T, w watch.Interface, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch ended unexpectedly")
		}
		t.Fatalf("unexpected watch event %s %s", ev.Type, describeObject(ev.Object))
	case <-time.After(d):
	}
}

func describeObject(obj any) string {
	switch o := obj.(type) {
	case *metav1.Status:
		return fmt.Sprintf("Status{code %d, reason %s, message %q}", o.Code, o.Reason, o.Message)
	case metav1.Object:
		return fmt.Sprintf("%s/%s rv=%s labels=%v", o.GetNamespace(), o.GetName(), o.GetResourceVersion(), o.GetLabels())
	}
	return fmt.Sprintf("%#v", obj)
}

// expectCM checks that ev is a typ event for ConfigMap name at resourceVersion rv ("" for any).
func expectCM(t *testing.T, ev watch.Event, typ watch.EventType, name, rv string) *corev1.ConfigMap {
	t.Helper()
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if ev.Type != typ || !ok || cm.Name != name || (rv != "" && cm.ResourceVersion != rv) {
		t.Fatalf("got event %s %s, want %s %s rv=%q", ev.Type, describeObject(ev.Object), typ, name, rv)
	}
	return cm
}

// statusOf returns the Status of an API error, failing if err is not one.
func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var se apierrors.APIStatus
	if err == nil {
		t.Fatalf("request succeeded, an error was expected")
	}
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not an API status", err, err)
	}
	return se.Status()
}

// expectStatus checks an error's code, reason and exact message.
func expectStatus(t *testing.T, err error, code int32, reason metav1.StatusReason, message string) metav1.Status {
	t.Helper()
	s := statusOf(t, err)
	if s.Code != code || s.Reason != reason || s.Message != message {
		t.Errorf("got status %d %s %q,\nwant       %d %s %q", s.Code, s.Reason, s.Message, code, reason, message)
	}
	return s
}

// clock moves etcd's revision on by updating a Secret in a namespace of its own, so that the
// compactor has something to compact without the resources under test changing.
type clock struct {
	cs   kubernetes.Interface
	ns   string
	tick int
}

func newClock(t *testing.T, cs kubernetes.Interface) *clock {
	t.Helper()
	c := &clock{cs: cs, ns: namespace(t, cs)}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "clock"}, StringData: map[string]string{"tick": "0"}}
	if _, err := cs.CoreV1().Secrets(c.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *clock) advance(t *testing.T) {
	t.Helper()
	c.tick++
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "clock"}, StringData: map[string]string{"tick": fmt.Sprint(c.tick)}}
	if _, err := c.cs.CoreV1().Secrets(c.ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitCompacted advances the clock until a watch started by start (from an old
// resourceVersion of a resource nothing else changes) fails, and returns the failure event.
// Before compaction such a watch is simply quiet.
func waitCompacted(t *testing.T, c *clock, start func(ctx context.Context) (watch.Interface, error)) watch.Event {
	t.Helper()
	deadline := time.Now().Add(20 * compactionInterval)
	for time.Now().Before(deadline) {
		c.advance(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w, err := start(ctx)
		if err != nil {
			cancel()
			t.Fatalf("watch from a compacted resourceVersion failed as a request (%v); kube-apiserver answers 200 and an ERROR event", err)
		}
		select {
		case ev, ok := <-w.ResultChan():
			w.Stop()
			cancel()
			if !ok {
				t.Fatalf("watch from an old resourceVersion ended without an event")
			}
			if ev.Type != watch.Error {
				t.Fatalf("watch from an old resourceVersion delivered %s %s, though nothing changed after it", ev.Type, describeObject(ev.Object))
			}
			return ev
		case <-time.After(300 * time.Millisecond):
			w.Stop()
			cancel()
		}
	}
	t.Fatalf("the resourceVersion was not compacted within %v", 20*compactionInterval)
	return watch.Event{}
}

// expectTooOld checks that ev is kube's ERROR event for a watch from a compacted resourceVersion.
func expectTooOld(t *testing.T, ev watch.Event, rv string) {
	t.Helper()
	s, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok {
		t.Fatalf("got %s %s, want an ERROR event with a Status", ev.Type, describeObject(ev.Object))
	}
	if s.Status != metav1.StatusFailure || s.Code != http.StatusGone || s.Reason != metav1.StatusReasonExpired ||
		!tooOldMessage(s.Message, rv) {
		t.Fatalf("got %s, want Failure 410 Expired \"too old resource version: %s ...\"", describeObject(s), rv)
	}
}

// tooOldMessage reports whether message is kube's "too old resource version: RV" or the watch
// cache's "too old resource version: RV (OLDEST)".
func tooOldMessage(message, rv string) bool {
	rest, ok := strings.CutPrefix(message, "too old resource version: "+rv)
	return ok && (rest == "" || strings.HasPrefix(rest, " ("))
}
