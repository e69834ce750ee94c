package handlers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
)

// protobufMediaType is kube's Protobuf encoding (the `k8s\x00` envelope), which client-go's
// typed clients and kubectl use for built-in types.
const protobufMediaType = routing.Protobuf

// protobufWatchMediaType is the Content-Type of a Protobuf watch stream.
const protobufWatchMediaType = protobufMediaType + ";stream=watch"

// decodeProtobuf decodes a Protobuf body into unstructured content; only built-in types have a
// Protobuf form.
func (h *Handler) decodeProtobuf(data []byte) (*unstructured.Unstructured, []string, error) {
	obj, gvk, err := h.protobuf.Decode(data, nil, nil)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("decoding Protobuf body: %v", err))
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(*gvk)
	return u, nil, nil
}

// decodeProtobufDeleteOptions decodes Protobuf DeleteOptions (client-go's typed clients send
// them in their content type), in whichever group version the client named them.
func decodeProtobufDeleteOptions(data []byte, o *metav1.DeleteOptions) error {
	var unk runtime.Unknown
	if _, _, err := protobufCodec.Decode(data, nil, &unk); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding Protobuf body: %v", err))
	}
	if unk.Kind != "DeleteOptions" {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not DeleteOptions", unk.Kind))
	}
	if err := o.Unmarshal(unk.Raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid delete options: %v", err))
	}
	return nil
}

func newProtobufSerializer(scheme *runtime.Scheme) *protobuf.Serializer {
	return protobuf.NewSerializer(scheme, scheme)
}

// Serializers without a scheme: encoding needs none (objects carry their apiVersion and kind),
// nor does decoding into runtime.Unknown. The raw serializer leaves out the envelope, which the
// events of a watch stream do not have.
var (
	protobufCodec        = protobuf.NewSerializer(nil, nil)
	protobufEventEncoder = protobuf.NewRawSerializer(nil, nil)
)

// writeProtobuf answers with obj in Protobuf.
func writeProtobuf(w http.ResponseWriter, req *http.Request, code int, obj runtime.Object) {
	auditResponse(req, obj)
	var b bytes.Buffer
	if err := protobufCodec.Encode(obj, &b); err != nil {
		status := apierrors.NewInternalError(err).Status()
		status.Kind, status.APIVersion = "Status", "v1"
		writeStatus(w, req, http.StatusInternalServerError, &status, false)
		return
	}
	send(w, req, code, protobufMediaType, b.Bytes())
}

// typedFromJSON decodes the JSON of a built-in object of kind gvk into its Go type.
func (h *Handler) typedFromJSON(gvk schema.GroupVersionKind, raw []byte) (runtime.Object, error) {
	obj, err := h.typed.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", gvk.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// typedFromUnstructured converts a built-in object into its Go type.
func (h *Handler) typedFromUnstructured(u *unstructured.Unstructured) (runtime.Object, error) {
	gvk := u.GroupVersionKind()
	obj, err := h.typed.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// protobufList is a list in kube's Protobuf: the envelope (runtime.Unknown) around the list
// type's message, whose ListMeta is field 1 and items field 2 in every list type of k8s.io/api.
// Each item is encoded from its Go type, once per stored object for as long as it is unchanged
// when memos has a memo for it.
func (h *Handler) protobufList(r *catalog.Resource, meta metav1.ListMeta, items [][]byte, memos []objects.Memo) (*parts, error) {
	gvk := r.GroupVersion.WithKind(r.ListKind)
	itemType, err := h.listItemType(gvk)
	if err != nil {
		return nil, err
	}
	metaBytes, err := meta.Marshal()
	if err != nil {
		return nil, err
	}
	memoKey := "protobuf:" + r.GroupVersion.String()
	encoded := make([][]byte, len(items))
	listSize := protobufFieldSize(len(metaBytes))
	for i, raw := range items {
		encode := func() ([]byte, error) { return protobufItem(itemType, raw) }
		if i < len(memos) && memos[i] != nil {
			encoded[i], err = memos[i].Encoded(memoKey, encode)
		} else {
			encoded[i], err = encode()
		}
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", r.Kind, err)
		}
		listSize += protobufFieldSize(len(encoded[i]))
	}
	typeMeta, err := (&runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}).Marshal()
	if err != nil {
		return nil, err
	}
	body := &parts{pieces: make([][]byte, 0, 2*len(items)+2)}
	head := append([]byte(nil), protobufPrefix...)
	head = appendProtobufField(head, 1, typeMeta) // runtime.Unknown's typeMeta
	head = appendProtobufTag(head, 2, listSize)   // runtime.Unknown's raw: the list
	head = appendProtobufField(head, 1, metaBytes)
	body.add(head)
	for _, b := range encoded {
		body.add(appendProtobufTag(nil, 2, len(b)), b)
	}
	body.add([]byte{3<<3 | 2, 0, 4<<3 | 2, 0}) // runtime.Unknown's contentEncoding and contentType, empty
	return body, nil
}

// protobufPrefix starts every Protobuf object kube sends.
var protobufPrefix = []byte("k8s\x00")

// appendProtobufTag appends the key and length of a length-delimited field.
func appendProtobufTag(b []byte, field, size int) []byte {
	return binary.AppendUvarint(append(b, byte(field<<3|2)), uint64(size))
}

func appendProtobufField(b []byte, field int, value []byte) []byte {
	return append(appendProtobufTag(b, field, len(value)), value...)
}

// protobufFieldSize is the encoded size of a length-delimited field of fields 1 to 15.
func protobufFieldSize(size int) int {
	return 1 + len(binary.AppendUvarint(nil, uint64(size))) + size
}

// listItemType is the Go type of the items of a built-in list type, checked to have the layout
// protobufList writes.
func (h *Handler) listItemType(gvk schema.GroupVersionKind) (reflect.Type, error) {
	list, err := h.typed.New(gvk)
	if err != nil {
		return nil, err
	}
	t := reflect.TypeOf(list).Elem()
	meta, okMeta := t.FieldByName("ListMeta")
	items, okItems := t.FieldByName("Items")
	if !okMeta || !okItems || items.Type.Kind() != reflect.Slice ||
		!strings.HasPrefix(meta.Tag.Get("protobuf"), "bytes,1,opt,") || !strings.HasPrefix(items.Tag.Get("protobuf"), "bytes,2,rep,") {
		return nil, fmt.Errorf("%s has no Protobuf form lapis knows", gvk.Kind)
	}
	return items.Type.Elem(), nil
}

// protobufItem encodes an item's JSON as the Protobuf of its Go type.
func protobufItem(t reflect.Type, raw []byte) ([]byte, error) {
	item := reflect.New(t).Interface()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, item); err != nil {
		return nil, err
	}
	m, ok := item.(interface{ Marshal() ([]byte, error) })
	if !ok {
		return nil, fmt.Errorf("%s has no Protobuf form", t)
	}
	return m.Marshal()
}

// partialMetadata converts items into the PartialObjectMetadata (one item) or
// PartialObjectMetadataList target asks for, as kube-apiserver's Go types.
func partialMetadata(target routing.Target, items []*unstructured.Unstructured, meta metav1.ListMeta) runtime.Object {
	gv := schema.GroupVersion{Group: metav1.GroupName, Version: target.Version}
	partials := make([]metav1.PartialObjectMetadata, len(items))
	for i, item := range items {
		partials[i] = *apimeta.AsPartialObjectMetadata(item)
		partials[i].SetGroupVersionKind(gv.WithKind("PartialObjectMetadata"))
	}
	if target.As == "PartialObjectMetadata" {
		return &partials[0]
	}
	var list runtime.Object
	if target.Version == metav1beta1.SchemeGroupVersion.Version {
		list = &metav1beta1.PartialObjectMetadataList{ListMeta: meta, Items: partials}
	} else {
		list = &metav1.PartialObjectMetadataList{ListMeta: meta, Items: partials}
	}
	list.GetObjectKind().SetGroupVersionKind(gv.WithKind("PartialObjectMetadataList"))
	return list
}

// protobufWatch returns the encoder of a Protobuf watch stream written to w, as kube-apiserver
// frames it: each event a metav1.WatchEvent (no envelope) preceded by its 4-byte big-endian
// length, its object the event's object in Protobuf (with envelope).
func (h *Handler) protobufWatch(rq *request, target routing.Target, w io.Writer) func(objects.WatchEvent) error {
	stream := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(w), protobufEventEncoder)
	var object bytes.Buffer
	return func(ev objects.WatchEvent) error {
		obj, err := h.watchObject(rq, target, ev)
		if err != nil {
			return err
		}
		object.Reset()
		if err := protobufCodec.Encode(obj, &object); err != nil {
			return err
		}
		return stream.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: object.Bytes()}})
	}
}

// watchObject is the Go object of a watch event: a Status for an error, else the resource's
// object or its metadata.
func (h *Handler) watchObject(rq *request, target routing.Target, ev objects.WatchEvent) (runtime.Object, error) {
	if ev.Type == watch.Error {
		status := &metav1.Status{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(ev.Object, status); err != nil {
			return nil, err
		}
		return status, nil
	}
	if target.As == "" {
		return h.typedFromJSON(rq.resource.GroupVersionKind(), ev.Object)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(ev.Object); err != nil {
		return nil, err
	}
	return partialMetadata(target, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()}), nil
}
