package handlers

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"reflect"

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

// typedList is a list response as the resource's Go list type (corev1.ConfigMapList), its items
// decoded from their stored JSON.
func (h *Handler) typedList(r *catalog.Resource, meta metav1.ListMeta, items [][]byte) (runtime.Object, error) {
	gvk := r.GroupVersion.WithKind(r.ListKind)
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
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, slice.Index(i).Addr().Interface()); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", r.Kind, err)
		}
	}
	accessor, err := apimeta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(meta.ResourceVersion)
	accessor.SetContinue(meta.Continue)
	accessor.SetRemainingItemCount(meta.RemainingItemCount)
	list.GetObjectKind().SetGroupVersionKind(gvk)
	return list, nil
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
