package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Encode returns the stored form of an object. It does not modify obj.
func Encode(obj map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"apiVersion":`)
	if err := writeJSON(&buf, obj["apiVersion"]); err != nil {
		return nil, err
	}
	buf.WriteString(`,"kind":`)
	if err := writeJSON(&buf, obj["kind"]); err != nil {
		return nil, err
	}
	buf.WriteString(`,"metadata":`)
	meta, _ := obj["metadata"].(map[string]any)
	if _, has := meta["resourceVersion"]; has {
		meta = shallowCopyWithout(meta, "resourceVersion")
	}
	if meta == nil {
		meta = map[string]any{}
	}
	if err := writeJSON(&buf, meta); err != nil {
		return nil, err
	}
	rest := shallowCopyWithout(obj, "apiVersion", "kind", "metadata")
	if len(rest) > 0 {
		restJSON, err := json.Marshal(rest)
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(restJSON[1:]) // drop '{', keep the closing '}'
	} else {
		buf.WriteByte('}')
	}
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

func shallowCopyWithout(m map[string]any, drop ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range drop {
		delete(out, k)
	}
	return out
}

var metadataStart = []byte(`,"metadata":{`)

// WithResourceVersion returns the object's JSON with metadata.resourceVersion set, if the stored
// object is at apiVersion; ok is false when it is not (the caller must decode and convert).
func WithResourceVersion(value []byte, revision int64, apiVersion string) (out []byte, ok bool) {
	if !HasAPIVersion(value, apiVersion) {
		return nil, false
	}
	return Served(value, revision)
}

// Decode parses a stored object and sets its resourceVersion.
func Decode(value []byte, revision int64) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(value); err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	obj.SetResourceVersion(strconv.FormatInt(revision, 10))
	return obj, nil
}

// Served returns the stored value with its resourceVersion spliced in, whatever its apiVersion:
// the JSON served for the object at the version it is stored at.
func Served(value []byte, revision int64) ([]byte, bool) {
	// `,"metadata":{` cannot occur inside a JSON string (quotes there are escaped), so the first
	// occurrence is the metadata object Encode wrote.
	i := bytes.Index(value, metadataStart)
	if i < 0 || !bytes.HasPrefix(value, []byte(`{"apiVersion":"`)) {
		return nil, false
	}
	at := i + len(metadataStart)
	rv := `"resourceVersion":"` + strconv.FormatInt(revision, 10) + `"`
	out := make([]byte, 0, len(value)+len(rv)+1)
	out = append(out, value[:at]...)
	out = append(out, rv...)
	if value[at] != '}' {
		out = append(out, ',')
	}
	return append(out, value[at:]...), true
}

// HasAPIVersion reports whether an encoded object (stored or served) is at apiVersion.
func HasAPIVersion(value []byte, apiVersion string) bool {
	prefix := len(`{"apiVersion":"`)
	return len(value) > prefix+len(apiVersion) && string(value[prefix:prefix+len(apiVersion)]) == apiVersion && value[prefix+len(apiVersion)] == '"'
}
