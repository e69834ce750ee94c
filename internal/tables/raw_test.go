package tables

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// rawTestObjects are stored objects of many shapes, as JSON (the way lists serve them).
func rawTestObjects(t *testing.T) [][]byte {
	t.Helper()
	objects := []string{
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"plain","namespace":"ns","creationTimestamp":"2020-01-02T03:04:05Z","resourceVersion":"7","uid":"u1"}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"full","namespace":"ns","creationTimestamp":"2021-05-06T07:08:09Z","resourceVersion":"8","generation":3,
		  "labels":{"app":"web","tier":"<front&>"},"annotations":{"note":"a \"quoted\" \u00e9 value","x/y":"1"},
		  "finalizers":["example.com/f"],"deletionTimestamp":"2022-01-01T00:00:00Z","deletionGracePeriodSeconds":0,
		  "ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"o1","controller":true,"blockOwnerDeletion":true}],
		  "managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"example.com/v1","time":"2021-05-06T07:08:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}}}]},
		  "spec":{"size":3,"ratio":0.25,"on":true,"color":"red","when":"2019-03-04T05:06:07Z","tags":["a","b"],"items":[{"name":"i1"},{"name":"i2"}],"big":12345678901234,"nested":{"deep":{"x":null}},"we\"ird":"k"},
		  "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Other","status":"False"}],"phase":"Running"},"spec.x":{"y":"dotted","z":1}}`,
		`{ "kind" : "Widget" , "apiVersion" : "example.com/v1" , "spec" : "not an object" , "status" : [1,2] ,
		  "metadata" : { "name" : "spaced" , "creationTimestamp" : null , "annotations" : {"k8s.io/initial-events-end":"true"} } }`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"types","creationTimestamp":"2018-01-01T00:00:00Z","labels":{}},
		  "spec":{"size":"3","ratio":"x","on":"yes","color":7,"when":"not a date","tags":{},"items":[]},"status":{}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"floats"},"spec":{"size":2.9,"ratio":-1e3,"on":false,"color":["r","g"],"when":12,"items":[{"name":null}]},"status":{"phase":null}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"\u0077eird-escapes","annotations":{"k8s.io/initial-events-end":"false"}},"sp\u0065c":{"size":1}}` + "\n",
	}
	out := make([][]byte, len(objects))
	for i, o := range objects {
		if !json.Valid([]byte(o)) {
			t.Fatalf("object %d is not valid JSON", i)
		}
		out[i] = []byte(o)
	}
	return out
}

func column(name, typ, path string) apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: path}
}

// TestBuildRawMatchesBuild checks that the Table of undecoded objects decodes exactly as the
// Table of decoded objects, for each kind of column and every row object policy.
func TestBuildRawMatchesBuild(t *testing.T) {
	printers := map[string][]apiextensionsv1.CustomResourceColumnDefinition{
		"default age": nil,
		"each type": {
			column("Size", "integer", ".spec.size"), column("Ratio", "number", ".spec.ratio"),
			column("On", "boolean", ".spec.on"), column("Color", "string", ".spec.color"),
			column("When", "date", ".spec.when"), column("Big", "integer", ".spec.big"),
			column("Tags", "string", ".spec.tags"), column("Missing", "string", ".spec.missing"),
			column("Missing top", "integer", ".nothere.x"),
		},
		"deep paths": {
			column("Ready", "string", `.status.conditions[?(@.type=="Ready")].status`),
			column("Items", "string", ".spec.items[*].name"), column("First", "string", ".spec.items[0].name"),
			column("Deep", "string", ".spec.nested.deep"), column("Spec", "string", ".spec"),
			column("Phase", "string", ".status.phase"), column("Weird", "string", `.spec.we\"ird`),
			column("Union", "string", ".spec['size','color']"), column("Dotted", "string", `.spec\.x.y`),
		},
		"metadata": {
			column("App", "string", ".metadata.labels.app"), column("Labels", "string", ".metadata.labels"),
			column("Gen", "integer", ".metadata.generation"), column("Owner", "string", ".metadata.ownerReferences[0].name"),
			column("Deleted", "date", ".metadata.deletionTimestamp"), column("Age", "date", ".metadata.creationTimestamp"),
			column("Managers", "string", ".metadata.managedFields[*].manager"), column("Root", "string", "$.metadata.name"),
		},
	}
	items := rawTestObjects(t)
	metas := []metav1.ListMeta{{ResourceVersion: "42"}, {ResourceVersion: "43", Continue: "abc", RemainingItemCount: new(int64)}}
	for name, columns := range printers {
		p, err := CustomPrinter(&apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", AdditionalPrinterColumns: columns})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*catalog.Resource{{Printer: p}, {}} {
			if !Raw(r) {
				t.Fatalf("%s: Raw is false", name)
			}
			for _, version := range []string{"meta.k8s.io/v1", "meta.k8s.io/v1beta1", ""} {
				for _, include := range []metav1.IncludeObjectPolicy{"", metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject} {
					for _, noHeaders := range []bool{false, true} {
						for _, meta := range metas {
							opts := Options{APIVersion: version, IncludeObject: include, NoHeaders: noHeaders}
							label := fmt.Sprintf("%s/%v/%s/%q/%v/%v", name, r.Printer != nil, version, include, noHeaders, meta.Continue)
							compareBuilds(t, label, r, items, meta, opts)
							compareBuilds(t, label+"/empty", r, nil, meta, opts)
						}
					}
				}
			}
		}
	}
}

func compareBuilds(t *testing.T, label string, r *catalog.Resource, items [][]byte, meta metav1.ListMeta, opts Options) {
	t.Helper()
	decoded := make([]*unstructured.Unstructured, len(items))
	for i, item := range items {
		decoded[i] = &unstructured.Unstructured{}
		if err := decoded[i].UnmarshalJSON(item); err != nil {
			t.Fatal(err)
		}
	}
	want, err := Build(r, decoded, meta, opts)
	if err != nil {
		t.Fatalf("%s: Build: %v", label, err)
	}
	got, err := BuildRaw(r, items, meta, opts)
	if err != nil {
		t.Fatalf("%s: BuildRaw: %v", label, err)
	}
	var wantV, gotV any
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("%s: BuildRaw wrote invalid JSON: %v\n%s", label, err, got)
	}
	if !reflect.DeepEqual(wantV, gotV) {
		t.Errorf("%s: tables differ\nBuild:    %s\nBuildRaw: %s", label, want, got)
	}
	// And as a client decodes it.
	var wantT, gotT metav1.Table
	if err := json.Unmarshal(want, &wantT); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &gotT); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(wantT.Rows == nil, gotT.Rows == nil) || len(wantT.Rows) != len(gotT.Rows) {
		t.Errorf("%s: rows differ", label)
	}
}

func TestRawNeedsKnownReads(t *testing.T) {
	tests := []struct {
		path string
		raw  bool
	}{
		{".spec.size", true}, {".status.conditions[0].status", true}, {".spec", true},
		{"..name", false}, {".*", false}, {".spec}{.status", true},
		{".spec['a','b']", true}, {`.spec\.x.y`, true},
	}
	for _, tt := range tests {
		p, err := CustomPrinter(&apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1",
			AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{column("C", "string", tt.path)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := Raw(&catalog.Resource{Printer: p}); got != tt.raw {
			t.Errorf("%s: Raw = %v, want %v", tt.path, got, tt.raw)
		}
	}
	// A printer that rewrites metadata (kube's built-in ones) keeps the decoding path.
	if Raw(&catalog.Resource{Printer: &catalog.Printer{Reads: [][]string{{"spec"}}, Metadata: func(*unstructured.Unstructured) (any, error) { return nil, nil }}}) {
		t.Error("Raw with a Metadata printer")
	}
}

func TestEachField(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":{"b":[1,{"c":"}"}]},"d":"\\\"","e":null,"f":true,"g":-1.5e3}`,
		`{"\u0061":"x","b\"":[]}`, `{"k\\":"v\\\\","z":"\"}","y":["]",{"}":"["}]}`,
	} {
		want := map[string]any{}
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]any{}
		err := eachField([]byte(in), func(k string, v []byte) error {
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return fmt.Errorf("value of %q (%s): %w", k, v, err)
			}
			got[k] = x
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", in, got, want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":1`, `{"a":"x}`, `{"a":1,}`, `{"a":{}`, `{"a":}`, `{"a":1} x`, `{"a":"\"}`} {
		if err := eachField([]byte(bad), func(string, []byte) error { return nil }); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// benchWidgets are n stored objects shaped as test/bench's widgets, with a managedFields entry.
func benchWidgets(b *testing.B, n int) [][]byte {
	b.Helper()
	items := make([][]byte, n)
	for i := range items {
		items[i] = fmt.Appendf(nil, `{"apiVersion":"bench.lapis.dev/v1","kind":"Widget","metadata":{"name":"w-%06d","namespace":"bench",`+
			`"uid":"0b5c6a52-3f3e-4a53-9d53-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-01-02T03:04:05Z",`+
			`"labels":{"app":"bench"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"bench.lapis.dev/v1",`+
			`"time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},`+
			`"f:spec":{".":{},"f:color":{},"f:containers":{},"f:labels":{".":{},"f:label-0":{},"f:label-1":{}},"f:size":{}}}}]},`+
			`"spec":{"color":"blue","size":%d,"labels":{"label-0":"value-0","label-1":"value-1","label-2":"value-2","label-3":"value-3"},`+
			`"containers":[{"name":"c0","image":"registry.example.com/app:0.0","args":["--flag-a","--flag-b","--gen=0"]},`+
			`{"name":"c1","image":"registry.example.com/app:0.1","args":["--flag-a","--flag-b","--gen=0"]},`+
			`{"name":"c2","image":"registry.example.com/app:0.2","args":["--flag-a","--flag-b","--gen=0"]}]}}`, i, i, 100+i, i%5+1)
	}
	return items
}

// BenchmarkTable compares a Table of 2 000 widgets from decoded objects (decoding included, as
// the list path did) with one from their JSON.
func BenchmarkTable(b *testing.B) {
	items := benchWidgets(b, 2000)
	p, err := CustomPrinter(&apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1"})
	if err != nil {
		b.Fatal(err)
	}
	r := &catalog.Resource{Printer: p}
	opts := Options{APIVersion: "meta.k8s.io/v1"}
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			decoded := make([]*unstructured.Unstructured, len(items))
			for i, item := range items {
				decoded[i] = &unstructured.Unstructured{}
				if err := decoded[i].UnmarshalJSON(item); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := Build(r, decoded, metav1.ListMeta{ResourceVersion: "1"}, opts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := BuildRaw(r, items, metav1.ListMeta{ResourceVersion: "1"}, opts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
}
