package clientgo

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// secretEvent is an informer handler call as far as the test cares.
type secretEvent struct {
	Type, Name, RV string
	Data           string
	Labels         map[string]string
}

type secretLog struct {
	mu     sync.Mutex
	events []secretEvent
}

func (l *secretLog) add(typ string, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s := obj.(*corev1.Secret)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, secretEvent{Type: typ, Name: s.Name, RV: s.ResourceVersion, Data: string(s.Data["k"]), Labels: s.Labels})
}

func (l *secretLog) snapshot() []secretEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]secretEvent(nil), l.events...)
}

// TestProtobufInformer runs Secret informers over protobuf and over JSON side by side: both see
// the same events, with the same objects, and the protobuf one really speaks protobuf.
func TestProtobufInformer(t *testing.T) {
	t.Parallel()
	writer := clientset(t, servers.stable)
	ctx := ctxFor(t, 30*time.Second)
	ns := namespace(t, writer)
	secrets := writer.CoreV1().Secrets(ns)
	var want []secretEvent
	record := func(typ string, s *corev1.Secret) {
		want = append(want, secretEvent{Type: typ, Name: s.Name, RV: s.ResourceVersion, Data: string(s.Data["k"]), Labels: s.Labels})
	}
	for _, name := range []string{"s-1", "s-2"} {
		s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"k": []byte(name + "\x00\xff")}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		record("add", s)
	}

	clients := map[string]*client{
		"protobuf": newClient(t, servers.stable, func(c *rest.Config) { c.ContentType, c.AcceptContentTypes = protobufMediaType, protobufMediaType }),
		"json":     newClient(t, servers.stable, func(c *rest.Config) { c.ContentType, c.AcceptContentTypes = "application/json", "application/json" }),
	}
	logs := map[string]*secretLog{}
	stop := make(chan struct{})
	var synced []cache.InformerSynced
	for name, c := range clients {
		factory := informers.NewSharedInformerFactoryWithOptions(c.cs, 0, informers.WithNamespace(ns))
		informer := factory.Core().V1().Secrets().Informer()
		l := &secretLog{}
		logs[name] = l
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { l.add("add", obj) },
			UpdateFunc: func(_, obj any) { l.add("update", obj) },
			DeleteFunc: func(obj any) { l.add("delete", obj) },
		}); err != nil {
			t.Fatal(err)
		}
		factory.Start(stop)
		t.Cleanup(factory.Shutdown)
		synced = append(synced, informer.HasSynced)
	}
	t.Cleanup(func() { close(stop) })
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		t.Fatal("informers did not sync")
	}

	s3, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-3"}, StringData: map[string]string{"k": "three"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record("add", s3)
	s1, err := secrets.Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-1", Labels: map[string]string{"l": "1"}}, Data: map[string][]byte{"k": []byte("one")}}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record("update", s1)
	s2, err := secrets.Get(ctx, "s-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, "s-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The handler sees the deleted object's last state (the deletion's resourceVersion is not
	// known here).
	s2.ResourceVersion = ""
	record("delete", s2)

	for name, l := range logs {
		poll.Eventually(t, 10*time.Second, name+" informer sees every change", func() (bool, string) {
			got := l.snapshot()
			if len(got) < len(want) {
				return false, fmt.Sprintf("%d of %d events", len(got), len(want))
			}
			return true, ""
		})
	}
	time.Sleep(quiet)
	pb, js := logs["protobuf"].snapshot(), logs["json"].snapshot()
	// The order of the initial adds is the informer's (a sync replaces the store wholesale).
	for _, events := range [][]secretEvent{pb, js} {
		if len(events) >= 2 {
			sort.Slice(events[:2], func(i, j int) bool { return events[i].Name < events[j].Name })
		}
	}
	if !reflect.DeepEqual(pb, js) {
		t.Errorf("protobuf and JSON informers saw different events:\nprotobuf %+v\njson     %+v", pb, js)
	}
	if len(pb) == len(want) {
		pb[len(pb)-1].RV = "" // the deletion
	}
	if !reflect.DeepEqual(pb, want) {
		t.Errorf("protobuf informer saw\n%+v\nwant\n%+v", pb, want)
	}

	// On the wire.
	exs := clients["protobuf"].rec.exchanges("/secrets")
	for _, e := range exs {
		wantType := protobufMediaType
		if e.isWatch() {
			wantType += ";stream=watch"
		}
		if e.Accept != protobufMediaType || e.ContentType != wantType {
			t.Errorf("protobuf client: %s (Accept %q), want Content-Type %s", e, e.Accept, wantType)
		}
	}
	for _, e := range clients["json"].rec.exchanges("/secrets") {
		if !strings.HasPrefix(e.ContentType, "application/json") {
			t.Errorf("json client: %s", e)
		}
	}
	if len(exs) == 0 {
		t.Error("protobuf client made no requests")
	}
}
