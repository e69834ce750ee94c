package kubeencoding

import (
	"bytes"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	formStart    = []byte(`{"apiVersion":"`)
	formKind     = []byte(`","kind":"`)
	formMetadata = []byte(`","metadata":{`)
)

// storedForm reports whether value is in lapis's stored form — `{"apiVersion":"…","kind":"…",
// "metadata":{` with nothing escaped in either string — and the kind it names. Only then may
// readers splice the resourceVersion into the first metadata object.
func storedForm(value []byte) (schema.GroupVersionKind, bool) {
	rest, ok := bytes.CutPrefix(value, formStart)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	apiVersion, rest, ok := plainString(rest, formKind)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	kind, rest, ok := plainString(rest, formMetadata)
	if !ok || len(rest) == 0 || rest[len(rest)-1] != '}' || value[len(value)-1] != '}' {
		return schema.GroupVersionKind{}, false
	}
	gv, err := schema.ParseGroupVersion(string(apiVersion))
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(string(kind)), true
}

// plainString cuts a string's content, which must hold no quote or escape, up to sep.
func plainString(b, sep []byte) (content, rest []byte, ok bool) {
	i := bytes.IndexAny(b, `"\`)
	if i < 0 || !bytes.HasPrefix(b[i:], sep) {
		return nil, nil, false
	}
	return b[:i], b[i+len(sep):], true
}
