package clientgo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

const quiet = 300 * time.Millisecond

// cmClient is a namespace's ConfigMaps with helpers that fail the test on error.
type cmClient struct {
	t   *testing.T
	ctx context.Context
	cs  kubernetes.Interface
	ns  string
}

func newCMClient(t *testing.T, cfg *rest.Config) *cmClient {
	cs := clientset(t, cfg)
	return &cmClient{t: t, ctx: ctxFor(t, 30*time.Second), cs: cs, ns: namespace(t, cs)}
}

func (c *cmClient) create(name string, labels map[string]string) *corev1.ConfigMap {
	c.t.Helper()
	cm, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(c.ctx, configMap(name, map[string]string{"k": "1"}, labels), metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return cm
}

func (c *cmClient) update(name, value string, labels map[string]string) *corev1.ConfigMap {
	c.t.Helper()
	cm, err := c.cs.CoreV1().ConfigMaps(c.ns).Update(c.ctx, configMap(name, map[string]string{"k": value}, labels), metav1.UpdateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return cm
}

func (c *cmClient) delete(name string) {
	c.t.Helper()
	if err := c.cs.CoreV1().ConfigMaps(c.ns).Delete(c.ctx, name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cmClient) watch(opts metav1.ListOptions) watch.Interface {
	c.t.Helper()
	w, err := c.cs.CoreV1().ConfigMaps(c.ns).Watch(c.ctx, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(w.Stop)
	return w
}

func (c *cmClient) listRV() string {
	c.t.Helper()
	list, err := c.cs.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return list.ResourceVersion
}

// TestWatchInitialState: a watch without a resourceVersion, or from "0", starts with an ADDED
// event per existing object (key order, at its resourceVersion), then streams every change;
// a deletion is reported at the deletion's resourceVersion.
func TestWatchInitialState(t *testing.T) {
	t.Parallel()
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			t.Parallel()
			c := newCMClient(t, servers.stable)
			b := c.create("b", nil)
			a := c.create("a", nil)
			w := c.watch(metav1.ListOptions{ResourceVersion: rv})
			expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "a", a.ResourceVersion)
			expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "b", b.ResourceVersion)
			expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, rootCA, "")
			expectQuiet(t, w, quiet)

			cc := c.create("c", nil)
			expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "c", cc.ResourceVersion)
			a2 := c.update("a", "2", nil)
			if got := expectCM(t, nextEvent(t, w, 5*time.Second), watch.Modified, "a", a2.ResourceVersion); got.Data["k"] != "2" {
				t.Errorf("MODIFIED a carries data %v", got.Data)
			}
			c.delete("b")
			gone := expectCM(t, nextEvent(t, w, 5*time.Second), watch.Deleted, "b", "")
			if mustRV(t, gone.ResourceVersion) <= mustRV(t, a2.ResourceVersion) {
				t.Errorf("DELETED b at resourceVersion %s, want the deletion's (after %s)", gone.ResourceVersion, a2.ResourceVersion)
			}
			expectQuiet(t, w, quiet)
			// The deletion's resourceVersion is a point in history: nothing is replayed after it.
			expectQuiet(t, c.watch(metav1.ListOptions{ResourceVersion: gone.ResourceVersion}), quiet)
		})
	}
}

// TestWatchFromResourceVersion: a watch from resourceVersion N streams only the changes after N.
func TestWatchFromResourceVersion(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	c.create("a", nil)
	a2 := c.update("a", "2", nil)
	b := c.create("b", nil)
	c.delete("a")
	w := c.watch(metav1.ListOptions{ResourceVersion: a2.ResourceVersion})
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "b", b.ResourceVersion)
	if gone := expectCM(t, nextEvent(t, w, 5*time.Second), watch.Deleted, "a", ""); gone.Data["k"] != "2" {
		t.Errorf("DELETED a carries %v, want its last state", gone.Data)
	}
	expectQuiet(t, w, quiet)
	cc := c.create("c", nil)
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "c", cc.ResourceVersion)

	// From the latest resourceVersion: nothing until something changes.
	w = c.watch(metav1.ListOptions{ResourceVersion: c.listRV()})
	expectQuiet(t, w, quiet)
	b2 := c.update("b", "2", nil)
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Modified, "b", b2.ResourceVersion)
}

// TestWatchLabelSelector: objects entering the selection are ADDED, leaving it DELETED (with
// their previous content, at the change's resourceVersion, as kube-apiserver's watch cache
// reports them), others never appear.
func TestWatchLabelSelector(t *testing.T) {
	t.Parallel()
	web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
	c := newCMClient(t, servers.stable)
	x := c.create("x", web)
	c.create("y", db)
	w := c.watch(metav1.ListOptions{LabelSelector: "app=web"})
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "x", x.ResourceVersion)
	expectQuiet(t, w, quiet)

	y2 := c.update("y", "2", web)
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "y", y2.ResourceVersion)
	x2 := c.update("x", "2", db)
	out := expectCM(t, nextEvent(t, w, 5*time.Second), watch.Deleted, "x", x2.ResourceVersion)
	if !reflect.DeepEqual(out.Labels, web) || out.Data["k"] != "1" {
		t.Errorf("DELETED x (relabelled out of the selector) carries labels %v data %v; kube-apiserver sends the object's previous content (labels %v, data k=1) at the new resourceVersion", out.Labels, out.Data, web)
	}
	c.update("x", "3", db) // outside the selection: not seen
	c.create("z", db)
	expectQuiet(t, w, quiet)
	c.delete("y")
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Deleted, "y", "")
	expectQuiet(t, w, quiet)
}

// TestWatchFieldSelector: a metadata.name field selector shows one object's events only.
func TestWatchFieldSelector(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	foo := c.create("foo", nil)
	c.create("bar", nil)
	w := c.watch(metav1.ListOptions{FieldSelector: "metadata.name=foo"})
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "foo", foo.ResourceVersion)
	c.update("bar", "2", nil)
	expectQuiet(t, w, quiet)
	foo2 := c.update("foo", "2", nil)
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Modified, "foo", foo2.ResourceVersion)
	c.delete("bar")
	c.delete("foo")
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Deleted, "foo", "")
	expectQuiet(t, w, quiet)
}

// TestWatchTimeout: the server ends a watch cleanly after timeoutSeconds.
func TestWatchTimeout(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	httpClient, err := rest.HTTPClientFor(servers.stable)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// From the current resourceVersion: kube-root-ca.crt, already there, is not sent.
	resp, err := httpClient.Get(servers.stable.Host + "/api/v1/namespaces/" + c.ns + "/configmaps?watch=true&timeoutSeconds=1&resourceVersion=" + c.listRV())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	elapsed := time.Since(start)
	if resp.StatusCode != http.StatusOK || err != nil || len(body) != 0 {
		t.Fatalf("watch answered %d, body %q, read error %v; want 200 and a stream that ends cleanly with no events", resp.StatusCode, body, err)
	}
	if elapsed < 900*time.Millisecond || elapsed > 4*time.Second {
		t.Fatalf("watch with timeoutSeconds=1 ended after %v", elapsed)
	}
}

// TestWatchBookmarks: with allowWatchBookmarks a watch gets BOOKMARK events carrying nothing but
// a resourceVersion. kube-apiserver sends one shortly (2s) before the watch's timeout, once
// the resourceVersion has moved, so a client resumes from as recent a point as possible.
func TestWatchBookmarks(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	w := c.watch(metav1.ListOptions{ResourceVersion: c.listRV(), AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](5)})
	a := c.create("a", nil)
	expectCM(t, nextEvent(t, w, 5*time.Second), watch.Added, "a", a.ResourceVersion)
	ev := nextEvent(t, w, 4500*time.Millisecond)
	if rv := expectBookmark(t, ev, nil); mustRV(t, rv) < mustRV(t, a.ResourceVersion) {
		t.Errorf("bookmark at resourceVersion %s, before the event it follows (%s)", rv, a.ResourceVersion)
	}
}

// TestWatchCompactedResourceVersion: a watch from a resourceVersion compacted away gets
// HTTP 200 and an ERROR event with a 410 Expired Status ("too old resource version").
func TestWatchCompactedResourceVersion(t *testing.T) {
	t.Parallel()
	cs := clientset(t, servers.compacting)
	ctx := ctxFor(t, 30*time.Second)
	ns := namespace(t, cs)
	clk := newClock(t, cs)
	s, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := waitCompacted(t, clk, func(ctx context.Context) (watch.Interface, error) {
		return cs.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: s.ResourceVersion})
	})
	expectTooOld(t, ev, s.ResourceVersion)

	// On the wire: 200, then the ERROR event.
	httpClient, err := rest.HTTPClientFor(servers.compacting)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Get(servers.compacting.Host + "/api/v1/namespaces/" + ns + "/secrets?watch=true&resourceVersion=" + s.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var line struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&line); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("raw watch answered %d (%v)", resp.StatusCode, err)
	}
	if line.Type != "ERROR" || line.Object.Kind != "Status" || line.Object.APIVersion != "v1" || line.Object.Code != http.StatusGone ||
		line.Object.Reason != metav1.StatusReasonExpired || !tooOldMessage(line.Object.Message, s.ResourceVersion) {
		t.Fatalf("raw watch event %+v, want ERROR with a v1 Status 410 Expired", line)
	}
}
