package clientgo

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// handlerView is what an informer's event handlers have been told.
type handlerView struct {
	mu      sync.Mutex
	last    map[string]*corev1.ConfigMap
	deleted map[string]int
}

func newHandlerView() *handlerView {
	return &handlerView{last: map[string]*corev1.ConfigMap{}, deleted: map[string]int{}}
}

func (h *handlerView) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			cm := obj.(*corev1.ConfigMap)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.last[key(cm.Namespace, cm.Name)] = cm
		},
		UpdateFunc: func(_, obj any) {
			cm := obj.(*corev1.ConfigMap)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.last[key(cm.Namespace, cm.Name)] = cm
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			cm := obj.(*corev1.ConfigMap)
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.last, key(cm.Namespace, cm.Name))
			h.deleted[key(cm.Namespace, cm.Name)]++
		},
	}
}

func (h *handlerView) state() map[string]cmState {
	h.mu.Lock()
	defer h.mu.Unlock()
	cms := make([]*corev1.ConfigMap, 0, len(h.last))
	for _, cm := range h.last {
		cms = append(cms, cm)
	}
	return stateOf(cms)
}

func (h *handlerView) deletedCount(k string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deleted[k]
}

func storeState(s cache.Store) map[string]cmState {
	var cms []*corev1.ConfigMap
	for _, obj := range s.List() {
		cms = append(cms, obj.(*corev1.ConfigMap))
	}
	return stateOf(cms)
}

// syncSelector selects the ConfigMaps TestInformerStaysInSync writes: other tests' namespaces get
// ConfigMaps of their own (kube-root-ca.crt) at any moment, which its informers must not count.
const syncSelector = "app=sync"

func storageState(ctx context.Context, cs kubernetes.Interface, namespace string) (map[string]cmState, error) {
	list, err := cs.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: syncSelector})
	if err != nil {
		return nil, err
	}
	cms := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		cms[i] = &list.Items[i]
	}
	return stateOf(cms), nil
}

// hasGone reports whether a recorded watch stream carried an ERROR event with a 410 Status.
func hasGone(events []watch.Event) bool {
	for _, ev := range events {
		if s, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error && s.Code == http.StatusGone {
			return true
		}
	}
	return false
}

// isInitialState reports whether a request asks for a collection's whole state: a list, or a
// watch that starts with it (no resourceVersion, "0", or sendInitialEvents).
func isInitialState(e *exchange) bool {
	q := e.URL.Query()
	if !e.isWatch() {
		return e.Method == http.MethodGet
	}
	rv := q.Get("resourceVersion")
	return rv == "" || rv == "0" || q.Get("sendInitialEvents") == "true"
}

// TestInformerStaysInSync runs a shared informer with default settings, and one whose watches
// the server ends every two seconds, on the ConfigMaps this test labels on the compacting server,
// and checks that both stay exactly in sync with storage through
// writes, a compaction that invalidates their watches' resourceVersion, and connections killed
// under them.
func TestInformerStaysInSync(t *testing.T) {
	t.Parallel()
	s := startSyncedInformers(t)
	s.inSync(t, "initial sync")
	s.createUpdateDelete(t)
	oldRV := s.compactPastInformers(t)
	s.interruptWatchDuringChanges(t, oldRV)
	s.killConnectionsWhileChangesStream(t)
}

// syncedInformers is TestInformerStaysInSync's writer and two informers on ConfigMaps of one
// namespace: main (default options, handlers recorded by view) and short (2-second watches),
// each through a client whose connections the test can kill. The steps run in order.
type syncedInformers struct {
	ctx                     context.Context
	writer                  kubernetes.Interface
	clk                     *clock
	ns                      string
	cms                     typedcorev1.ConfigMapInterface
	main, short             *client
	informer, shortInformer cache.SharedIndexInformer
	view                    *handlerView
}

func startSyncedInformers(t *testing.T) *syncedInformers {
	base := servers.compacting
	writer := clientset(t, base)
	s := &syncedInformers{ctx: ctxFor(t, 55*time.Second), writer: writer, ns: namespace(t, writer)}
	s.clk = newClock(t, writer)
	s.cms = writer.CoreV1().ConfigMaps(s.ns)
	for i := range 3 {
		s.create(t, fmt.Sprintf("pre-%d", i), "1")
	}

	s.main = newClient(t, base)
	factory := informers.NewSharedInformerFactoryWithOptions(s.main.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = syncSelector
	}))
	s.informer = factory.Core().V1().ConfigMaps().Informer()
	s.view = newHandlerView()
	if _, err := s.informer.AddEventHandler(s.view.handler()); err != nil {
		t.Fatal(err)
	}
	s.short = newClient(t, base)
	shortFactory := informers.NewSharedInformerFactoryWithOptions(s.short.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.TimeoutSeconds = ptr.To[int64](2)
		o.LabelSelector = syncSelector
	}))
	s.shortInformer = shortFactory.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown(); shortFactory.Shutdown() })
	factory.Start(stop)
	shortFactory.Start(stop)
	syncCtx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), s.informer.HasSynced, s.shortInformer.HasSynced) {
		t.Fatal("informers did not sync")
	}
	return s
}

func (s *syncedInformers) create(t *testing.T, name, value string) {
	t.Helper()
	if _, err := s.cms.Create(s.ctx, configMap(name, map[string]string{"v": value}, map[string]string{"app": "sync"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("create %s: %v", name, err)
	}
}

func (s *syncedInformers) update(t *testing.T, name, value string) {
	t.Helper()
	if _, err := s.cms.Update(s.ctx, configMap(name, map[string]string{"v": value}, map[string]string{"app": "sync"}), metav1.UpdateOptions{}); err != nil {
		t.Errorf("update %s: %v", name, err)
	}
}

func (s *syncedInformers) del(t *testing.T, name string) {
	t.Helper()
	if err := s.cms.Delete(s.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete %s: %v", name, err)
	}
}

// inSync waits until both informers' stores and main's handlers agree with storage, and
// checks that main's store stays so.
func (s *syncedInformers) inSync(t *testing.T, what string) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, what, func() (bool, string) {
		want, err := storageState(s.ctx, s.writer, "")
		if err != nil {
			return false, err.Error()
		}
		for name, got := range map[string]map[string]cmState{
			"informer store":               storeState(s.informer.GetStore()),
			"informer handlers":            s.view.state(),
			"short-timeout informer store": storeState(s.shortInformer.GetStore()),
		} {
			if d := diffStates(got, want); d != "" {
				return false, name + " differs from storage:" + d
			}
		}
		return true, ""
	})
	// Quiet means stable: nothing arrives late.
	time.Sleep(200 * time.Millisecond)
	want, err := storageState(s.ctx, s.writer, "")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffStates(storeState(s.informer.GetStore()), want); d != "" {
		t.Fatalf("%s: informer diverged after converging:%s", what, d)
	}
}

func (s *syncedInformers) createUpdateDelete(t *testing.T) {
	for i := range 7 {
		s.create(t, fmt.Sprintf("cm-%d", i), "1")
	}
	for i := range 4 {
		s.update(t, fmt.Sprintf("cm-%d", i), "2")
	}
	for _, name := range []string{"pre-0", "cm-4", "cm-5"} {
		s.del(t, name)
	}
	s.inSync(t, "after creates, updates and deletes")
	for _, name := range []string{"pre-0", "cm-4", "cm-5"} {
		if n := s.view.deletedCount(key(s.ns, name)); n != 1 {
			t.Errorf("handlers saw %d deletions of %s, want 1", n, name)
		}
	}
}

// compactPastInformers has etcd move on (other resources change) until the informers'
// resourceVersion is compacted, and returns main's: a plain watch from it gets kube's 410
// ERROR event, and the short-timeout informer, rewatching from its own within two seconds,
// gets 410 and starts over from a fresh initial state.
func (s *syncedInformers) compactPastInformers(t *testing.T) string {
	oldRV := s.informer.LastSyncResourceVersion()
	shortOldRV := s.shortInformer.LastSyncResourceVersion()
	ev := waitCompacted(t, s.clk, func(ctx context.Context) (watch.Interface, error) {
		return s.writer.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV, LabelSelector: syncSelector})
	})
	expectTooOld(t, ev, oldRV)

	poll.Eventually(t, 10*time.Second, "short-timeout informer's rewatch from a compacted resourceVersion gets 410, then relists", func() (bool, string) {
		exs := s.short.rec.exchanges("/configmaps")
		for i, e := range exs {
			if e.isWatch() && e.URL.Query().Get("resourceVersion") == shortOldRV && hasGone(e.events()) {
				for _, later := range exs[i+1:] {
					if isInitialState(later) && later.Status == http.StatusOK {
						return true, ""
					}
				}
			}
		}
		return false, "requests:" + describe(exs)
	})
	return oldRV
}

// interruptWatchDuringChanges: main's connection dies and cannot be re-established for a
// moment, during which ConfigMaps change; its rewatch from the compacted oldRV gets 410 and it
// relists, noticing the deletions it missed.
func (s *syncedInformers) interruptWatchDuringChanges(t *testing.T, oldRV string) {
	killed := time.Now()
	s.main.dialer.setDown(true)
	if n := s.main.dialer.kill(); n == 0 {
		t.Fatal("the informer had no open connection to kill")
	}
	s.create(t, "down-0", "1")
	s.create(t, "down-1", "1")
	s.update(t, "cm-0", "3")
	s.update(t, "cm-1", "3")
	s.del(t, "cm-2")
	s.del(t, "cm-3")
	s.main.dialer.setDown(false)
	s.inSync(t, "after compaction and an interrupted watch")
	for _, name := range []string{"cm-2", "cm-3"} {
		if n := s.view.deletedCount(key(s.ns, name)); n != 1 {
			t.Errorf("handlers saw %d deletions of %s (deleted while disconnected), want 1", n, name)
		}
	}
	var after []*exchange
	for _, e := range s.main.rec.exchanges("/configmaps") {
		if e.At.After(killed) && e.Status != 0 {
			after = append(after, e)
		}
	}
	if len(after) < 2 || !after[0].isWatch() || after[0].URL.Query().Get("resourceVersion") != oldRV || !hasGone(after[0].events()) || !isInitialState(after[1]) {
		t.Errorf("after reconnecting, want a watch from resourceVersion %s answered with 410, then a relist; requests were:%s", oldRV, describe(after))
	}
}

// killConnectionsWhileChangesStream: the informers resume and converge.
func (s *syncedInformers) killConnectionsWhileChangesStream(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 30 {
			s.update(t, "cm-6", fmt.Sprint(i))
			if i%10 == 0 {
				s.create(t, fmt.Sprintf("burst-%d", i), "1")
			}
			if i%10 == 5 {
				s.del(t, fmt.Sprintf("burst-%d", i-5))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for range 3 {
		time.Sleep(100 * time.Millisecond)
		s.main.dialer.kill()
		s.short.dialer.kill()
	}
	<-done
	s.inSync(t, "after interrupted watches")
}
