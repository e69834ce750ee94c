package handlers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// protobufClient is client-go's typed clientset speaking Protobuf both ways, as kube's
// controllers do.
func (f *fixture) protobufClient() kubernetes.Interface {
	f.t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: f.url, ContentConfig: rest.ContentConfig{
		ContentType: protobufType, AcceptContentTypes: protobufType,
	}})
	if err != nil {
		f.t.Fatal(err)
	}
	return cs
}

func TestProtobufClient(t *testing.T) {
	f := newFixture(t)
	cs := f.protobufClient()
	ctx := context.Background()
	cms, secs := cs.CoreV1().ConfigMaps("default"), cs.CoreV1().Secrets("default")

	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil || cm.Data["k"] != "1" || cm.UID == "" || cm.ResourceVersion == "" {
		t.Fatalf("create ConfigMap: %v %+v", err, cm)
	}
	sec, err := secs.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Data: map[string][]byte{"key": {0, 1, 2}}}, metav1.CreateOptions{})
	if err != nil || !bytes.Equal(sec.Data["key"], []byte{0, 1, 2}) || sec.Type != corev1.SecretTypeOpaque {
		t.Fatalf("create Secret: %v %+v", err, sec)
	}

	if got, err := cms.Get(ctx, "pb", metav1.GetOptions{}); err != nil || got.UID != cm.UID || got.Data["k"] != "1" {
		t.Errorf("get ConfigMap: %v %+v", err, got)
	}
	if got, err := secs.Get(ctx, "pb", metav1.GetOptions{}); err != nil || !bytes.Equal(got.Data["key"], []byte{0, 1, 2}) {
		t.Errorf("get Secret: %v %+v", err, got)
	}
	cmList, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(cmList.Items) != 1 || cmList.Items[0].Name != "pb" || cmList.ResourceVersion == "" {
		t.Fatalf("list ConfigMaps: %v %+v", err, cmList)
	}
	if list, err := secs.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 || list.Items[0].Name != "pb" {
		t.Errorf("list Secrets: %v %+v", err, list)
	}

	// The watch sees the writes after the list, each event decoded by client-go.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cmList.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	cm.Data["k"] = "2"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil || cm.Data["k"] != "2" {
		t.Fatalf("update ConfigMap: %v %+v", err, cm)
	}
	if cm, err = cms.Patch(ctx, "pb", types.MergePatchType, []byte(`{"data":{"k":"3"}}`), metav1.PatchOptions{}); err != nil || cm.Data["k"] != "3" {
		t.Fatalf("patch ConfigMap: %v %+v", err, cm)
	}
	sec.StringData = map[string]string{"other": "x"}
	if sec, err = secs.Update(ctx, sec, metav1.UpdateOptions{}); err != nil || string(sec.Data["other"]) != "x" {
		t.Errorf("update Secret: %v %+v", err, sec)
	}
	if sec, err = secs.Patch(ctx, "pb", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil || sec.Labels["a"] != "b" {
		t.Errorf("patch Secret: %v %+v", err, sec)
	}
	if err := cms.Delete(ctx, "pb", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Fatalf("delete ConfigMap: %v", err)
	}
	// DeleteOptions come in Protobuf too.
	bogus := types.UID("bogus")
	if err := secs.Delete(ctx, "pb", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &bogus}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a failing precondition: %v, want Conflict", err)
	}
	if err := secs.Delete(ctx, "pb", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete Secret: %v", err)
	}
	// Errors arrive as Protobuf Statuses, which client-go turns back into API errors.
	if _, err := cms.Get(ctx, "pb", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	if err := secs.Delete(ctx, "missing", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &bogus}}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing Secret: %v, want NotFound", err)
	}

	want := []string{"MODIFIED 2", "MODIFIED 3", "DELETED 3"}
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %q", got)
			}
			obj, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				t.Fatalf("%s event with a %T: %+v", ev.Type, ev.Object, ev.Object)
			}
			got = append(got, string(ev.Type)+" "+obj.Data["k"])
		case <-timeout:
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestProtobufWatchFromStart(t *testing.T) {
	f := newFixture(t)
	cms := f.protobufClient().CoreV1().ConfigMaps("default")
	ctx := context.Background()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := int64(1)
	w, err := cms.Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range w.ResultChan() { // ends with timeoutSeconds
		if obj, ok := ev.Object.(*corev1.ConfigMap); ok {
			got = append(got, string(ev.Type)+" "+obj.Name)
		} else {
			t.Errorf("%s event with a %T", ev.Type, ev.Object)
		}
	}
	if want := []string{string(watch.Added) + " before", string(watch.Added) + " after"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestProtobufWatchFraming reads a Protobuf watch stream by hand: each event a WatchEvent after
// its 4-byte big-endian length, its object in the `k8s\x00` envelope.
func TestProtobufWatchFraming(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("a", nil)})
	r := f.do(call{method: "GET", path: configMaps + "?watch=1&timeoutSeconds=1", headers: []string{"Accept: " + protobufType + ";stream=watch"}})
	if ct := r.header.Get("Content-Type"); r.code != 200 || ct != protobufType+";stream=watch" {
		t.Fatalf("watch answered %d %s", r.code, ct)
	}
	if len(r.body) < 4 || int(binary.BigEndian.Uint32(r.body)) != len(r.body)-4 {
		t.Fatalf("not one length-prefixed frame: %q", r.body)
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(r.body[4:]); err != nil {
		t.Fatal(err)
	}
	var unk runtime.Unknown
	if _, _, err := protobuf.NewSerializer(nil, nil).Decode(ev.Object.Raw, nil, &unk); err != nil || ev.Type != "ADDED" || unk.Kind != "ConfigMap" || unk.APIVersion != "v1" {
		t.Errorf("event %s %s %s: %v", ev.Type, unk.APIVersion, unk.Kind, err)
	}
}

// TestProtobufNegotiation checks the raw answers: Protobuf for built-in types, statuses and
// object metadata; JSON or 406 for custom resources.
func TestProtobufNegotiation(t *testing.T) {
	f := newFixture(t)
	const (
		pbThenJSON = protobufType + ", application/json"
		metaList   = protobufType + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
		metaOne    = protobufType + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"
		pbTable    = protobufType + ";as=Table;g=meta.k8s.io;v=v1"
	)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("a", map[string]string{"k": "v"})})
	f.must(http.StatusCreated, call{method: "POST", path: widgetsURL, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`})
	tests := []struct {
		name   string
		call   call
		code   int
		ctype  string
		kind   string // of the answer, Protobuf or JSON
		reason metav1.StatusReason
	}{
		{"object", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: " + protobufType}}, 200, protobufType, "ConfigMap", ""},
		{"list", call{method: "GET", path: configMaps, headers: []string{"Accept: " + protobufType}}, 200, protobufType, "ConfigMapList", ""},
		// kube-apiserver has no HEAD route for built-in types (custom resources answer it as a GET).
		{"HEAD", call{method: "HEAD", path: configMaps + "/a", headers: []string{"Accept: " + protobufType}}, 405, protobufType, "", ""},
		{"JSON first", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: application/json, " + protobufType}}, 200, "application/json", "ConfigMap", ""},
		{"error", call{method: "GET", path: configMaps + "/missing", headers: []string{"Accept: " + protobufType}}, 404, protobufType, "Status", metav1.StatusReasonNotFound},
		{"create", call{method: "POST", path: configMaps, body: configMapJSON("b", nil), headers: []string{"Accept: " + protobufType}}, 201, protobufType, "ConfigMap", ""},
		{"delete Status", call{method: "DELETE", path: configMaps + "/b", headers: []string{"Accept: " + protobufType}}, 200, protobufType, "Status", ""},
		{"deletecollection", call{method: "DELETE", path: configMaps + "?labelSelector=none%3D1", headers: []string{"Accept: " + protobufType}}, 200, protobufType, "ConfigMapList", ""},
		{"status subresource", call{method: "GET", path: "/api/v1/namespaces/default/status", headers: []string{"Accept: " + protobufType}}, 200, protobufType, "Namespace", ""},
		{"metadata list", call{method: "GET", path: configMaps, headers: []string{"Accept: " + metaList}}, 200, protobufType, "PartialObjectMetadataList", ""},
		{"metadata v1beta1", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: " + metaOne}}, 200, protobufType, "PartialObjectMetadata", ""},
		{"Table only in JSON", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: " + pbTable + ", application/json;as=Table;g=meta.k8s.io;v=v1"}}, 200, "application/json", "Table", ""},
		{"Table in Protobuf", call{method: "GET", path: configMaps + "/a", headers: []string{"Accept: " + pbTable}}, 406, "application/json", "Status", metav1.StatusReasonNotAcceptable},
		// Custom resources have no Protobuf form, but their metadata does; kube-apiserver
		// answers the 406 itself in Protobuf, the Status having one.
		{"custom resource", call{method: "GET", path: widgetsURL + "/w", headers: []string{"Accept: " + protobufType}}, 406, protobufType, "Status", metav1.StatusReasonNotAcceptable},
		{"custom resource list", call{method: "GET", path: widgetsURL, headers: []string{"Accept: " + protobufType}}, 406, protobufType, "Status", metav1.StatusReasonNotAcceptable},
		{"custom resource create", call{method: "POST", path: widgetsURL, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}`, headers: []string{"Accept: " + protobufType}}, 406, protobufType, "Status", metav1.StatusReasonNotAcceptable},
		{"custom resource, then JSON", call{method: "GET", path: widgetsURL + "/w", headers: []string{"Accept: " + pbThenJSON}}, 200, "application/json", "Widget", ""},
		{"custom resource list, then JSON", call{method: "GET", path: widgetsURL, headers: []string{"Accept: " + pbThenJSON}}, 200, "application/json", "WidgetList", ""},
		{"custom resource metadata", call{method: "GET", path: widgetsURL, headers: []string{"Accept: " + metaList}}, 200, protobufType, "PartialObjectMetadataList", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			if r.code != tt.code || r.header.Get("Content-Type") != tt.ctype {
				t.Fatalf("answered %d %s, want %d %s: %q", r.code, r.header.Get("Content-Type"), tt.code, tt.ctype, r.body)
			}
			if tt.kind == "" {
				if len(r.body) != 0 {
					t.Errorf("HEAD answered a body: %q", r.body)
				}
				return
			}
			var kind string
			var status metav1.Status
			if tt.ctype == protobufType {
				var unk runtime.Unknown
				if _, _, err := protobuf.NewSerializer(nil, nil).Decode(r.body, nil, &unk); err != nil {
					t.Fatalf("not Protobuf: %v: %q", err, r.body)
				}
				kind = unk.Kind
				if kind == "Status" {
					if err := status.Unmarshal(unk.Raw); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				kind, _ = r.object(t)["kind"].(string)
				if kind == "Status" {
					status = r.status(t)
				}
			}
			if kind != tt.kind {
				t.Errorf("kind %q, want %q", kind, tt.kind)
			}
			switch {
			case tt.reason != "" && (status.Reason != tt.reason || int(status.Code) != tt.code):
				t.Errorf("status %+v, want reason %q", status, tt.reason)
			case tt.reason == "" && kind == "Status" && (status.Status != metav1.StatusSuccess || status.Details == nil || status.Details.Name != "b"):
				t.Errorf("status %+v, want a success deleting b", status)
			}
		})
	}
}
