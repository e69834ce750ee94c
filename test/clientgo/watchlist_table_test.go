package clientgo

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// TestWatchListAsTable: a watch list asking for Tables (as kubernetes' e2e suite does) gets each
// initial object as the Table a GET of it gives (column definitions on the first only), then the
// k8s.io/initial-events-end bookmark as a Table too, whose single row carries the bookmark's
// metadata with the annotation — even with includeObject=None.
func TestWatchListAsTable(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 30*time.Second)
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	for _, name := range []string{"s1", "s2", "s3"} {
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"watchlist": "true"}},
			StringData: map[string]string{"k": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := dynamic.ConfigFor(rest.CopyConfig(servers.stable))
	cfg.AcceptContentTypes = "application/json;as=Table;v=v1;g=meta.k8s.io"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	restClient, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	secrets := dynamic.New(restClient).Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(ns)
	sendInitial := true
	opts := metav1.ListOptions{LabelSelector: "watchlist=true", SendInitialEvents: &sendInitial, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}

	for _, include := range []string{"", "None"} {
		t.Run("includeObject="+include, func(t *testing.T) {
			var want []*unstructured.Unstructured
			for i, name := range []string{"s1", "s2", "s3"} {
				got, err := secrets.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 {
					got.Object["columnDefinitions"] = nil // as a Table without headers encodes
				}
				want = append(want, got)
			}
			w, err := restClient.Get().AbsPath("/api/v1/namespaces", ns, "secrets").VersionedParams(&opts, metav1.ParameterCodec).
				Param("watch", "true").Param("includeObject", include).Timeout(10 * time.Second).Watch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			next := func(typ watch.EventType) *unstructured.Unstructured {
				t.Helper()
				select {
				case ev, ok := <-w.ResultChan():
					if !ok || ev.Type != typ {
						t.Fatalf("event %v %v, want %s", ev.Type, ok, typ)
					}
					return ev.Object.(*unstructured.Unstructured)
				case <-ctx.Done():
					t.Fatalf("no %s event", typ)
				}
				return nil
			}
			for i := range want {
				got := next(watch.Added)
				if include == "" && !reflect.DeepEqual(withoutAges(t, got), withoutAges(t, want[i])) {
					t.Errorf("event %d:\n%v\nGET gave:\n%v", i, got.Object, want[i].Object)
				}
			}
			table := tableOf(t, next(watch.Bookmark))
			if len(table.Rows) != 1 {
				t.Fatalf("bookmark Table has %d rows, want 1: %+v", len(table.Rows), table)
			}
			var partial metav1.PartialObjectMetadata
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(unstructuredOf(t, table.Rows[0].Object.Raw), &partial); err != nil {
				t.Fatal(err)
			}
			if partial.Kind != "PartialObjectMetadata" || partial.Annotations[metav1.InitialEventsAnnotationKey] != "true" || partial.ResourceVersion == "" {
				t.Errorf("bookmark row's object: %+v", partial)
			}
		})
	}
}

func tableOf(t *testing.T, u *unstructured.Unstructured) *metav1.Table {
	t.Helper()
	if u.GetKind() != "Table" {
		t.Fatalf("a %s, want a Table: %v", u.GetKind(), u.Object)
	}
	var table metav1.Table
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &table); err != nil {
		t.Fatal(err)
	}
	return &table
}

func unstructuredOf(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// withoutAges blanks the Age cells (they move with the clock).
func withoutAges(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	out := u.DeepCopy().Object
	rows, _, _ := unstructured.NestedSlice(out, "rows")
	for _, r := range rows {
		cells, _ := r.(map[string]any)["cells"].([]any)
		if n := len(cells); n > 0 {
			cells[n-1] = fmt.Sprint("AGE")
		}
	}
	_ = unstructured.SetNestedSlice(out, rows, "rows")
	return out
}
