package kubeencoding

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
)

// The media types `--storage-media-type` accepts, as kube-apiserver's.
const (
	JSON     = "application/json"
	YAML     = "application/yaml"
	Protobuf = "application/vnd.kubernetes.protobuf"
)

// protobufPrefix starts every value kube's Protobuf serializer writes.
var protobufPrefix = []byte("k8s\x00")

// Values converts between kube-apiserver's encodings in etcd and lapis's stored form.
type Values struct {
	schemes []kind
	// write is the media type built-in objects are written in; custom resources are always
	// JSON, as kube-apiserver writes them.
	write string
}

// kind is one scheme of kube's types and its Protobuf serializer.
type kind struct {
	scheme *runtime.Scheme
	proto  *protobuf.Serializer
}

var _ storage.Values = (*Values)(nil)

// New returns the Values of the types in schemes (kube-apiserver's legacy scheme, and one for
// each of its own servers' groups), writing mediaType (JSON, YAML or Protobuf).
func New(mediaType string, schemes ...*runtime.Scheme) (*Values, error) {
	switch mediaType {
	case JSON, YAML, Protobuf:
	default:
		return nil, fmt.Errorf("--storage-media-type %q is not supported: use %s, %s or %s", mediaType, JSON, YAML, Protobuf)
	}
	v := &Values{write: mediaType}
	for _, s := range schemes {
		v.schemes = append(v.schemes, kind{scheme: s, proto: protobuf.NewSerializer(s, s)})
	}
	return v, nil
}

// schemeOf returns the scheme that knows gvk's group.
func (v *Values) schemeOf(gvk schema.GroupVersionKind) (*runtime.Scheme, bool) {
	for _, k := range v.schemes {
		if k.scheme.IsGroupRegistered(gvk.Group) {
			return k.scheme, true
		}
	}
	return nil, false
}

// FromStorage returns the stored form of the value kept at key.
func (v *Values) FromStorage(key string, stored []byte) ([]byte, error) {
	if bytes.HasPrefix(stored, protobufPrefix) {
		return v.fromProtobuf(stored)
	}
	value := bytes.TrimRight(stored, " \t\r\n") // kube's JSON encoder ends values with a newline
	if gvk, ok := storedForm(value); ok {
		if v.atStorageVersion(gvk) {
			return value, nil
		}
		return v.fromJSON(value)
	}
	if len(value) > 0 && value[0] == '{' {
		return v.fromJSON(value)
	}
	if fromYAML, err := yaml.YAMLToJSON(value); err == nil && bytes.HasPrefix(fromYAML, []byte("{")) {
		return v.fromJSON(fromYAML)
	}
	return nil, fmt.Errorf("the value is neither JSON, YAML nor Protobuf (it starts %q)", head(stored))
}

// ToStorage returns what is kept in etcd for a value in the stored form.
func (v *Values) ToStorage(key string, value []byte) ([]byte, error) {
	if v.write == JSON {
		return value, nil
	}
	gvk, ok := storedForm(value)
	if _, builtin := v.schemeOf(gvk); !ok || !builtin {
		return value, nil // not a built-in object: JSON, as kube-apiserver keeps custom resources
	}
	if v.write == YAML {
		return yaml.JSONToYAML(value)
	}
	return v.toProtobuf(value, gvk)
}

func head(b []byte) []byte {
	if len(b) > 16 {
		return b[:16]
	}
	return b
}

// atStorageVersion reports whether objects of gvk are kept at gvk's version: always for kinds
// kube's schemes do not know (custom resources convert through their CRD).
func (v *Values) atStorageVersion(gvk schema.GroupVersionKind) bool {
	to, ok := v.storageVersion(gvk)
	return !ok || to == gvk.GroupVersion()
}

// storageVersion is the version kube-apiserver 1.37 stores gvk's group at: the group's first
// version in kube's scheme (as catalog/kube stores it), when that version has the kind.
func (v *Values) storageVersion(gvk schema.GroupVersionKind) (schema.GroupVersion, bool) {
	s, ok := v.schemeOf(gvk)
	if !ok {
		return schema.GroupVersion{}, false
	}
	versions := s.PrioritizedVersionsForGroup(gvk.Group)
	if len(versions) == 0 || !s.Recognizes(versions[0].WithKind(gvk.Kind)) {
		return schema.GroupVersion{}, false
	}
	return versions[0], true
}

// toStoredForm defaults a typed object of scheme s as kube's storage decoder does, converts it
// to its storage version, and encodes it in the stored form.
func (v *Values) toStoredForm(s *runtime.Scheme, obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	s.Default(obj)
	if to, ok := v.storageVersion(gvk); ok && to != gvk.GroupVersion() {
		// Versions convert through the internal one, as kube's storage codec converts them.
		internal, err := s.ConvertToVersion(obj, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
		if err != nil {
			return nil, fmt.Errorf("converting %s to %s: %w", gvk, to, err)
		}
		if obj, err = s.ConvertToVersion(internal, to); err != nil {
			return nil, fmt.Errorf("converting %s to %s: %w", gvk, to, err)
		}
		gvk = to.WithKind(gvk.Kind)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	content["apiVersion"], content["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return codec.Encode(content)
}

func (v *Values) fromProtobuf(stored []byte) ([]byte, error) {
	var envelope runtime.Unknown
	if err := envelope.Unmarshal(stored[len(protobufPrefix):]); err != nil {
		return nil, fmt.Errorf("decoding Protobuf: %w", err)
	}
	gvk := schema.FromAPIVersionAndKind(envelope.APIVersion, envelope.Kind)
	for _, k := range v.schemes {
		if k.scheme.Recognizes(gvk) {
			obj, _, err := k.proto.Decode(stored, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("decoding Protobuf: %w", err)
			}
			return v.toStoredForm(k.scheme, obj, gvk)
		}
	}
	return nil, fmt.Errorf("decoding Protobuf: no type %s is known", gvk)
}

// fromJSON reads JSON in any field order (kube's typed encoder writes kind first).
func (v *Values) fromJSON(value []byte) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(value); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	gvk := u.GroupVersionKind()
	if v.atStorageVersion(gvk) {
		return codec.Encode(u.Object)
	}
	s, _ := v.schemeOf(gvk)
	obj, err := s.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", gvk, err)
	}
	return v.toStoredForm(s, obj, gvk)
}

func (v *Values) toProtobuf(value []byte, gvk schema.GroupVersionKind) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(value); err != nil {
		return nil, err
	}
	for _, k := range v.schemes {
		obj, err := k.scheme.New(gvk)
		if err != nil {
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return nil, fmt.Errorf("encoding %s as Protobuf: %w", gvk, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		var buf bytes.Buffer
		if err := k.proto.EncodeWithAllocator(obj, &buf, &runtime.SimpleAllocator{}); err != nil {
			return nil, fmt.Errorf("encoding %s as Protobuf: %w", gvk, err)
		}
		return buf.Bytes(), nil
	}
	return value, nil
}
