package clientgo

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestWatchListInformer checks that an informer syncs through a WatchList request (one watch
// with sendInitialEvents) rather than a list: ADDED events for the existing objects, in key
// order, then a BOOKMARK annotated k8s.io/initial-events-end carrying only a resourceVersion;
// the same stream then carries later changes.
func TestWatchListInformer(t *testing.T) {
	t.Parallel()
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Fatal("client-go's WatchListClient feature is off")
	}
	for _, tc := range []struct{ name, contentType string }{
		{"protobuf", ""}, // the clientset's default
		{"json", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxFor(t, 30*time.Second)
			writer := clientset(t, servers.stable)
			ns := namespace(t, writer)
			created := map[string]*corev1.ConfigMap{}
			var maxRV int64
			for _, name := range []string{"c", "a", "b"} {
				cm, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, configMap(name, map[string]string{"k": name}, nil), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				created[name] = cm
				maxRV = max(maxRV, mustRV(t, cm.ResourceVersion))
			}

			c := newClient(t, servers.stable, func(cfg *rest.Config) {
				if tc.contentType != "" {
					cfg.ContentType, cfg.AcceptContentTypes = tc.contentType, tc.contentType
				}
			})
			factory := informers.NewSharedInformerFactoryWithOptions(c.cs, 0, informers.WithNamespace(ns))
			informer := factory.Core().V1().ConfigMaps().Informer()
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop); factory.Shutdown() })
			factory.Start(stop)
			syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
				t.Fatalf("informer did not sync; requests:%s", describe(c.rec.exchanges("/configmaps")))
			}

			exs := c.rec.exchanges("/namespaces/" + ns + "/configmaps")
			if len(exs) != 1 {
				t.Fatalf("informer made %d requests to sync, want 1 (a watch-list):%s", len(exs), describe(exs))
			}
			first := exs[0]
			q := first.URL.Query()
			if !first.isWatch() || q.Get("sendInitialEvents") != "true" || q.Get("resourceVersionMatch") != "NotOlderThan" ||
				q.Get("allowWatchBookmarks") != "true" || q.Has("resourceVersion") || first.Status != http.StatusOK {
				t.Fatalf("sync request %s, want a 200 watch with sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true and no resourceVersion", first)
			}

			events := first.events()
			if len(events) < 5 {
				t.Fatalf("watch-list stream had %d events before sync, want 4 ADDED and a BOOKMARK: %v", len(events), events)
			}
			for i, name := range []string{"a", "b", "c"} {
				expectCM(t, events[i], watch.Added, name, created[name].ResourceVersion)
			}
			expectCM(t, events[3], watch.Added, rootCA, "")
			bookmark := expectBookmark(t, events[4], map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			if rv := mustRV(t, bookmark); rv < maxRV {
				t.Errorf("initial-events-end bookmark at resourceVersion %d, before the objects it follows (%d)", rv, maxRV)
			}
			if got := informer.LastSyncResourceVersion(); got != bookmark {
				t.Errorf("informer synced at resourceVersion %q, want the bookmark's %q", got, bookmark)
			}
			if len(events) > 5 {
				t.Errorf("unexpected events after the initial-events-end bookmark: %v", events[5:])
			}

			// Later changes arrive on the same stream.
			d, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, configMap("d", map[string]string{"k": "d"}, nil), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			poll.Eventually(t, 5*time.Second, "informer sees a later create", func() (bool, string) {
				obj, ok, _ := informer.GetStore().GetByKey(key(ns, "d"))
				return ok && obj.(*corev1.ConfigMap).ResourceVersion == d.ResourceVersion, "not in the store"
			})
			if exs := c.rec.exchanges("/namespaces/" + ns + "/configmaps"); len(exs) != 1 {
				t.Errorf("informer made more requests:%s", describe(exs))
			}
			if events := first.events(); len(events) != 6 {
				t.Errorf("stream has %d events, want 6", len(events))
			} else {
				expectCM(t, events[5], watch.Added, "d", d.ResourceVersion)
			}
		})
	}
}

// expectBookmark checks that ev is a BOOKMARK whose ConfigMap carries nothing but a
// resourceVersion (and the given annotations), and returns that resourceVersion.
func expectBookmark(t *testing.T, ev watch.Event, annotations map[string]string) string {
	t.Helper()
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if ev.Type != watch.Bookmark || !ok {
		t.Fatalf("got %s %s, want a BOOKMARK ConfigMap", ev.Type, describeObject(ev.Object))
	}
	want := metav1.ObjectMeta{ResourceVersion: cm.ResourceVersion, Annotations: annotations}
	if cm.ResourceVersion == "" || !reflect.DeepEqual(cm.ObjectMeta, want) || cm.Data != nil || cm.BinaryData != nil || cm.Immutable != nil {
		t.Fatalf("bookmark object %+v, want only metadata %+v", cm, want)
	}
	return cm.ResourceVersion
}

func mustRV(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}
