package fieldmanager_test

// Scenario fixtures for field management, in the manner of sigs.k8s.io/structured-merge-diff's
// internal/fixture: each TestCase is an ordered list of operations made by named managers
// (Apply, ForceApply, Update, StatusApply, StatusUpdate, Scale), then the object and the
// managedFields expected once they have all run. Unlike SMD's fixtures, which drive a merge
// Updater directly, these go through objects.Service over an embedded etcd, so they cover the
// whole write pipeline (defaulting, strategies, reset fields, the scale handler) that decides
// what kube-apiserver records.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/crd"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

// The custom resources the fixtures use: Marked has every merge marker and a status
// subresource, Plain no markers, Loose a schema that preserves unknown fields, Bare no schema at
// all (field management deduces its types), Versioned two versions, Scaled the scale
// subresource. Marked, Plain, Loose and Versioned are the differential test's CRDs.
var fixtureCRDs = append(append([]string(nil), objectstest.ScenarioCRDs...), `
metadata: {name: bares.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Bare, plural: bares, singular: bare}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true}
`, `
metadata: {name: scaled.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Scaled, plural: scaled, singular: scaled}
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
          spec: {type: object, properties: {replicas: {type: integer}, image: {type: string}}}
          status: {type: object, properties: {replicas: {type: integer}, selector: {type: string}}}
`)

// fixtureResources names the resources a TestCase may use; an operation's Version picks
// another served version of the same resource.
var fixtureResources = map[string]schema.GroupVersionResource{
	"marked":     {Group: "diff.example.com", Version: "v1", Resource: "marked"},
	"plains":     {Group: "diff.example.com", Version: "v1", Resource: "plains"},
	"loose":      {Group: "diff.example.com", Version: "v1", Resource: "loose"},
	"bares":      {Group: "diff.example.com", Version: "v1", Resource: "bares"},
	"versioned":  {Group: "diff.example.com", Version: "v1", Resource: "versioned"},
	"scaled":     {Group: "diff.example.com", Version: "v1", Resource: "scaled"},
	"configmaps": {Version: "v1", Resource: "configmaps"},
	"secrets":    {Version: "v1", Resource: "secrets"},
	"namespaces": {Version: "v1", Resource: "namespaces"},
	"events":     {Version: "v1", Resource: "events"},
}

// fixture is the server the cases run against: one objects.Service, each case with its own
// object.
type fixture struct {
	svc *objects.Service
	cat *catalog.Catalog
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	svc, cat := objectstest.NewService(t, "default")
	for _, doc := range fixtureCRDs {
		def := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(doc), def); err != nil {
			t.Fatal(err)
		}
		rs := crd.ResourcesFor(def)
		if len(rs) != len(def.Spec.Versions) {
			t.Fatalf("%s: %d of %d versions served", def.Name, len(rs), len(def.Spec.Versions))
		}
		cat.SetCustom(def.Name, rs)
	}
	return &fixture{svc: svc, cat: cat}
}

func (f *fixture) resource(t *testing.T, gvr schema.GroupVersionResource, version string) *catalog.Resource {
	t.Helper()
	if version != "" {
		gvr.Version = version
	}
	r, ok := f.cat.Lookup(gvr)
	if !ok {
		t.Fatalf("%s is not served", gvr)
	}
	return r
}

// state is one running case: the object its operations write.
type state struct {
	t         *testing.T
	f         *fixture
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func (s *state) resource(version string) *catalog.Resource { return s.f.resource(s.t, s.gvr, version) }

// object builds the request body: the YAML content with apiVersion, kind and the object's name
// filled in.
func (s *state) object(r *catalog.Resource, content string) *unstructured.Unstructured {
	s.t.Helper()
	m := parseYAML(s.t, content)
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["name"] = s.name
	if s.namespace != "" {
		meta["namespace"] = s.namespace
	}
	m["metadata"] = meta
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(r.GroupVersionKind())
	return u
}

func (s *state) apply(manager, version, content, subresource string, force bool) error {
	r := s.resource(version)
	_, err := s.f.svc.Apply(context.Background(), r, s.namespace, s.name, s.object(r, content), objects.ApplyOptions{
		WriteOptions: objects.WriteOptions{Manager: manager, Subresource: subresource}, Force: force})
	return err
}

// Operation is one request of a TestCase.
type Operation interface {
	run(s *state) error
	// expect is the error message the operation must fail with, "" when it must succeed.
	expect() string
}

// Apply is a server-side apply by Manager of Object (YAML content: spec, data, labels in
// metadata...) at Version ("" is the case resource's version). Err is the expected error text,
// usually a conflict.
type Apply struct {
	Manager, Version, Object, Err string
}

func (o Apply) run(s *state) error { return s.apply(o.Manager, o.Version, o.Object, "", false) }
func (o Apply) expect() string     { return o.Err }

// ForceApply is an Apply with force=true.
type ForceApply struct {
	Manager, Version, Object, Err string
}

func (o ForceApply) run(s *state) error { return s.apply(o.Manager, o.Version, o.Object, "", true) }
func (o ForceApply) expect() string     { return o.Err }

// StatusApply is an Apply through the status subresource.
type StatusApply struct {
	Manager, Object, Err string
}

func (o StatusApply) run(s *state) error { return s.apply(o.Manager, "", o.Object, "status", false) }
func (o StatusApply) expect() string     { return o.Err }

// Update replaces the object with Object (a PUT of the current resourceVersion, as kubectl
// replace makes), or creates it (a POST) when it does not exist yet. Object may carry
// metadata.managedFields.
type Update struct {
	Manager, Version, Object, Err string
}

func (o Update) run(s *state) error {
	r := s.resource(o.Version)
	ctx := context.Background()
	_, err := s.f.svc.Update(ctx, r, s.namespace, s.name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		obj := s.object(r, o.Object)
		obj.SetResourceVersion(cur.GetResourceVersion())
		return obj, nil
	}, objects.WriteOptions{Manager: o.Manager})
	if apierrors.IsNotFound(err) {
		_, err = s.f.svc.Create(ctx, r, s.namespace, s.object(r, o.Object), objects.WriteOptions{Manager: o.Manager})
	}
	return err
}
func (o Update) expect() string { return o.Err }

// StatusUpdate is a PUT to the status subresource of the current object with its status
// replaced by Object's, as a controller makes.
type StatusUpdate struct {
	Manager, Object, Err string
}

func (o StatusUpdate) run(s *state) error {
	status := parseYAML(s.t, o.Object)["status"]
	_, err := s.f.svc.Update(context.Background(), s.resource(""), s.namespace, s.name, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.Object["status"] = status
		return cur, nil
	}, objects.WriteOptions{Manager: o.Manager, Subresource: "status"})
	return err
}
func (o StatusUpdate) expect() string { return o.Err }

// Scale is a PUT to the scale subresource setting spec.replicas, as the HPA controller makes.
type Scale struct {
	Manager  string
	Replicas int64
	Err      string
}

func (o Scale) run(s *state) error {
	_, err := s.f.svc.UpdateScale(context.Background(), s.resource(""), s.namespace, s.name,
		func(cur *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
			err := unstructured.SetNestedField(cur.Object, o.Replicas, "spec", "replicas")
			return cur, err
		}, objects.RecordScaleFields, objects.WriteOptions{Manager: o.Manager})
	return err
}
func (o Scale) expect() string { return o.Err }

// Entry is an expected managedFields entry. Fields lists the members of its field set, one
// path each in fieldpath's notation: .field, [key="value",other=1] for an item of a list map,
// [="value"] for an item of a set, [3] for an index; a field name with dots or brackets in it
// is quoted (.metadata.labels."app.kubernetes.io/name").
type Entry struct {
	Manager, Operation, APIVersion, Subresource string
	Fields                                      []string
	// Untimed entries have no time. kube-apiserver stamps an entry when its manager's write
	// changes the object, so a first apply that changes nothing leaves its entry without one,
	// and the scale handler gives the parent's entry for a new scale manager the time of a
	// parent entry of that name, which it does not have.
	Untimed bool
}

func applied(manager, apiVersion string, fields ...string) Entry {
	return Entry{Manager: manager, Operation: "Apply", APIVersion: apiVersion, Fields: fields}
}

func updated(manager, apiVersion string, fields ...string) Entry {
	return Entry{Manager: manager, Operation: "Update", APIVersion: apiVersion, Fields: fields}
}

func (e Entry) on(subresource string) Entry { e.Subresource = subresource; return e }

func (e Entry) untimed() Entry { e.Untimed = true; return e }

// TestCase runs Ops on one object of Resource, then checks it against Object and Managed.
type TestCase struct {
	Resource string
	Ops      []Operation
	// Object is the expected content as YAML: every top-level field but apiVersion, kind and
	// metadata is compared, and of metadata the fields Object names (labels, annotations).
	// "$name" stands for the object's name.
	Object string
	// Managed is the expected managedFields. kube-apiserver orders entries by operation, then
	// time (in seconds), manager, apiVersion and subresource; the comparison leaves time out, as
	// if every operation were made in the same second.
	Managed []Entry
}

func (tc TestCase) test(t *testing.T, f *fixture, name string) {
	gvr, ok := fixtureResources[tc.Resource]
	if !ok {
		t.Fatalf("unknown resource %q", tc.Resource)
	}
	s := &state{t: t, f: f, gvr: gvr, name: name}
	if r := s.resource(""); r.Namespaced {
		s.namespace = "default"
	}
	for i, op := range tc.Ops {
		err := op.run(s)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != op.expect() {
			t.Fatalf("operation %d, %#v:\n got error %q\nwant error %q", i, op, got, op.expect())
		}
	}
	obj, err := f.svc.Get(context.Background(), s.resource(""), s.namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	tc.checkObject(t, obj)
	tc.checkManaged(t, obj.GetManagedFields())
}

func (tc TestCase) checkObject(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	want := parseYAML(t, strings.ReplaceAll(tc.Object, "$name", obj.GetName()))
	got := map[string]any{}
	for k, v := range normalize(t, obj.Object) {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			got[k] = v
		}
	}
	if wantMeta, ok := want["metadata"].(map[string]any); ok {
		gotMeta := map[string]any{}
		actual, _ := normalize(t, obj.Object)["metadata"].(map[string]any)
		for k := range wantMeta {
			if v, ok := actual[k]; ok {
				gotMeta[k] = v
			}
		}
		got["metadata"] = gotMeta
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := yaml.Marshal(got)
		w, _ := yaml.Marshal(want)
		t.Errorf("object:\n--- got\n%s--- want\n%s", g, w)
	}
}

func (tc TestCase) checkManaged(t *testing.T, entries []metav1.ManagedFieldsEntry) {
	t.Helper()
	// The stored order must be kube's, times included.
	if !sort.SliceIsSorted(entries, func(i, j int) bool { return kubeLess(entries[i], entries[j], true) }) {
		t.Errorf("managedFields not in kube-apiserver's order:\n%s", formatEntries(t, entries))
	}
	sorted := append([]metav1.ManagedFieldsEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return kubeLess(sorted[i], sorted[j], false) })
	ok := len(sorted) == len(tc.Managed)
	for i := 0; ok && i < len(sorted); i++ {
		got, want := sorted[i], tc.Managed[i]
		ok = got.Manager == want.Manager && string(got.Operation) == want.Operation && got.APIVersion == want.APIVersion &&
			got.Subresource == want.Subresource && got.FieldsType == "FieldsV1" && (got.Time == nil) == want.Untimed &&
			got.FieldsV1 != nil && bytes.Equal(got.FieldsV1.Raw, fieldsJSON(t, want.Fields))
	}
	if !ok {
		t.Errorf("managedFields:\n--- got\n%s--- want\n%s", formatEntries(t, sorted), formatExpected(tc.Managed))
	}
}

// kubeLess is kube-apiserver's order of managedFields entries (sortEncodedManagedFields).
func kubeLess(p, q metav1.ManagedFieldsEntry, withTime bool) bool {
	if p.Operation != q.Operation {
		return p.Operation < q.Operation
	}
	if withTime {
		ps, qs := int64(0), int64(0)
		if p.Time != nil {
			ps = p.Time.Unix()
		}
		if q.Time != nil {
			qs = q.Time.Unix()
		}
		if ps != qs {
			return ps < qs
		}
	}
	if p.Manager != q.Manager {
		return p.Manager < q.Manager
	}
	if p.APIVersion != q.APIVersion {
		return p.APIVersion < q.APIVersion
	}
	return p.Subresource < q.Subresource
}

func entrySet(t *testing.T, e metav1.ManagedFieldsEntry) *fieldpath.Set {
	t.Helper()
	set := &fieldpath.Set{}
	if e.FieldsV1 == nil {
		return set
	}
	if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
		t.Fatalf("fieldsV1 of %s: %v", e.Manager, err)
	}
	return set
}

func formatEntries(t *testing.T, entries []metav1.ManagedFieldsEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s %s %q", e.Operation, e.Manager, e.APIVersion, e.Subresource)
		if e.Time == nil {
			b.WriteString(" untimed")
		}
		if e.FieldsType != "FieldsV1" {
			fmt.Fprintf(&b, " fieldsType %q", e.FieldsType)
		}
		b.WriteString(":")
		entrySet(t, e).Iterate(func(p fieldpath.Path) { fmt.Fprintf(&b, " %s", formatPath(p)) })
		if e.FieldsV1 != nil {
			fmt.Fprintf(&b, "\n    %s", e.FieldsV1.Raw)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func formatExpected(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s %s %q", e.Operation, e.Manager, e.APIVersion, e.Subresource)
		if e.Untimed {
			b.WriteString(" untimed")
		}
		fmt.Fprintf(&b, ": %s\n", strings.Join(e.Fields, " "))
	}
	return b.String()
}

// formatPath writes a path as Entry.Fields has it: fieldpath's notation, with field names that
// would not read back quoted.
func formatPath(p fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range p {
		if pe.FieldName != nil && strings.ContainsAny(*pe.FieldName, `.[]"=,`) {
			b.WriteString("." + strconv.Quote(*pe.FieldName))
			continue
		}
		b.WriteString(pe.String())
	}
	return b.String()
}

// fieldsJSON is the fieldsV1 of a set of paths, as kube-apiserver encodes it.
func fieldsJSON(t *testing.T, paths []string) []byte {
	t.Helper()
	raw, err := pathSet(t, paths).ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func pathSet(t *testing.T, paths []string) *fieldpath.Set {
	t.Helper()
	set := fieldpath.NewSet()
	for _, s := range paths {
		p, err := parsePath(s)
		if err != nil {
			t.Fatalf("path %q: %v", s, err)
		}
		set.Insert(p)
	}
	return set
}

// parsePath reads a path written as formatPath writes it.
func parsePath(s string) (fieldpath.Path, error) {
	var p fieldpath.Path
	for len(s) > 0 {
		switch s[0] {
		case '.':
			name, rest, err := fieldName(s[1:])
			if err != nil {
				return nil, err
			}
			p = append(p, fieldpath.PathElement{FieldName: &name})
			s = rest
		case '[':
			s = s[1:]
			switch {
			case strings.HasPrefix(s, "="):
				v, rest, err := jsonValue(s[1:])
				if err != nil {
					return nil, err
				}
				p = append(p, fieldpath.PathElement{Value: &v})
				s = rest
			case len(s) > 0 && s[0] >= '0' && s[0] <= '9':
				end := strings.IndexByte(s, ']')
				if end < 0 {
					return nil, fmt.Errorf("unterminated index")
				}
				i, err := strconv.Atoi(s[:end])
				if err != nil {
					return nil, err
				}
				p = append(p, fieldpath.PathElement{Index: &i})
				s = s[end:]
			default:
				var key value.FieldList
				for {
					eq := strings.IndexByte(s, '=')
					if eq <= 0 {
						return nil, fmt.Errorf("bad key at %q", s)
					}
					v, rest, err := jsonValue(s[eq+1:])
					if err != nil {
						return nil, err
					}
					key = append(key, value.Field{Name: s[:eq], Value: v})
					s = rest
					if !strings.HasPrefix(s, ",") {
						break
					}
					s = s[1:]
				}
				key.Sort()
				p = append(p, fieldpath.PathElement{Key: &key})
			}
			if !strings.HasPrefix(s, "]") {
				return nil, fmt.Errorf("missing ] at %q", s)
			}
			s = s[1:]
		default:
			return nil, fmt.Errorf("unexpected %q", s)
		}
	}
	return p, nil
}

func fieldName(s string) (string, string, error) {
	if strings.HasPrefix(s, `"`) {
		v, rest, err := jsonValue(s)
		if err != nil {
			return "", "", err
		}
		if !v.IsString() {
			return "", "", fmt.Errorf("quoted field name is not a string")
		}
		return v.AsString(), rest, nil
	}
	end := strings.IndexAny(s, ".[")
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return "", "", fmt.Errorf("empty field name")
	}
	return s[:end], s[end:], nil
}

// jsonValue reads one JSON value from the start of s.
func jsonValue(s string) (value.Value, string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, "", err
	}
	v, err := value.FromJSON(raw)
	if err != nil {
		return nil, "", err
	}
	return v, s[dec.InputOffset():], nil
}

// parseYAML reads YAML content with integers as int64, as objects come from JSON requests.
func parseYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return m
}

func normalize(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// objectName turns a case name into a DNS label.
func objectName(caseName string) string {
	b := []byte(strings.ToLower(caseName))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	name := strings.Trim(string(b), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

const (
	v1   = "diff.example.com/v1"
	v2   = "diff.example.com/v2"
	core = "v1"
)

func TestFieldManagementFixtures(t *testing.T) {
	f := newFixture(t)
	for name, tc := range fixtureCases {
		t.Run(name, func(t *testing.T) { tc.test(t, f, objectName(name)) })
	}
}

var fixtureCases = map[string]TestCase{
	// Appliers share a field applied with the same value; it goes when its last owner stops
	// applying it.
	"shared ownership and removal": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 3, tags: [x]}}`},
			Apply{Manager: "b", Object: `{spec: {replicas: 3}}`},
			Apply{Manager: "a", Object: `{spec: {tags: [x]}}`},
			Apply{Manager: "b", Object: `{spec: {}}`},
		},
		Object: `{spec: {tags: [x]}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.tags[="x"]`),
			applied("b", v1, ".spec"), // an empty spec applied: b owns spec itself
		},
	},
	"shared field stays while an owner remains": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 3, tags: [x]}}`},
			Apply{Manager: "b", Object: `{spec: {replicas: 3, tags: [x]}}`},
			Apply{Manager: "a", Object: `{spec: {tags: [x]}}`},
		},
		Object: `{spec: {replicas: 3, tags: [x]}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.tags[="x"]`),
			applied("b", v1, ".spec.replicas", `.spec.tags[="x"]`).untimed(), // b's apply changed nothing
		},
	},
	"conflict then force": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 3}}`},
			Apply{Manager: "b", Object: `{spec: {replicas: 4}}`, Err: `Apply failed with 1 conflict: conflict with "a": .spec.replicas`},
			ForceApply{Manager: "b", Object: `{spec: {replicas: 4}}`},
			Apply{Manager: "a", Object: `{spec: {replicas: 3}}`, Err: `Apply failed with 1 conflict: conflict with "b": .spec.replicas`},
		},
		Object: `{spec: {replicas: 4}}`,
		Managed: []Entry{
			applied("b", v1, ".spec.replicas"),
		},
	},
	"several conflicts": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 1, args: [x]}}`},
			Apply{Manager: "b", Object: `{spec: {tags: [t], settings: {k: v}}}`},
			Update{Manager: "editor", Object: `{spec: {replicas: 1, args: [x], tags: [t], settings: {k: w}}}`},
			Apply{Manager: "c", Object: `{spec: {replicas: 2, args: [why], settings: {k: z}}}`,
				Err: "Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.args\n- .spec.replicas\nconflicts with \"editor\" using diff.example.com/v1:\n- .spec.settings.k"},
			ForceApply{Manager: "c", Object: `{spec: {replicas: 2, args: [why], settings: {k: z}}}`},
		},
		Object: `{spec: {replicas: 2, args: [why], tags: [t], settings: {k: z}}}`,
		Managed: []Entry{
			applied("b", v1, `.spec.tags[="t"]`),
			applied("c", v1, ".spec.args", ".spec.replicas", ".spec.settings.k"),
		},
	},
	// An update takes the fields it changes from everyone, appliers included; the applier then
	// conflicts with it.
	"update after apply moves ownership": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 1, tags: [a]}}`},
			Update{Manager: "editor", Object: `{spec: {replicas: 2, tags: [a]}}`},
			Apply{Manager: "a", Object: `{spec: {replicas: 3, tags: [a]}}`,
				Err: `Apply failed with 1 conflict: conflict with "editor" using diff.example.com/v1: .spec.replicas`},
			Update{Manager: "editor2", Object: `{spec: {replicas: 2, tags: [a, b]}}`},
			ForceApply{Manager: "a", Object: `{spec: {replicas: 3, tags: [a]}}`},
		},
		Object: `{spec: {replicas: 3, tags: [a, b]}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.replicas", `.spec.tags[="a"]`),
			updated("editor2", v1, `.spec.tags[="b"]`),
		},
	},
	// Creating through an update owns every field set, the object's spec included.
	"create by update": {
		Resource: "marked",
		Ops: []Operation{
			Update{Manager: "creator", Object: `{spec: {replicas: 1, ports: [{name: http, port: 80}]}, status: {ready: true}}`},
			Apply{Manager: "a", Object: `{spec: {replicas: 1}}`},
		},
		Object: `{spec: {replicas: 1, ports: [{name: http, port: 80}]}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.replicas").untimed(),
			updated("creator", v1, ".spec", ".spec.replicas", ".spec.ports", `.spec.ports[name="http"]`,
				`.spec.ports[name="http"].name`, `.spec.ports[name="http"].port`),
		},
	},
	// x-kubernetes-list-type map, set and atomic.
	"list markers": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {ports: [{name: http, port: 80}], tags: [a, b], args: [ex, why]}}`},
			Apply{Manager: "b", Object: `{spec: {ports: [{name: https, port: 443}], tags: [c]}}`},
			Apply{Manager: "b", Object: `{spec: {args: [z]}}`, Err: `Apply failed with 1 conflict: conflict with "a": .spec.args`},
			Apply{Manager: "a", Object: `{spec: {ports: [{name: http, port: 8080}], tags: [a], args: [ex, why]}}`},
			Update{Manager: "editor", Object: `{spec: {ports: [{name: http, port: 8080}, {name: https, port: 444}], tags: [a, c], args: [ex, why]}}`},
			Apply{Manager: "b", Object: `{spec: {ports: [{name: https, port: 443}], tags: [c]}}`,
				Err: `Apply failed with 1 conflict: conflict with "editor" using diff.example.com/v1: .spec.ports[name="https"].port`},
		},
		Object: `{spec: {ports: [{name: http, port: 8080}, {name: https, port: 444}], tags: [a, c], args: [ex, why]}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.args", `.spec.ports[name="http"]`, `.spec.ports[name="http"].name`,
				`.spec.ports[name="http"].port`, `.spec.tags[="a"]`),
			applied("b", v1, `.spec.ports[name="https"]`, `.spec.ports[name="https"].name`, `.spec.tags[="c"]`),
			updated("editor", v1, `.spec.ports[name="https"].port`),
		},
	},
	// x-kubernetes-map-type granular and atomic, and an atomic struct (an object with
	// properties marked atomic).
	"map markers and atomic struct": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {settings: {one: "1"}, selector: {app: x}, endpoint: {host: h, port: 1}}}`},
			Apply{Manager: "b", Object: `{spec: {settings: {two: "2"}}}`},
			Apply{Manager: "b", Object: `{spec: {settings: {two: "2"}, selector: {tier: web}}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.selector`},
			Apply{Manager: "b", Object: `{spec: {settings: {two: "2"}, endpoint: {host: h}}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.endpoint`},
			Apply{Manager: "c", Object: `{spec: {endpoint: {host: h, port: 1}}}`},
			ForceApply{Manager: "b", Object: `{spec: {settings: {two: "2"}, selector: {tier: web}}}`},
		},
		Object: `{spec: {settings: {one: "1", two: "2"}, selector: {tier: web}, endpoint: {host: h, port: 1}}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.endpoint", ".spec.settings.one"),
			applied("b", v1, ".spec.selector", ".spec.settings.two"),
			applied("c", v1, ".spec.endpoint").untimed(),
		},
	},
	// Without markers, lists are atomic and maps granular.
	"no markers": {
		Resource: "plains",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {items: [{name: one, value: "1"}], data: {k1: v1}}}`},
			Apply{Manager: "b", Object: `{spec: {items: [{name: two, value: "2"}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.items`},
			Apply{Manager: "b", Object: `{spec: {data: {k2: v2}}}`},
		},
		Object: `{spec: {items: [{name: one, value: "1"}], data: {k1: v1, k2: v2}}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.data.k1", ".spec.items"),
			applied("b", v1, ".spec.data.k2"),
		},
	},
	"preserved unknown fields": {
		Resource: "loose",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {nested: {x: 1}, list: [1, 2]}}`},
			Apply{Manager: "b", Object: `{spec: {nested: {w: 2}}}`},
			Apply{Manager: "b", Object: `{spec: {list: [3]}}`, Err: `Apply failed with 1 conflict: conflict with "a": .spec.list`},
		},
		Object: `{spec: {nested: {x: 1, w: 2}, list: [1, 2]}}`,
		Managed: []Entry{
			applied("a", v1, ".spec", ".spec.list", ".spec.nested", ".spec.nested.x"),
			applied("b", v1, ".spec", ".spec.nested", ".spec.nested.w"),
		},
	},
	// A version without a schema: types are deduced, lists atomic and maps granular.
	"no schema": {
		Resource: "bares",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {nested: {x: 1}, list: [{name: one}]}}`},
			Apply{Manager: "b", Object: `{spec: {nested: {w: 2}}}`},
			Apply{Manager: "b", Object: `{spec: {list: [{name: one}, {name: two}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.list`},
			Update{Manager: "editor", Object: `{spec: {nested: {x: 1, w: 3}, list: [{name: one}]}, other: true}`},
		},
		Object: `{spec: {nested: {x: 1, w: 3}, list: [{name: one}]}, other: true}`,
		Managed: []Entry{
			applied("a", v1, ".spec", ".spec.list", ".spec.nested", ".spec.nested.x"),
			applied("b", v1, ".spec", ".spec.nested"),
			updated("editor", v1, ".other", ".spec.nested.w"),
		},
	},
	// The main resource neither sets nor owns status; the status subresource records its
	// entries with subresource "status".
	"status subresource": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 1, tags: [x]}, status: {ready: true}}`},
			StatusApply{Manager: "ctrl", Object: `{status: {ready: true, replicas: 1}}`},
			StatusApply{Manager: "ctrl2", Object: `{status: {replicas: 2}}`,
				Err: `Apply failed with 1 conflict: conflict with "ctrl" with subresource "status": .status.replicas`},
			StatusUpdate{Manager: "kubelet", Object: `{status: {ready: false, replicas: 1}}`},
			Update{Manager: "editor", Object: `{spec: {replicas: 2, tags: [x]}, status: {ready: true, replicas: 7}}`},
			StatusApply{Manager: "ctrl", Object: `{spec: {replicas: 9}, status: {replicas: 1}}`},
		},
		Object: `{spec: {replicas: 2, tags: [x]}, status: {ready: false, replicas: 1}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.tags[="x"]`),
			applied("ctrl", v1, ".status.replicas").on("status"),
			updated("editor", v1, ".spec.replicas"),
			updated("kubelet", v1, ".status.ready").on("status"),
		},
	},
	// Writes to the scale subresource are recorded in the parent as the owner of the replicas
	// path, with subresource "scale".
	"scale takes replicas": {
		Resource: "scaled",
		Ops: []Operation{
			Apply{Manager: "user", Object: `{spec: {replicas: 3, image: nginx}}`},
			Scale{Manager: "hpa", Replicas: 5},
			Apply{Manager: "user", Object: `{spec: {replicas: 3, image: nginx}}`,
				Err: `Apply failed with 1 conflict: conflict with "hpa" with subresource "scale" using diff.example.com/v1: .spec.replicas`},
			Apply{Manager: "user", Object: `{spec: {image: nginx}}`},
		},
		Object: `{spec: {replicas: 5, image: nginx}}`,
		Managed: []Entry{
			applied("user", v1, ".spec.image"),
			updated("hpa", v1, ".spec.replicas").on("scale").untimed(),
		},
	},
	// The documented way to hand replicas over to an autoscaler: a temporary manager applies
	// the value alone, the user stops applying it, and the autoscaler's first write leaves the
	// temporary manager with nothing, so its entry goes.
	"handover to hpa": {
		Resource: "scaled",
		Ops: []Operation{
			Apply{Manager: "user", Object: `{spec: {replicas: 3, image: nginx}}`},
			Apply{Manager: "handover-to-hpa", Object: `{spec: {replicas: 3}}`},
			Apply{Manager: "user", Object: `{spec: {image: nginx}}`},
			Scale{Manager: "hpa", Replicas: 6},
		},
		Object: `{spec: {replicas: 6, image: nginx}}`,
		Managed: []Entry{
			applied("user", v1, ".spec.image"),
			updated("hpa", v1, ".spec.replicas").on("scale").untimed(),
		},
	},
	// When no one owns replicas the scale subresource has no managed fields, and an update of
	// an object without managed fields is not tracked.
	"scale of unowned replicas": {
		Resource: "scaled",
		Ops: []Operation{
			Apply{Manager: "user", Object: `{spec: {image: nginx}}`},
			Scale{Manager: "hpa", Replicas: 2},
		},
		Object: `{spec: {replicas: 2, image: nginx}}`,
		Managed: []Entry{
			applied("user", v1, ".spec.image"),
		},
	},
	// An update whose managedFields are [] is as one without: the stored entries stay.
	"managedFields [] keeps the entries": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 1, tags: [x]}}`},
			Update{Manager: "editor", Object: `{metadata: {managedFields: []}, spec: {replicas: 2, tags: [x]}}`},
		},
		Object: `{spec: {replicas: 2, tags: [x]}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.tags[="x"]`),
			updated("editor", v1, ".spec.replicas"),
		},
	},
	// managedFields [{}] in an update clears them, and an update of an object without
	// managedFields is not tracked: the update's own change is not recorded either.
	"clearing managedFields": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 1}}`},
			Update{Manager: "editor", Object: `{metadata: {managedFields: [{}]}, spec: {replicas: 5}}`},
		},
		Object:  `{spec: {replicas: 5}}`,
		Managed: nil,
	},
	// Once managedFields are gone, updates are not tracked, and the first apply records the
	// whole object as owned by "before-first-apply".
	"before first apply": {
		Resource: "marked",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {replicas: 1, tags: [x]}}`},
			Update{Manager: "editor", Object: `{metadata: {managedFields: [{}]}, spec: {replicas: 1, tags: [x]}}`},
			Update{Manager: "editor", Object: `{spec: {replicas: 2, tags: [x]}}`},
			Apply{Manager: "b", Object: `{spec: {replicas: 3}}`,
				Err: `Apply failed with 1 conflict: conflict with "before-first-apply" using diff.example.com/v1: .spec.replicas`},
			Apply{Manager: "b", Object: `{spec: {tags: [x, z]}}`},
		},
		Object: `{spec: {replicas: 2, tags: [x, z]}}`,
		Managed: []Entry{
			applied("b", v1, `.spec.tags[="x"]`, `.spec.tags[="z"]`),
			updated("before-first-apply", v1, ".spec", ".spec.replicas", ".spec.tags", `.spec.tags[="x"]`),
		},
	},
	// Managers of different versions share fields: entries keep the version they were written
	// at, and conflicts are found across versions.
	"two versions share ownership": {
		Resource: "versioned",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {a: one}}`},
			Apply{Manager: "b", Version: "v2", Object: `{spec: {a: one, b: two}}`},
			Apply{Manager: "c", Version: "v2", Object: `{spec: {a: other}}`,
				Err: "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.a\nconflicts with \"b\":\n- .spec.a"},
			Apply{Manager: "a", Object: `{spec: {b: two}}`},
			Update{Manager: "editor", Version: "v2", Object: `{spec: {a: one, b: three}}`},
		},
		Object: `{spec: {a: one, b: three}}`,
		Managed: []Entry{
			applied("b", v2, ".spec.a"),
			updated("editor", v2, ".spec.b"),
		},
	},
	"configmap": {
		Resource: "configmaps",
		Ops: []Operation{
			Update{Manager: "creator", Object: `{data: {a: "1"}}`},
			Apply{Manager: "applier", Object: `{metadata: {labels: {app: x}}, data: {b: "2"}}`},
			Apply{Manager: "applier2", Object: `{data: {a: "9"}}`,
				Err: `Apply failed with 1 conflict: conflict with "creator" using v1: .data.a`},
			ForceApply{Manager: "applier2", Object: `{data: {a: "9"}}`},
		},
		Object: `{metadata: {labels: {app: x}}, data: {a: "9", b: "2"}}`,
		Managed: []Entry{
			applied("applier", core, ".data.b", ".metadata.labels.app"),
			applied("applier2", core, ".data.a"),
			updated("creator", core, ".data"),
		},
	},
	// The creator owns the defaulted type; stringData folds into data, and the applier owns
	// what it applied, stringData.
	"secret": {
		Resource: "secrets",
		Ops: []Operation{
			Update{Manager: "creator", Object: `{data: {k: dg==}}`},
			Apply{Manager: "a", Object: `{stringData: {x: "y"}}`},
			Apply{Manager: "a", Object: `{stringData: {x: "y"}}`},
		},
		Object: `{data: {k: dg==, x: eQ==}, type: Opaque}`,
		Managed: []Entry{
			applied("a", core, ".stringData.x"),
			updated("creator", core, ".data", ".data.k", ".type"),
		},
	},
	// The name label, spec.finalizers and status are set by the server, owned by no applier.
	"namespace by apply": {
		Resource: "namespaces",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{metadata: {labels: {team: x, env: prod}}}`},
			Update{Manager: "editor", Object: `{metadata: {labels: {team: blue, env: prod}}}`},
			Apply{Manager: "a", Object: `{metadata: {labels: {team: x, env: prod}}}`,
				Err: `Apply failed with 1 conflict: conflict with "editor" using v1: .metadata.labels.team`},
		},
		Object: `{metadata: {labels: {team: blue, env: prod, kubernetes.io/metadata.name: $name}}, spec: {finalizers: [kubernetes]}, status: {phase: Active}}`,
		Managed: []Entry{
			applied("a", core, ".metadata.labels.env"),
			updated("editor", core, ".metadata.labels.team"),
		},
	},
	// An update's changes are tracked before the strategy resets what the endpoint may not
	// change: spec.finalizers, which only /finalize changes, is owned by the updater, though
	// the stored value stays.
	"namespace finalizers by update": {
		Resource: "namespaces",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{metadata: {labels: {team: x}}}`},
			Update{Manager: "editor", Object: `{metadata: {labels: {team: x}}, spec: {finalizers: [kubernetes, example.com/hold]}}`},
		},
		Object: `{metadata: {labels: {team: x, kubernetes.io/metadata.name: $name}}, spec: {finalizers: [kubernetes]}, status: {phase: Active}}`,
		Managed: []Entry{
			applied("a", core, ".metadata.labels.team"),
			updated("editor", core, ".spec.finalizers"),
		},
	},
	// An ObjectReference is a structType=atomic struct.
	"event: atomic struct": {
		Resource: "events",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{involvedObject: {kind: Pod, name: p, namespace: default}, reason: Started}`},
			Apply{Manager: "b", Object: `{involvedObject: {kind: Pod, name: q, namespace: default}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .involvedObject`},
			Apply{Manager: "c", Object: `{involvedObject: {kind: Pod, name: p, namespace: default}, message: hi}`},
		},
		Object: `{involvedObject: {kind: Pod, name: p, namespace: default}, reason: Started, message: hi,
			source: {}, eventTime: null, firstTimestamp: null, lastTimestamp: null, reportingComponent: "", reportingInstance: ""}`,
		Managed: []Entry{
			applied("a", core, ".involvedObject", ".reason"),
			applied("c", core, ".involvedObject", ".message"),
		},
	},
	// A create is tracked against the type's zero value, as kube-apiserver's live object on
	// create is a new, empty typed object: what the zero value already has (source: {}, null
	// timestamps) is not the creator's.
	"event created by update": {
		Resource: "events",
		Ops: []Operation{
			Update{Manager: "creator", Object: `{involvedObject: {kind: Pod, name: p, namespace: default}, reason: Started}`},
		},
		Object: `{involvedObject: {kind: Pod, name: p, namespace: default}, reason: Started,
			source: {}, eventTime: null, firstTimestamp: null, lastTimestamp: null, reportingComponent: "", reportingInstance: ""}`,
		Managed: []Entry{
			updated("creator", core, ".involvedObject", ".reason"),
		},
	},
	// A namespace created by POST: its creator owns the labels, the name label defaulted while
	// decoding included, but not spec.finalizers, which the create strategy adds after field
	// tracking, nor status.
	"namespace by update": {
		Resource: "namespaces",
		Ops: []Operation{
			Update{Manager: "creator", Object: `{metadata: {labels: {team: x}}}`},
		},
		Object: `{metadata: {labels: {team: x, kubernetes.io/metadata.name: $name}}, spec: {finalizers: [kubernetes]}, status: {phase: Active}}`,
		Managed: []Entry{
			updated("creator", core, ".metadata.labels", `.metadata.labels."kubernetes.io/metadata.name"`, ".metadata.labels.team"),
		},
	},
}
