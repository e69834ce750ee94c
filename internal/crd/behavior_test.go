package crd

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

const widgetsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    selectableFields: [{jsonPath: .spec.color}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3, minimum: 1}
              color: {type: string}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, properties: {ready: {type: boolean}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {color: {type: string}}}}}
`

func widgetBehavior(t *testing.T, version int) *customBehavior {
	return behaviorOf(t, widgetsCRD, version)
}

// behaviorOf is the behavior of a version of the CRD written in crdYAML.
func behaviorOf(t *testing.T, crdYAML string, version int) *customBehavior {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(crdYAML), crd); err != nil {
		t.Fatal(err)
	}
	b, err := newCustomBehavior(crd, &crd.Spec.Versions[version])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	// Through JSON into unstructured, so numbers are int64 as in requests.
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCustomBehavior(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		unknown string // the unknown fields Normalize reports
		spec    string // spec after Normalize and Default
		invalid string // part of the validation error, "" for valid
	}{
		{"defaults fill in", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {color: red}}`,
			"", `{"color":"red","size":3}`, ""},
		{"unknown fields pruned and named", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {size: 2, bogus: 1}, extra: x}`,
			`unknown field "extra", unknown field "spec.bogus"`, `{"size":2}`, ""},
		{"preserved fields kept", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {free: {any: [1, 2]}}}`,
			"", `{"free":{"any":[1,2]},"size":3}`, ""},
		{"wrong type", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {size: big}}`,
			"", `{"size":"big"}`, `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`},
		{"value validation", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {size: 0}}`,
			"", `{"size":0}`, "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"},
		{"set with duplicates", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {tags: [x, x]}}`,
			"", `{"size":3,"tags":["x","x"]}`, `spec.tags[1]: Duplicate value: "x"`},
	}
	b := widgetBehavior(t, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.doc)
			unknown, err := b.Normalize(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(sorted(unknown), ", "); got != tt.unknown {
				t.Errorf("unknown fields %q, want %q", got, tt.unknown)
			}
			b.Default(obj)
			spec, _ := (&unstructured.Unstructured{Object: map[string]any{"s": obj.Object["spec"]}}).MarshalJSON()
			if got := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(spec)), `{"s":`), "}"); got != tt.spec {
				t.Errorf("spec %s, want %s", got, tt.spec)
			}
			errs := b.Validate(obj, nil)
			if got := errs.ToAggregate(); (got == nil) != (tt.invalid == "") || (got != nil && !strings.Contains(got.Error(), tt.invalid)) {
				t.Errorf("validation %v, want %q", got, tt.invalid)
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestStatusSubresourceAndFields(t *testing.T) {
	b := widgetBehavior(t, 0)
	created := object(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a}, spec: {color: blue}, status: {ready: true}}`)
	b.PrepareForCreate(created)
	if _, has := created.Object["status"]; has {
		t.Error("create through the main resource kept status")
	}
	old := object(t, `{spec: {color: blue}, status: {ready: true}}`)
	next := object(t, `{spec: {color: green}, status: {ready: false}}`)
	b.PrepareForUpdate(next, old)
	if fmt.Sprint(next.Object["status"]) != "map[ready:true]" {
		t.Errorf("update through the main resource changed status: %v", next.Object["status"])
	}
	if got := b.SelectableFields(next)["spec.color"]; got != "green" {
		t.Errorf("selectable field spec.color = %q", got)
	}
	if !b.DefaultsOnRead() {
		t.Error("a schema with defaults must default on read")
	}
	if widgetBehavior(t, 1).DefaultsOnRead() {
		t.Error("a schema without defaults must serve stored bytes as they are")
	}
}

func TestEmbeddedResourceMetadata(t *testing.T) {
	b := behaviorOf(t, `
metadata: {name: templates.example.com}
spec:
  group: example.com
  names: {kind: Template, plural: templates}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`, 0)
	obj := object(t, `{apiVersion: example.com/v1, kind: Template, metadata: {name: a}, spec: {template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "bad/name"}}}}`)
	errs := b.Validate(obj, nil)
	if agg := errs.ToAggregate(); agg == nil || !strings.Contains(agg.Error(), "spec.template.metadata.name") {
		t.Errorf("embedded metadata not validated: %v", agg)
	}
	if widgetBehavior(t, 0).embedded {
		t.Error("a schema without embedded resources reported some")
	}
}

func TestValidationRules(t *testing.T) {
	b := behaviorOf(t, `
metadata: {name: ranges.example.com}
spec:
  group: example.com
  names: {kind: Range, plural: ranges}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.min <= self.max", message: "min must not exceed max"}
            properties:
              min: {type: integer}
              max: {type: integer}
              id: {type: string, x-kubernetes-validations: [{rule: "self == oldSelf", message: "id is immutable"}]}
`, 0)
	good := object(t, `{apiVersion: example.com/v1, kind: Range, metadata: {name: r}, spec: {min: 1, max: 2, id: a}}`)
	if errs := b.Validate(good, nil); len(errs) != 0 {
		t.Fatalf("valid object refused: %v", errs)
	}
	bad := object(t, `{apiVersion: example.com/v1, kind: Range, metadata: {name: r}, spec: {min: 3, max: 2, id: a}}`)
	if agg := b.Validate(bad, nil).ToAggregate(); agg == nil || !strings.Contains(agg.Error(), "spec: Invalid value: min must not exceed max") {
		t.Errorf("rule not enforced: %v", agg)
	}
	changed := object(t, `{apiVersion: example.com/v1, kind: Range, metadata: {name: r}, spec: {min: 1, max: 2, id: b}}`)
	if agg := b.Validate(changed, good).ToAggregate(); agg == nil || !strings.Contains(agg.Error(), "id is immutable") {
		t.Errorf("transition rule not enforced: %v", agg)
	}
}

// Metadata of the wrong types is refused with json's error, as kube-apiserver's decoding of a
// custom resource refuses it (not as a field error).
func TestMetadataOfWrongTypes(t *testing.T) {
	b := widgetBehavior(t, 0)
	for doc, want := range map[string]string{
		"metadata: {name: w, annotations: {c0: {a: x}}}": "json: cannot unmarshal object into Go struct field ObjectMeta.annotations of type string",
		"metadata: {name: w, labels: {c0: 5}}":           "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string",
	} {
		if _, err := b.Normalize(object(t, doc)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// The values a scale subresource reads are checked as kube checks them, and a status write is
// checked against the status schema alone (its errors name the field from status down) and
// only the scale's status values.
func TestScaleAndStatusValidation(t *testing.T) {
	b := behaviorOf(t, `
metadata: {name: tools.example.com}
spec:
  group: example.com
  names: {kind: Tool, plural: tools}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
          status: {type: object, properties: {replicas: {type: integer}, selector: {type: string}}}
`, 0)
	tool := func(spec, status string) *unstructured.Unstructured {
		return object(t, `{apiVersion: example.com/v1, kind: Tool, metadata: {name: a}, spec: `+spec+`, status: `+status+`}`)
	}
	old := tool(`{replicas: -1}`, `{}`)
	tests := []struct {
		name     string
		validate func() field.ErrorList
		want     string
	}{
		{"negative spec replicas", func() field.ErrorList { return b.Validate(tool(`{replicas: -1}`, `{}`), nil) },
			`.spec.replicas: Invalid value: -1: should be a non-negative integer`},
		{"spec replicas over MaxInt32", func() field.ErrorList { return b.Validate(tool(`{replicas: 3000000000}`, `{}`), nil) },
			`.spec.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647`},
		{"negative status replicas", func() field.ErrorList { return b.Validate(tool(`{}`, `{replicas: -2}`), nil) },
			`.status.replicas: Invalid value: -2: should be a non-negative integer`},
		{"status write leaves the spec alone", func() field.ErrorList { return b.ValidateStatus(tool(`{replicas: -1}`, `{replicas: 1}`), old) }, ``},
		{"status write of the wrong type", func() field.ErrorList { return b.ValidateStatus(tool(`{}`, `{selector: 5}`), old) },
			`[status.selector: Invalid value: "integer": selector in body must be of type string: "integer", .status.selector: Invalid value: "": .status.selector accessor error: 5 is of the type int64, expected string]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if agg := tt.validate().ToAggregate(); agg != nil {
				got = agg.Error()
			}
			if got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}
