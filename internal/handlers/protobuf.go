package handlers

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// protobufMediaType is kube's Protobuf encoding (the `k8s\x00` envelope), which client-go's
// typed clients and kubectl use for built-in types.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

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

func newProtobufSerializer(scheme *runtime.Scheme) *protobuf.Serializer {
	return protobuf.NewSerializer(scheme, scheme)
}
