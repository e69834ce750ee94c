package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

func TestWithoutTypeMeta(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"kind":"x"}}`, `{"metadata":{"name":"a"},"data":{"kind":"x"}}`},
		{`{"apiVersion":"apps/v1","data":{},"kind":"Deployment","metadata":{}}`, `{"data":{},"metadata":{}}`},
		{`{"kind":"Pod","metadata":{}}`, `{"metadata":{}}`},
		{`{"metadata":{}}`, `{"metadata":{}}`},
	} {
		var got, want any
		out := withoutTypeMeta([]byte(c.in))
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		_ = json.Unmarshal([]byte(c.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %s, want %s", c.in, out, c.want)
		}
	}
}

// TestJSONList: a list written in chunks is the list assembled whole, with the length it
// announces, items with and without their type fields, across chunk boundaries.
func TestJSONList(t *testing.T) {
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"` + strings.Repeat("x", frameChunk+17) + `"}}`
	items := [][]byte{
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}`),
		[]byte(big),
		[]byte(`{"metadata":{"name":"plain"},"kind":"Odd"}`), // not lapis's order: decoded
	}
	for i := 0; i < 3000; i++ {
		items = append(items, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}}`))
	}
	for _, withoutTypes := range []bool{false, true} {
		l := jsonList("v1", "ConfigMapList", metav1.ListMeta{ResourceVersion: "7"}, items, withoutTypes)
		var got bytes.Buffer
		if err := l.writeTo(&got); err != nil {
			t.Fatal(err)
		}
		if got.Len() != l.size {
			t.Errorf("withoutTypes=%v: wrote %d bytes, announced %d", withoutTypes, got.Len(), l.size)
		}
		var list struct {
			Kind     string                       `json:"kind"`
			Metadata metav1.ListMeta              `json:"metadata"`
			Items    []map[string]json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(got.Bytes(), &list); err != nil {
			t.Fatalf("withoutTypes=%v: %v", withoutTypes, err)
		}
		if list.Kind != "ConfigMapList" || list.Metadata.ResourceVersion != "7" || len(list.Items) != len(items) {
			t.Fatalf("withoutTypes=%v: got kind %q, rv %q, %d items", withoutTypes, list.Kind, list.Metadata.ResourceVersion, len(list.Items))
		}
		for i, it := range list.Items {
			_, hasKind := it["kind"]
			_, hasVersion := it["apiVersion"]
			if withoutTypes && (hasKind || hasVersion) || !withoutTypes && !hasKind {
				t.Fatalf("withoutTypes=%v: item %d has kind %v, apiVersion %v", withoutTypes, i, hasKind, hasVersion)
			}
		}
		if n := len(list.Items[1]["data"]); n < frameChunk {
			t.Errorf("the big item lost its data: %d bytes", n)
		}
	}
}

// TestProtobufList: a list assembled from its items' Protobuf is byte for byte what kube's
// serializer makes of the list's Go type, for every built-in list type, and an item's encoding
// is memoized.
func TestProtobufList(t *testing.T) {
	h := New(nil)
	lists := 0
	for gvk := range h.typed.AllKnownTypes() {
		if !strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		itemKind := strings.TrimSuffix(gvk.Kind, "List")
		if !h.typed.Recognizes(gvk.GroupVersion().WithKind(itemKind)) {
			continue
		}
		if _, err := h.listItemType(gvk); err != nil {
			continue // not a list of objects (a ListOptions-like kind)
		}
		lists++
		r := &catalog.Resource{GroupVersion: gvk.GroupVersion(), Kind: itemKind, ListKind: gvk.Kind}
		var items [][]byte
		for _, name := range []string{"a", "b"} {
			items = append(items, fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"resourceVersion":"5","labels":{"k":"v"}}}`,
				gvk.GroupVersion().String(), itemKind, name))
		}
		meta := metav1.ListMeta{ResourceVersion: "9", Continue: "c"}
		memo := &countingMemo{}
		got, err := h.protobufList(r, meta, items, []objects.Memo{memo, nil})
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		want, err := h.typedListForTest(gvk, meta, items)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		var b bytes.Buffer
		if err := protobufCodec.Encode(want, &b); err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		if !bytes.Equal(got.bytes(), b.Bytes()) || got.size != b.Len() {
			t.Errorf("%s: assembled %x (%d announced)\nserializer %x", gvk, got.bytes(), got.size, b.Bytes())
		}
		if memo.calls != 1 {
			t.Errorf("%s: memo asked %d times", gvk, memo.calls)
		}
	}
	if lists < 50 {
		t.Errorf("checked %d list types, want all built-in ones", lists)
	}
}

type countingMemo struct{ calls int }

func (m *countingMemo) Encoded(_ string, encode func() ([]byte, error)) ([]byte, error) {
	m.calls++
	return encode()
}

// typedListForTest is the list as its Go type, items decoded from their JSON.
func (h *Handler) typedListForTest(gvk schema.GroupVersionKind, meta metav1.ListMeta, items [][]byte) (runtime.Object, error) {
	list, err := h.typed.New(gvk)
	if err != nil {
		return nil, err
	}
	itemsPtr, err := apimeta.GetItemsPtr(list)
	if err != nil {
		return nil, err
	}
	slice := reflect.ValueOf(itemsPtr).Elem()
	slice.Set(reflect.MakeSlice(slice.Type(), len(items), len(items)))
	for i, raw := range items {
		if err := json.Unmarshal(raw, slice.Index(i).Addr().Interface()); err != nil {
			return nil, err
		}
	}
	accessor, _ := apimeta.ListAccessor(list)
	accessor.SetResourceVersion(meta.ResourceVersion)
	accessor.SetContinue(meta.Continue)
	list.GetObjectKind().SetGroupVersionKind(gvk)
	return list, nil
}
