package tables

import (
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": spec}}
	u.SetName(name)
	u.SetCreationTimestamp(metav1.NewTime(time.Now().Add(-2 * time.Hour)))
	return u
}

func TestCustomPrinter(t *testing.T) {
	tests := []struct {
		name    string
		columns []apiextensionsv1.CustomResourceColumnDefinition
		spec    map[string]any
		headers []string
		cells   []any
	}{
		{"default age column", nil, nil, []string{"Name", "Age"}, []any{"w", "120m"}},
		{"typed columns", []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
			{Name: "Ratio", Type: "number", JSONPath: ".spec.size"},
			{Name: "On", Type: "boolean", JSONPath: ".spec.on"},
			{Name: "Color", Type: "string", JSONPath: ".spec.color"},
			{Name: "Tags", Type: "string", JSONPath: ".spec.tags"},
			{Name: "Missing", Type: "string", JSONPath: ".spec.nope"},
			{Name: "Wrong", Type: "boolean", JSONPath: ".spec.color"},
		}, map[string]any{"size": int64(3), "on": true, "color": "red", "tags": []any{"a", "b"}},
			[]string{"Name", "Size", "Ratio", "On", "Color", "Tags", "Missing", "Wrong"},
			[]any{"w", int64(3), float64(3), true, "red", `["a","b"]`, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := CustomPrinter(&apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", AdditionalPrinterColumns: tt.columns})
			if err != nil {
				t.Fatal(err)
			}
			var headers []string
			for _, c := range p.Columns {
				headers = append(headers, c.Name)
			}
			cells, err := p.Cells(widget("w", tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			gotH, _ := json.Marshal(headers)
			wantH, _ := json.Marshal(tt.headers)
			gotC, _ := json.Marshal(cells)
			wantC, _ := json.Marshal(tt.cells)
			if string(gotH) != string(wantH) || string(gotC) != string(wantC) {
				t.Errorf("headers %s cells %s; want %s %s", gotH, gotC, wantH, wantC)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	r := &catalog.Resource{GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Name: "widgets", Kind: "Widget"}
	items := []*unstructured.Unstructured{widget("a", nil), widget("b", nil)}
	for _, tt := range []struct {
		include    metav1.IncludeObjectPolicy
		noHeaders  bool
		wantObject string
	}{
		{"", false, "PartialObjectMetadata"},
		{metav1.IncludeObject, true, "Widget"},
		{metav1.IncludeNone, false, ""},
	} {
		body, err := Build(r, items, metav1.ListMeta{ResourceVersion: "7"}, Options{IncludeObject: tt.include, NoHeaders: tt.noHeaders})
		if err != nil {
			t.Fatal(err)
		}
		var table metav1.Table
		if err := json.Unmarshal(body, &table); err != nil {
			t.Fatal(err)
		}
		if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" || table.ResourceVersion != "7" || len(table.Rows) != 2 {
			t.Fatalf("table %s", body)
		}
		if (len(table.ColumnDefinitions) == 0) != tt.noHeaders || (!tt.noHeaders && table.ColumnDefinitions[1].Name != "Created At") {
			t.Errorf("columns %+v with noHeaders %v", table.ColumnDefinitions, tt.noHeaders)
		}
		var kind struct{ Kind string }
		if raw := table.Rows[0].Object.Raw; raw != nil {
			_ = json.Unmarshal(raw, &kind)
		}
		if kind.Kind != tt.wantObject {
			t.Errorf("includeObject %q: row object kind %q, want %q", tt.include, kind.Kind, tt.wantObject)
		}
	}
}
