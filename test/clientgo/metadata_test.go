package clientgo

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// TestMetadataInformer runs a metadata-only informer on ConfigMaps: it syncs with each object's
// metadata (nothing else) and sees creates, updates and deletes.
func TestMetadataInformer(t *testing.T) {
	t.Parallel()
	writer := clientset(t, servers.stable)
	ctx := ctxFor(t, 30*time.Second)
	ns := namespace(t, writer)
	cms := writer.CoreV1().ConfigMaps(ns)
	created := map[string]*corev1.ConfigMap{}
	for _, name := range []string{"m-1", "m-2"} {
		cm, err := cms.Create(ctx, configMap(name, map[string]string{"k": "v"}, map[string]string{"name": name}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[name] = cm
	}

	c := newClient(t, servers.stable)
	mc, err := metadata.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, nil)
	informer := factory.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps")).Informer()
	var mu sync.Mutex
	var events []string
	note := func(typ string, obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m := obj.(*metav1.PartialObjectMetadata)
		mu.Lock()
		defer mu.Unlock()
		events = append(events, typ+" "+m.Name+" "+m.Labels["name"])
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { note("add", obj) },
		UpdateFunc: func(_, obj any) { note("update", obj) },
		DeleteFunc: func(obj any) { note("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		t.Fatalf("metadata informer did not sync; requests:%s", describe(c.rec.exchanges("/configmaps")))
	}

	matches := func(m *metav1.PartialObjectMetadata, cm *corev1.ConfigMap) bool {
		return m.Name == cm.Name && m.Namespace == cm.Namespace && m.UID == cm.UID && m.ResourceVersion == cm.ResourceVersion &&
			reflect.DeepEqual(m.Labels, cm.Labels) && m.CreationTimestamp.Equal(&cm.CreationTimestamp)
	}
	storeHas := func(cm *corev1.ConfigMap) (bool, string) {
		obj, ok, _ := informer.GetStore().GetByKey(key(ns, cm.Name))
		if !ok {
			return false, cm.Name + " not in the store"
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok || !matches(m, cm) {
			return false, "store has " + describeObject(obj)
		}
		return true, ""
	}
	if n := len(informer.GetStore().List()); n != 3 {
		t.Fatalf("synced store has %d objects, want 3 (with %s)", n, rootCA)
	}
	for _, cm := range created {
		if ok, why := storeHas(cm); !ok {
			t.Fatal(why)
		}
	}

	updated, err := cms.Update(ctx, configMap("m-1", map[string]string{"k": "v2"}, map[string]string{"name": "m-1b"}), metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m3, err := cms.Create(ctx, configMap("m-3", nil, map[string]string{"name": "m-3"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "m-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "metadata informer sees the changes", func() (bool, string) {
		for _, cm := range []*corev1.ConfigMap{updated, m3} {
			if ok, why := storeHas(cm); !ok {
				return false, why
			}
		}
		if _, ok, _ := informer.GetStore().GetByKey(key(ns, "m-2")); ok {
			return false, "m-2 still in the store"
		}
		return true, ""
	})
	time.Sleep(quiet)
	mu.Lock()
	got := append([]string(nil), events...)
	mu.Unlock()
	if len(got) >= 3 {
		sort.Strings(got[:3]) // the initial adds, in the informer's order
	}
	want := []string{"add " + rootCA + " ", "add m-1 m-1", "add m-2 m-2", "update m-1 m-1b", "add m-3 m-3", "delete m-2 m-2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("handlers saw %q, want %q", got, want)
	}
	for _, e := range c.rec.exchanges("/configmaps") {
		if !strings.Contains(e.Accept, "as=PartialObjectMetadata") || e.Status != 200 {
			t.Errorf("metadata client request %s with Accept %q", e, e.Accept)
		}
	}
}
