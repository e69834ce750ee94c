package tables

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// CustomPrinter builds a custom resource's printer from its CRD version's
// additionalPrinterColumns; a version without any shows Name and Age, as kube-apiserver does.
func CustomPrinter(v *apiextensionsv1.CustomResourceDefinitionVersion) (*catalog.Printer, error) {
	columns := v.AdditionalPrinterColumns
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", Description: metadataDescriptions["creationTimestamp"], JSONPath: ".metadata.creationTimestamp",
		}}
	}
	p := &catalog.Printer{Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metadataDescriptions["name"]},
	}}
	var paths []*jsonpath.JSONPath
	p.Reads = [][]string{{"metadata", "name"}}
	for _, col := range columns {
		path := jsonpath.New(col.Name).AllowMissingKeys(true)
		if err := path.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return nil, fmt.Errorf("unrecognized column definition %q", col.JSONPath)
		}
		desc := col.Description
		if desc == "" {
			desc = fmt.Sprintf("Custom resource definition column (in JSONPath format): %s", col.JSONPath)
		}
		paths = append(paths, path)
		if p.Reads != nil {
			p.Reads = appendReads(p.Reads, col.JSONPath)
		}
		p.Columns = append(p.Columns, metav1.TableColumnDefinition{Name: col.Name, Type: col.Type, Format: col.Format, Description: desc, Priority: col.Priority})
	}
	p.Cells = func(obj *unstructured.Unstructured) ([]any, error) {
		cells := make([]any, 1, 1+len(paths))
		cells[0] = obj.GetName()
		var buf bytes.Buffer
		for i, path := range paths {
			results, err := path.FindResults(obj.Object)
			if err != nil || len(results) == 0 || len(results[0]) == 0 {
				cells = append(cells, nil)
				continue
			}
			value := results[0][0].Interface()
			if p.Columns[i+1].Type == "string" {
				buf.Reset()
				if err := path.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err != nil {
					cells = append(cells, nil)
					continue
				}
				cells = append(cells, buf.String())
				continue
			}
			cells = append(cells, cellFor(p.Columns[i+1].Type, value))
		}
		return cells, nil
	}
	return p, nil
}

// cellFor converts a JSON value to the cell type a column declares, nil when it does not fit.
func cellFor(columnType string, value any) any {
	switch columnType {
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var ts metav1.Time
			if err := ts.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return metatable.ConvertToHumanReadableDateType(ts)
		}
	}
	return nil
}

// appendReads adds the fields a column's JSONPath reads to reads: the first two keys it looks
// up from the object's top, or the first alone when the path goes on otherwise (a wildcard, an
// index, a filter). It returns nil, reading anything, for a path that starts otherwise.
func appendReads(reads [][]string, path string) [][]string {
	parser, err := jsonpath.Parse("column", fmt.Sprintf("{%s}", path))
	if err != nil {
		return nil
	}
	for _, node := range parser.Root.Nodes {
		switch node := node.(type) {
		case *jsonpath.TextNode:
		case *jsonpath.ListNode:
			first, ok := fieldAt(node.Nodes, 0)
			if !ok {
				return nil
			}
			if second, ok := fieldAt(node.Nodes, 1); ok {
				reads = append(reads, []string{first, second})
			} else {
				reads = append(reads, []string{first})
			}
		default:
			return nil
		}
	}
	return reads
}

// fieldAt returns the key of nodes[i] when it is a field lookup.
func fieldAt(nodes []jsonpath.Node, i int) (string, bool) {
	if i >= len(nodes) {
		return "", false
	}
	field, ok := nodes[i].(*jsonpath.FieldNode)
	if !ok || field.Value == "" {
		return "", false
	}
	return field.Value, true
}
