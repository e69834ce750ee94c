package tables

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lapis-dev/lapis/internal/catalog"
)

var metadataDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// defaultPrinter is kube-apiserver's table for resources without a printer of their own.
var defaultPrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metadataDescriptions["name"]},
		{Name: "Created At", Type: "date", Description: metadataDescriptions["creationTimestamp"]},
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		return []any{obj.GetName(), obj.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)}, nil
	},
	Reads: [][]string{{"metadata", "name"}, {"metadata", "creationTimestamp"}},
}

// Options are the parts of a request that shape a Table.
type Options struct {
	// APIVersion is meta.k8s.io/v1 or meta.k8s.io/v1beta1.
	APIVersion string
	// IncludeObject is None, Metadata (the default) or Object.
	IncludeObject metav1.IncludeObjectPolicy
	// NoHeaders leaves out the column definitions (watch events after the first).
	NoHeaders bool
}

// compare is a three-way comparison from less.
func compare(less func(a, b *unstructured.Unstructured) bool, a, b *unstructured.Unstructured) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}

// Build returns the Table of items, with list metadata meta.
func Build(r *catalog.Resource, items []*unstructured.Unstructured, meta metav1.ListMeta, opts Options) ([]byte, error) {
	p := printerOf(r)
	table := &metav1.Table{ListMeta: meta, Rows: make([]metav1.TableRow, 0, len(items))}
	table.Kind = "Table"
	table.APIVersion = opts.APIVersion
	if table.APIVersion == "" {
		table.APIVersion = "meta.k8s.io/v1"
	}
	if !opts.NoHeaders {
		table.ColumnDefinitions = p.Columns
	}
	if p.Less != nil {
		items = slices.Clone(items)
		slices.SortStableFunc(items, func(a, b *unstructured.Unstructured) int { return compare(p.Less, a, b) })
	}
	for _, item := range items {
		cells, err := p.Cells(item)
		if err != nil {
			return nil, fmt.Errorf("printing %s: %w", item.GetName(), err)
		}
		row := metav1.TableRow{Cells: cells}
		include := opts.IncludeObject
		if include == metav1.IncludeNone && item.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			// A watch list's end-of-initial-events bookmark keeps its metadata: that is how a
			// client sees the annotation in a Table.
			include = metav1.IncludeMetadata
		}
		switch include {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			raw, err := item.MarshalJSON()
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		default:
			raw, err := partialMetadata(p, item, table.APIVersion)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		}
		table.Rows = append(table.Rows, row)
	}
	return json.Marshal(table)
}

// partialMetadata is the object's metadata as a PartialObjectMetadata of the Table's version.
func partialMetadata(p *catalog.Printer, obj *unstructured.Unstructured, apiVersion string) ([]byte, error) {
	metadata := obj.Object["metadata"]
	if p.Metadata != nil {
		var err error
		if metadata, err = p.Metadata(obj); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]any{
		"kind": "PartialObjectMetadata", "apiVersion": apiVersion, "metadata": metadata,
	})
}

// PartialMetadataList is a list of the items' metadata (as=PartialObjectMetadataList).
func PartialMetadataList(items []*unstructured.Unstructured, meta metav1.ListMeta, apiVersion string) ([]byte, error) {
	list := map[string]any{"kind": "PartialObjectMetadataList", "apiVersion": apiVersion, "metadata": meta}
	out := make([]any, 0, len(items))
	for _, item := range items {
		out = append(out, map[string]any{"kind": "PartialObjectMetadata", "apiVersion": apiVersion, "metadata": item.Object["metadata"]})
	}
	list["items"] = out
	return json.Marshal(list)
}

// PartialMetadata is one object's metadata (as=PartialObjectMetadata).
func PartialMetadata(obj *unstructured.Unstructured, apiVersion string) ([]byte, error) {
	return json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": apiVersion, "metadata": obj.Object["metadata"]})
}
