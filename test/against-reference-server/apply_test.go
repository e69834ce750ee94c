package againstreference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

// The CRDs the scenarios use: one with every merge marker, one without markers, one without a
// schema, and one with two versions (shared with internal/apply's fixtures).
var crds = objectstest.ScenarioCRDs

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs on a server and waits until their resources are served.
func installCRDs(t *testing.T, c dynamic.Interface) {
	t.Helper()
	// In the order of objectstest.ScenarioCRDs; versioned's v2 is served with its v1.
	for i, gvr := range []schema.GroupVersionResource{markedGVR, plainGVR, looseGVR, versionedV1} {
		installCRD(t, c, crds[i], gvr)
	}
}

var (
	markedGVR   = schema.GroupVersionResource{Group: "diff.example.com", Version: "v1", Resource: "marked"}
	plainGVR    = schema.GroupVersionResource{Group: "diff.example.com", Version: "v1", Resource: "plains"}
	looseGVR    = schema.GroupVersionResource{Group: "diff.example.com", Version: "v1", Resource: "loose"}
	versionedV1 = schema.GroupVersionResource{Group: "diff.example.com", Version: "v1", Resource: "versioned"}
	versionedV2 = schema.GroupVersionResource{Group: "diff.example.com", Version: "v2", Resource: "versioned"}
)

// step is one request of a scenario, made by a named manager.
type step struct {
	manager string
	op      string // apply, force-apply, status-apply, merge, json, update, dry-apply, get
	gvr     schema.GroupVersionResource
	body    string // YAML; the object name is filled in
	query   map[string]string
}

type scenario struct {
	name  string
	steps []step
}

func apply(manager string, gvr schema.GroupVersionResource, body string) step {
	return step{manager: manager, op: "apply", gvr: gvr, body: body}
}

var scenarios = []scenario{
	{"shared ownership and removal", []step{
		apply("a", markedGVR, `{spec: {replicas: 3, tags: [x]}}`),
		apply("b", markedGVR, `{spec: {replicas: 3}}`),
		apply("a", markedGVR, `{spec: {tags: [x]}}`), // b still owns replicas: it stays
		apply("b", markedGVR, `{spec: {}}`),          // nobody owns replicas: it goes
	}},
	{"conflict and force", []step{
		apply("a", markedGVR, `{spec: {replicas: 3}}`),
		apply("b", markedGVR, `{spec: {replicas: 4}}`),
		{manager: "b", op: "force-apply", gvr: markedGVR, body: `{spec: {replicas: 4}}`},
		apply("a", markedGVR, `{spec: {replicas: 3}}`),
	}},
	{"list map, set and atomic lists", []step{
		apply("a", markedGVR, `{spec: {ports: [{name: http, port: 80}], tags: [a, b], args: [ex, why]}}`),
		apply("b", markedGVR, `{spec: {ports: [{name: https, port: 443}], tags: [c]}}`),
		apply("b", markedGVR, `{spec: {args: [z]}}`),
		apply("a", markedGVR, `{spec: {ports: [{name: http, port: 8080}], tags: [a], args: [ex, why]}}`),
	}},
	{"granular and atomic maps and structs", []step{
		apply("a", markedGVR, `{spec: {settings: {one: "1"}, selector: {app: x}, endpoint: {host: h, port: 1}}}`),
		apply("b", markedGVR, `{spec: {settings: {two: "2"}}}`),
		apply("b", markedGVR, `{spec: {selector: {tier: y}}}`),
		apply("b", markedGVR, `{spec: {endpoint: {host: h}}}`),
	}},
	{"no markers: lists atomic, maps granular", []step{
		apply("a", plainGVR, `{spec: {items: [{name: one, value: "1"}], data: {k1: v1}}}`),
		apply("b", plainGVR, `{spec: {items: [{name: two, value: "2"}]}}`),
		apply("b", plainGVR, `{spec: {data: {k2: v2}}}`),
	}},
	{"schemaless", []step{
		apply("a", looseGVR, `{spec: {nested: {x: 1}, list: [1, 2]}}`),
		apply("b", looseGVR, `{spec: {nested: {y: 2}}}`),
		apply("b", looseGVR, `{spec: {list: [3]}}`),
	}},
	{"update then apply", []step{
		apply("a", markedGVR, `{spec: {replicas: 1, tags: [a]}}`),
		{manager: "editor", op: "merge", gvr: markedGVR, body: `{spec: {replicas: 2}}`},
		apply("a", markedGVR, `{spec: {replicas: 3, tags: [a]}}`),
		{manager: "editor", op: "json", gvr: markedGVR, body: `[{op: replace, path: /spec/tags, value: [q]}]`},
	}},
	{"status through its subresource", []step{
		apply("a", markedGVR, `{spec: {replicas: 1}, status: {ready: true}}`),
		{manager: "ctrl", op: "status-apply", gvr: markedGVR, body: `{status: {ready: true, replicas: 1}}`},
		{manager: "ctrl2", op: "status-apply", gvr: markedGVR, body: `{status: {replicas: 2}}`},
	}},
	{"clearing managedFields", []step{
		apply("a", markedGVR, `{spec: {replicas: 1}}`),
		{manager: "editor", op: "merge", gvr: markedGVR, body: `{metadata: {managedFields: []}}`},
		{manager: "editor", op: "merge", gvr: markedGVR, body: `{metadata: {managedFields: [{}]}, spec: {replicas: 5}}`},
		apply("b", markedGVR, `{spec: {replicas: 6}}`),
	}},
	{"dry run and bad requests", []step{
		{manager: "a", op: "dry-apply", gvr: markedGVR, body: `{spec: {replicas: 1}}`},
		{op: "get", gvr: markedGVR},
		apply("", markedGVR, `{spec: {replicas: 1}}`),
		apply("a", markedGVR, `{metadata: {managedFields: [{manager: x}]}, spec: {replicas: 1}}`),
		{manager: "a", op: "apply", gvr: markedGVR, body: `{spec: {replicas: 1, bogus: 2}}`, query: map[string]string{"fieldValidation": "Strict"}},
		{manager: "a", op: "apply", gvr: markedGVR, body: `{spec: {replicas: 1, bogus: 2}}`},
		{manager: "a", op: "apply", gvr: markedGVR, body: `{spec: {replicas: 1, bogus: 2}}`, query: map[string]string{"fieldValidation": "Ignore"}},
		apply("a", markedGVR, `{spec: {replicas: "three"}}`),
	}},
	{"versions share ownership", []step{
		apply("a", versionedV1, `{spec: {a: one}}`),
		apply("b", versionedV2, `{spec: {b: two}}`),
		apply("b", versionedV2, `{spec: {a: other}}`),
		apply("a", versionedV1, `{spec: {}}`),
	}},
}

func TestApplyScenarios(t *testing.T) {
	lapis, reference := both(t)
	installCRDs(t, lapis)
	installCRDs(t, reference)
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			name := fmt.Sprintf("scenario-%d", i)
			for j, st := range sc.steps {
				gotL, errL := do(lapis, st, name)
				gotR, errR := do(reference, st, name)
				where := fmt.Sprintf("step %d (%s by %q: %s)", j, st.op, st.manager, st.body)
				compareErrors(t, where, errL, errR)
				if errL == nil && errR == nil {
					compareObjects(t, where, gotL, gotR)
				}
			}
		})
	}
}

func do(c dynamic.Interface, st step, name string) (*unstructured.Unstructured, error) {
	ctx := context.Background()
	ri := c.Resource(st.gvr).Namespace("default")
	body := map[string]any{}
	if st.op == "json" {
		var ops []any
		if err := yaml.Unmarshal([]byte(st.body), &ops); err != nil {
			return nil, err
		}
		data, _ := json.Marshal(ops)
		return ri.Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{FieldManager: st.manager})
	}
	if st.body != "" {
		if err := yaml.Unmarshal([]byte(st.body), &body); err != nil {
			return nil, err
		}
	}
	if st.op != "merge" {
		body["apiVersion"] = st.gvr.GroupVersion().String()
		body["kind"] = kindOf(st.gvr)
		meta, _ := body["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["name"] = name
		body["metadata"] = meta
	}
	data, _ := json.Marshal(body)
	force := true
	switch st.op {
	case "get":
		return ri.Get(ctx, name, metav1.GetOptions{})
	case "apply":
		opts := metav1.PatchOptions{FieldManager: st.manager}
		if v := st.query["fieldValidation"]; v != "" {
			opts.FieldValidation = v
		}
		return ri.Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "force-apply":
		return ri.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: st.manager, Force: &force})
	case "dry-apply":
		return ri.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: st.manager, DryRun: []string{metav1.DryRunAll}})
	case "status-apply":
		return ri.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: st.manager}, "status")
	case "merge":
		return ri.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: st.manager})
	}
	return nil, fmt.Errorf("unknown op %q", st.op)
}

func kindOf(gvr schema.GroupVersionResource) string {
	switch gvr.Resource {
	case "marked":
		return "Marked"
	case "plains":
		return "Plain"
	case "loose":
		return "Loose"
	}
	return "Versioned"
}

func compareErrors(t *testing.T, where string, lapis, reference error) {
	t.Helper()
	if (lapis == nil) != (reference == nil) {
		t.Errorf("%s: lapis error %v, reference error %v", where, lapis, reference)
		return
	}
	if lapis == nil {
		return
	}
	var sl, sr apierrors.APIStatus
	if !errors.As(lapis, &sl) || !errors.As(reference, &sr) {
		t.Errorf("%s: non-API errors: lapis %v, reference %v", where, lapis, reference)
		return
	}
	l, r := sl.Status(), sr.Status()
	l.Message, r.Message = stripVolatile(l.Message), stripVolatile(r.Message)
	if r.Code == 500 && l.Code >= 400 && l.Code < 500 && l.Message == r.Message {
		return // lapis answers bad input with a 4xx where the reference fails with a 500
	}
	if l.Code != r.Code || l.Reason != r.Reason || l.Message != r.Message {
		t.Errorf("%s:\n lapis     %d %s %q\n reference %d %s %q", where, l.Code, l.Reason, l.Message, r.Code, r.Reason, r.Message)
	}
}

// compareObjects compares what both servers returned, less what differs by nature (uids,
// timestamps, resourceVersions).
func compareObjects(t *testing.T, where string, lapis, reference *unstructured.Unstructured) {
	t.Helper()
	l, r := comparable(lapis), comparable(reference)
	if !reflect.DeepEqual(l, r) {
		lj, _ := yaml.Marshal(l)
		rj, _ := yaml.Marshal(r)
		t.Errorf("%s: objects differ\n--- lapis\n%s--- reference\n%s", where, lj, rj)
	}
}

func comparable(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	obj := u.DeepCopy().Object
	meta, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"uid", "creationTimestamp", "resourceVersion"} {
		delete(meta, k)
	}
	if mf, ok := meta["managedFields"].([]any); ok {
		for _, e := range mf {
			if m, ok := e.(map[string]any); ok {
				if _, has := m["time"]; has {
					m["time"] = "<set>"
				}
			}
		}
		// Entries are ordered by time (to the second) first: two servers asked a moment apart
		// may order them differently. Compare them in an order without time.
		sort.SliceStable(mf, func(i, j int) bool { return entryOrder(mf[i]) < entryOrder(mf[j]) })
	}
	return obj
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uid>"},
	{regexp.MustCompile(`(resourceVersion\\+":\\+")\d+`), "${1}<rv>"},
}

// stripVolatile blanks what differs between two servers by nature (times, uids,
// resourceVersions) in a message that quotes an object.
func stripVolatile(msg string) string {
	for _, v := range volatile {
		msg = v.re.ReplaceAllString(msg, v.with)
	}
	return msg
}

func entryOrder(e any) string {
	m, _ := e.(map[string]any)
	return fmt.Sprint(m["operation"], "/", m["manager"], "/", m["subresource"])
}
