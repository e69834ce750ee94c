package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Raw reports whether BuildRaw can print r's objects: its printer says what it reads and rows
// carry the stored metadata as it is.
func Raw(r *catalog.Resource) bool {
	p := printerOf(r)
	return p.Metadata == nil && p.Reads != nil
}

func printerOf(r *catalog.Resource) *catalog.Printer {
	if r.Printer == nil {
		return defaultPrinter
	}
	return r.Printer
}

// BuildRaw is Build for items given as the JSON served for them (Raw(r) must hold). It decodes
// only the fields the printer reads and splices the items' metadata (or the items themselves)
// into the rows as they are: decoding and encoding whole objects is most of a Table's cost.
func BuildRaw(r *catalog.Resource, items [][]byte, meta metav1.ListMeta, opts Options) ([]byte, error) {
	p := printerOf(r)
	apiVersion := opts.APIVersion
	if apiVersion == "" {
		apiVersion = "meta.k8s.io/v1"
	}
	reads := p.Reads
	if opts.IncludeObject == metav1.IncludeNone {
		// The initial-events-end annotation decides whether a row keeps its metadata.
		reads = append(reads[:len(reads):len(reads)], []string{"metadata", "annotations"})
	}
	want := wantedFields(append(reads[:len(reads):len(reads)], []string{"metadata", "name"}))

	size := 256
	for _, item := range items {
		size += len(item) + 64
	}
	out := bytes.NewBuffer(make([]byte, 0, size))
	listMeta, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	out.WriteString(`{"kind":"Table","apiVersion":`)
	out.WriteString(strconv.Quote(apiVersion))
	out.WriteString(`,"metadata":`)
	out.Write(listMeta)
	out.WriteString(`,"columnDefinitions":`)
	if opts.NoHeaders {
		out.WriteString("null")
	} else {
		columns, err := json.Marshal(p.Columns)
		if err != nil {
			return nil, err
		}
		out.Write(columns)
	}
	out.WriteString(`,"rows":[`)
	rows, err := projectRows(p, items, want)
	if err != nil {
		return nil, err
	}
	for i, row := range rows {
		item, obj, metadata := row.item, row.obj, row.metadata
		cells, err := p.Cells(obj)
		if err != nil {
			return nil, fmt.Errorf("printing %s: %w", obj.GetName(), err)
		}
		encoded, err := json.Marshal(cells)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"cells":`)
		out.Write(encoded)
		out.WriteString(`,"object":`)
		include := opts.IncludeObject
		if include == metav1.IncludeNone && obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			include = metav1.IncludeMetadata // as Build: the bookmark keeps its metadata
		}
		switch include {
		case metav1.IncludeNone:
			out.WriteString("null")
		case metav1.IncludeObject:
			out.Write(item)
		default:
			out.WriteString(`{"apiVersion":`)
			out.WriteString(strconv.Quote(apiVersion))
			out.WriteString(`,"kind":"PartialObjectMetadata","metadata":`)
			if metadata == nil {
				metadata = []byte("null")
			}
			out.Write(metadata)
			out.WriteByte('}')
		}
		out.WriteByte('}')
	}
	out.WriteString("]}")
	return out.Bytes(), nil
}

// projectedRow is one item with the fields the printer reads decoded, and its metadata.
type projectedRow struct {
	item, metadata []byte
	obj            *unstructured.Unstructured
}

// projectRows decodes what the printer reads of each item, in the order the printer wants.
func projectRows(p *catalog.Printer, items [][]byte, want map[string]*wanted) ([]projectedRow, error) {
	rows := make([]projectedRow, len(items))
	for i, item := range items {
		item = bytes.TrimSpace(item)
		obj, metadata, err := project(item, want)
		if err != nil {
			return nil, fmt.Errorf("decoding object: %w", err)
		}
		rows[i] = projectedRow{item: item, metadata: metadata, obj: obj}
	}
	if p.Less != nil {
		slices.SortStableFunc(rows, func(a, b projectedRow) int { return compare(p.Less, a.obj, b.obj) })
	}
	return rows, nil
}

// ResourceVersion is metadata.resourceVersion of the JSON object item, as
// unstructured.GetResourceVersion reads it.
func ResourceVersion(item []byte) (string, error) {
	obj, _, err := project(item, map[string]*wanted{"metadata": {keys: map[string]bool{"resourceVersion": true}}})
	if err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}

// wanted is what to decode of one top-level field: all of it, or only some of its keys.
type wanted struct {
	all  bool
	keys map[string]bool
}

func wantedFields(paths [][]string) map[string]*wanted {
	want := map[string]*wanted{}
	for _, path := range paths {
		w := want[path[0]]
		if w == nil {
			w = &wanted{keys: map[string]bool{}}
			want[path[0]] = w
		}
		if len(path) == 1 {
			w.all = true
		} else {
			w.keys[path[1]] = true
		}
	}
	return want
}

// project decodes the fields of the JSON object item that want names, as
// unstructured.UnmarshalJSON would decode them, and returns the raw bytes of its metadata.
func project(item []byte, want map[string]*wanted) (*unstructured.Unstructured, []byte, error) {
	obj := map[string]any{}
	var metadata []byte
	_, err := scanObject(item, 0, func(key []byte, start int) (int, error) {
		w := want[string(key)]
		if w == nil && string(key) != "metadata" {
			return 0, nil
		}
		if w == nil || w.all || item[start] != '{' {
			end := valueEnd(item, start)
			if end < 0 {
				return 0, errSyntax
			}
			if w != nil {
				var v any
				if err := utiljson.Unmarshal(item[start:end], &v); err != nil {
					return 0, err
				}
				obj[string(key)] = v
			}
			if string(key) == "metadata" {
				metadata = item[start:end]
			}
			return end, nil
		}
		// Only some keys of this object: the rest is skipped, not decoded.
		sub := map[string]any{}
		end, err := scanObject(item, start, func(k []byte, start int) (int, error) {
			if !w.keys[string(k)] {
				return 0, nil
			}
			end := valueEnd(item, start)
			if end < 0 {
				return 0, errSyntax
			}
			var decoded any
			if err := utiljson.Unmarshal(item[start:end], &decoded); err != nil {
				return 0, err
			}
			sub[string(k)] = decoded
			return end, nil
		})
		if err != nil {
			return 0, err
		}
		obj[string(key)] = sub
		if string(key) == "metadata" {
			metadata = item[start:end]
		}
		return end, nil
	})
	return &unstructured.Unstructured{Object: obj}, metadata, err
}

var errSyntax = errors.New("malformed JSON object")

// eachField calls fn with each key of the JSON object data and the bytes of its value.
func eachField(data []byte, fn func(key string, value []byte) error) error {
	end, err := scanObject(data, 0, func(key []byte, start int) (int, error) {
		end := valueEnd(data, start)
		if end < 0 {
			return 0, errSyntax
		}
		return end, fn(string(key), data[start:end])
	})
	if err == nil && skipSpace(data, end) != len(data) {
		return errSyntax
	}
	return err
}

// scanObject reads the JSON object at data[i:] (after spaces), calling fn with each key and the
// index where its value starts; fn returns the index just past the value when it read it, 0 to
// have it skipped. scanObject returns the index just past the object.
func scanObject(data []byte, i int, fn func(key []byte, start int) (int, error)) (int, error) {
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != '{' {
		return 0, errSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, errSyntax
		}
		end := stringEnd(data, i)
		if end < 0 {
			return 0, errSyntax
		}
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var unescaped string
			if err := json.Unmarshal(data[i:end], &unescaped); err != nil {
				return 0, err
			}
			key = []byte(unescaped)
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, errSyntax
		}
		start := skipSpace(data, i+1)
		if start >= len(data) {
			return 0, errSyntax
		}
		stop, err := fn(key, start)
		if err != nil {
			return 0, err
		}
		if stop == 0 {
			if stop = valueEnd(data, start); stop < 0 {
				return 0, errSyntax
			}
		}
		i = skipSpace(data, stop)
		if i >= len(data) {
			return 0, errSyntax
		}
		if data[i] == '}' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return 0, errSyntax
		}
		i = skipSpace(data, i+1)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i] (a quote), -1 if it does
// not end.
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		backslashes := 0
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			backslashes++
		}
		if backslashes%2 == 0 { // not an escaped quote
			return q + 1
		}
		j = q + 1
	}
}

// valueEnd returns the index just past the JSON value starting at data[i], -1 if it does not end.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := stringEnd(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\n', '\t', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return j
}
