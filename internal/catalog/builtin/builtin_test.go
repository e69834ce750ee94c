package builtin

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func resource(t *testing.T, group, version, name string) *catalog.Resource {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: name}
	for _, r := range Resources() {
		if r.GroupVersionResource() == gvr {
			return r
		}
	}
	t.Fatalf("no resource %v", gvr)
	return nil
}

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatalf("bad test object %s: %v", s, err)
	}
	return u
}

// prepare runs what the pipeline runs before validation.
func prepare(t *testing.T, r *catalog.Resource, u, old *unstructured.Unstructured) {
	t.Helper()
	if unknown, err := r.Behavior.Normalize(u); err != nil || len(unknown) > 0 {
		t.Fatalf("normalize: unknown %v, err %v", unknown, err)
	}
	r.Behavior.Default(u)
	if old == nil {
		r.Behavior.PrepareForCreate(u)
	} else {
		r.Behavior.PrepareForUpdate(u, old)
	}
}

// summary renders errors as "field: type" for comparison.
func summary(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+string(e.Type))
	}
	return out
}

func TestResources(t *testing.T) {
	var got []string
	for _, r := range Resources() {
		got = append(got, r.GroupVersionResource().String())
		if r.Behavior == nil || r.ListKind != r.Kind+"List" || r.Singular != strings.ToLower(r.Kind) {
			t.Errorf("%s: incomplete description %+v", r.Name, r)
		}
		if r.SpecTracksGeneration != (r.Name == "customresourcedefinitions") {
			t.Errorf("%s: SpecTracksGeneration %v", r.Name, r.SpecTracksGeneration)
		}
	}
	want := []string{
		"/v1, Resource=namespaces",
		"/v1, Resource=configmaps",
		"/v1, Resource=secrets",
		"/v1, Resource=serviceaccounts",
		"/v1, Resource=events",
		"events.k8s.io/v1, Resource=events",
		"coordination.k8s.io/v1, Resource=leases",
		"apiextensions.k8s.io/v1, Resource=customresourcedefinitions",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resources:\n got %v\nwant %v", got, want)
	}
	ev := resource(t, "events.k8s.io", "v1", "events")
	if ev.StorageGroupResource != (schema.GroupResource{Resource: "events"}) || ev.Conversion == nil {
		t.Errorf("events.k8s.io events must be stored as core events with a conversion")
	}
	crd := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	if crd.Namespaced || !crd.HasStatus || !reflect.DeepEqual(crd.ShortNames, []string{"crd", "crds"}) ||
		!reflect.DeepEqual(crd.Categories, []string{"api-extensions"}) {
		t.Errorf("crd description: %+v", crd)
	}
	ns := resource(t, "", "v1", "namespaces")
	if msgs := ns.NameValidation("a.b", false); len(msgs) == 0 {
		t.Errorf("namespace names must be DNS labels")
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name string
		res  *catalog.Resource
		in   string
		path []string
		want any
	}{
		{"secret type", resource(t, "", "v1", "secrets"),
			`{"metadata":{"name":"s"}}`, []string{"type"}, "Opaque"},
		{"secret stringData folded into data", resource(t, "", "v1", "secrets"),
			`{"metadata":{"name":"s"},"data":{"a":"eA=="},"stringData":{"a":"y","b":"z"}}`,
			[]string{"data"}, map[string]any{"a": "eQ==", "b": "eg=="}},
		{"namespace name label", resource(t, "", "v1", "namespaces"),
			`{"metadata":{"name":"team-a"}}`, []string{"metadata", "labels", "kubernetes.io/metadata.name"}, "team-a"},
		{"crd conversion strategy", resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions"),
			validCRD, []string{"spec", "conversion", "strategy"}, "None"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := obj(t, tc.in)
			if _, err := tc.res.Behavior.Normalize(u); err != nil {
				t.Fatal(err)
			}
			tc.res.Behavior.Default(u)
			got, _, _ := unstructured.NestedFieldNoCopy(u.Object, tc.path...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%v = %#v, want %#v", tc.path, got, tc.want)
			}
			if _, found := u.Object["stringData"]; found {
				t.Errorf("stringData left in %v", u.Object)
			}
		})
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	r := resource(t, "", "v1", "namespaces")
	u := obj(t, `{"metadata":{"name":"a"},"spec":{"finalizers":["example.com/x"]},"status":{"phase":"Terminating"}}`)
	prepare(t, r, u, nil)
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Active" {
		t.Errorf("phase %q, want Active", phase)
	}
	fins, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
	if !reflect.DeepEqual(fins, []string{"example.com/x", "kubernetes"}) {
		t.Errorf("finalizers %v", fins)
	}
	if errs := r.Behavior.Validate(u, nil); len(errs) > 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
	if f := r.Behavior.SelectableFields(u); f["status.phase"] != "Active" {
		t.Errorf("fields %v", f)
	}

	// Status and finalizers cannot be changed through the main endpoint.
	upd := obj(t, `{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{"finalizers":[]},"status":{"phase":"Terminating"}}`)
	prepare(t, r, upd, u)
	if !reflect.DeepEqual(upd.Object["spec"], u.Object["spec"]) || !reflect.DeepEqual(upd.Object["status"], u.Object["status"]) {
		t.Errorf("update changed spec or status: %v", upd.Object)
	}
}

const validCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{
   "type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","default":1}}}}}}}]}}`

func TestValidate(t *testing.T) {
	cm := resource(t, "", "v1", "configmaps")
	secret := resource(t, "", "v1", "secrets")
	ns := resource(t, "", "v1", "namespaces")
	coreEv := resource(t, "", "v1", "events")
	ev := resource(t, "events.k8s.io", "v1", "events")
	lease := resource(t, "coordination.k8s.io", "v1", "leases")
	crd := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")

	newEvent := `{"metadata":{"name":"e","namespace":"default"},"eventTime":"2024-01-01T00:00:00.000000Z",
	  "reportingController":"example.com/ctl","reportingInstance":"ctl-1","action":"Scale","reason":"Scaled",
	  "regarding":{"kind":"Pod","namespace":"default","name":"p"},"note":"scaled","type":"Normal"}`

	tests := []struct {
		name     string
		res      *catalog.Resource
		obj, old string
		want     []string
		contains bool // want lists some of the errors, not all
	}{
		{name: "configmap ok", res: cm, obj: `{"metadata":{"name":"c","namespace":"d"},"data":{"a.b_c-1":"x"}}`},
		{name: "configmap bad key", res: cm, obj: `{"metadata":{"name":"c","namespace":"d"},"data":{"a b":"x"}}`,
			want: []string{"data[a b]: FieldValueInvalid"}},
		{name: "configmap key in both", res: cm, obj: `{"metadata":{"name":"c","namespace":"d"},"data":{"k":"x"},"binaryData":{"k":"eA=="}}`,
			want: []string{"data[k]: FieldValueInvalid"}},
		{name: "configmap too large", res: cm,
			obj:  `{"metadata":{"name":"c","namespace":"d"},"data":{"k":"` + strings.Repeat("x", maxDataSize+1) + `"}}`,
			want: []string{"[]: FieldValueTooLong"}},
		{name: "configmap immutable", res: cm,
			old:  `{"metadata":{"name":"c","namespace":"d"},"immutable":true,"data":{"k":"x"}}`,
			obj:  `{"metadata":{"name":"c","namespace":"d"},"data":{"k":"y"}}`,
			want: []string{"immutable: FieldValueForbidden", "data: FieldValueForbidden"}},
		{name: "secret immutable data", res: secret,
			old:  `{"metadata":{"name":"s","namespace":"d"},"immutable":true,"data":{"k":"eA=="}}`,
			obj:  `{"metadata":{"name":"s","namespace":"d"},"immutable":true,"data":{"k":"eQ=="}}`,
			want: []string{"data: FieldValueForbidden"}},
		{name: "secret type immutable", res: secret,
			old:  `{"metadata":{"name":"s","namespace":"d"},"type":"example.com/a"}`,
			obj:  `{"metadata":{"name":"s","namespace":"d"}}`,
			want: []string{"type: FieldValueInvalid"}},
		{name: "secret bad key", res: secret, obj: `{"metadata":{"name":"s","namespace":"d"},"stringData":{"../x":"y"}}`,
			want: []string{"data[../x]: FieldValueInvalid", "data[../x]: FieldValueInvalid"}},
		{name: "tls secret keys", res: secret, obj: `{"metadata":{"name":"s","namespace":"d"},"type":"kubernetes.io/tls"}`,
			want: []string{"data[tls.crt]: FieldValueRequired", "data[tls.key]: FieldValueRequired"}},
		{name: "dockerconfigjson not json", res: secret,
			obj:  `{"metadata":{"name":"s","namespace":"d"},"type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":"{"}}`,
			want: []string{"data[.dockerconfigjson]: FieldValueInvalid"}},
		{name: "service account token needs name", res: secret,
			obj:  `{"metadata":{"name":"s","namespace":"d"},"type":"kubernetes.io/service-account-token"}`,
			want: []string{"metadata.annotations[kubernetes.io/service-account.name]: FieldValueRequired"}},
		{name: "namespace finalizer", res: ns, obj: `{"metadata":{"name":"n"},"spec":{"finalizers":["foo"]}}`,
			want: []string{"spec.finalizers: FieldValueInvalid"}},
		{name: "core event old style ok", res: coreEv,
			obj: `{"metadata":{"name":"e.1","namespace":"d"},"involvedObject":{"kind":"Pod","namespace":"d","name":"p"},"reason":"R","count":3}`},
		{name: "core event namespace mismatch", res: coreEv,
			obj:  `{"metadata":{"name":"e","namespace":"d"},"involvedObject":{"namespace":"other"}}`,
			want: []string{"involvedObject.namespace: FieldValueInvalid"}},
		{name: "core event new style incomplete", res: coreEv,
			obj:  `{"metadata":{"name":"e","namespace":"d"},"eventTime":"2024-01-01T00:00:00.000000Z","involvedObject":{"namespace":"d"},"reportingComponent":"c"}`,
			want: []string{"reportingInstance: FieldValueRequired", "action: FieldValueRequired", "reason: FieldValueRequired"}},
		{name: "events.k8s.io ok", res: ev, obj: newEvent},
		{name: "events.k8s.io needs eventTime and type", res: ev,
			obj:  `{"metadata":{"name":"e","namespace":"default"},"regarding":{"namespace":"default"},"deprecatedCount":2}`,
			want: []string{"eventTime: FieldValueRequired", "type: FieldValueInvalid", "count: FieldValueInvalid"}},
		{name: "events.k8s.io note immutable", res: ev, old: newEvent,
			obj:  strings.Replace(newEvent, `"note":"scaled"`, `"note":"changed"`, 1),
			want: []string{"message: FieldValueInvalid"}},
		{name: "events.k8s.io series", res: ev, old: newEvent,
			obj:  strings.Replace(newEvent, `"type":"Normal"`, `"type":"Normal","series":{"count":1,"lastObservedTime":null}`, 1),
			want: []string{"series.count: FieldValueInvalid", "series.lastObservedTime: FieldValueRequired"}},
		{name: "lease ok", res: lease, obj: `{"metadata":{"name":"l","namespace":"d"},"spec":{"holderIdentity":"me","leaseDurationSeconds":15}}`},
		{name: "lease bad numbers", res: lease, obj: `{"metadata":{"name":"l","namespace":"d"},"spec":{"leaseDurationSeconds":0,"leaseTransitions":-1}}`,
			want: []string{"spec.leaseDurationSeconds: FieldValueInvalid", "spec.leaseTransitions: FieldValueInvalid"}},
		{name: "crd ok", res: crd, obj: validCRD},
		{name: "crd update ok", res: crd, old: validCRD, obj: strings.Replace(validCRD, `"singular":"widget"`, `"singular":"widget","shortNames":["wd"]`, 1)},
		{name: "crd bad name", res: crd, obj: strings.Replace(validCRD, `"name":"widgets.example.com"`, `"name":"gadgets.example.com"`, 1),
			want: []string{"metadata.name: FieldValueInvalid"}},
		{name: "crd no versions", res: crd, obj: validCRD[:strings.Index(validCRD, `"versions"`)] + `"versions":[]}}`,
			want: []string{"spec.versions: FieldValueInvalid"}, contains: true},
		// As in kube, a schema shared by all versions is validated (and reported) as the
		// internal type's top-level spec.validation.
		{name: "crd non-structural schema", res: crd,
			obj:  strings.Replace(validCRD, `"spec":{"type":"object",`, `"spec":{`, 1),
			want: []string{"spec.validation.openAPIV3Schema.properties[spec].type: FieldValueRequired"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var old *unstructured.Unstructured
			if tc.old != "" {
				old = obj(t, tc.old)
				prepare(t, tc.res, old, nil)
			}
			u := obj(t, tc.obj)
			prepare(t, tc.res, u, old)
			errs := tc.res.Behavior.Validate(u, old)
			got := summary(errs)
			if tc.contains {
				for _, w := range tc.want {
					if !slices.Contains(got, w) {
						t.Errorf("missing %q in %v", w, errs)
					}
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v\nerrors: %v", got, tc.want, errs)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	secret := resource(t, "", "v1", "secrets")
	old := obj(t, `{"metadata":{"name":"s","namespace":"d"},"immutable":true}`)
	prepare(t, secret, old, nil)
	u := obj(t, `{"metadata":{"name":"s","namespace":"d"},"immutable":false}`)
	prepare(t, secret, u, old)
	errs := secret.Behavior.Validate(u, old)
	if want := "immutable: Forbidden: field is immutable when `immutable` is set"; errs.ToAggregate().Error() != want {
		t.Errorf("got %q, want %q", errs.ToAggregate(), want)
	}

	crd := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	u = obj(t, strings.Replace(validCRD, `"name":"widgets.example.com"`, `"name":"gadgets.example.com"`, 1))
	prepare(t, crd, u, nil)
	want := `metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`
	if got := crd.Behavior.Validate(u, nil).ToAggregate().Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCRDLifecycle(t *testing.T) {
	r := resource(t, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
	u := obj(t, validCRD)
	u.Object["status"] = map[string]any{"storedVersions": []any{"v0"}, "conditions": []any{map[string]any{"type": "Established", "status": "True"}}}
	prepare(t, r, u, nil)
	if got, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions"); !reflect.DeepEqual(got, []string{"v1"}) {
		t.Errorf("storedVersions %v", got)
	}
	if _, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); found {
		t.Errorf("status not cleared: %v", u.Object["status"])
	}
	if u.GetGeneration() != 1 {
		t.Errorf("generation %d", u.GetGeneration())
	}

	upd := obj(t, validCRD)
	upd.Object["status"] = map[string]any{"storedVersions": []any{"v9"}}
	prepare(t, r, upd, u)
	if !reflect.DeepEqual(upd.Object["status"], u.Object["status"]) {
		t.Errorf("update changed status: %v", upd.Object["status"])
	}
}

func TestEventConversion(t *testing.T) {
	r := resource(t, "events.k8s.io", "v1", "events")
	v1 := obj(t, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e","namespace":"d"},
	  "eventTime":"2024-01-01T00:00:00.000001Z","series":{"count":2,"lastObservedTime":"2024-01-01T00:01:00.000000Z"},
	  "reportingController":"example.com/c","reportingInstance":"c-1","action":"A","reason":"R",
	  "regarding":{"kind":"Pod","name":"p","namespace":"d"},"related":{"kind":"Node","name":"n"},
	  "note":"hello","type":"Warning","deprecatedSource":{"component":"kubelet","host":"h"},
	  "deprecatedFirstTimestamp":"2023-01-01T00:00:00Z","deprecatedLastTimestamp":"2023-01-02T00:00:00Z","deprecatedCount":7}`)
	if _, err := r.Behavior.Normalize(v1); err != nil {
		t.Fatal(err)
	}
	original := v1.DeepCopy()

	if err := r.Conversion.ToStorage(v1); err != nil {
		t.Fatal(err)
	}
	checks := map[string]any{
		"apiVersion":          "v1",
		"message":             "hello",
		"involvedObject.name": "p",
		"source.component":    "kubelet",
		"source.host":         "h",
		"count":               int64(7),
		"firstTimestamp":      "2023-01-01T00:00:00Z",
		"lastTimestamp":       "2023-01-02T00:00:00Z",
		"reportingComponent":  "example.com/c",
		"reportingInstance":   "c-1",
		"related.kind":        "Node",
		"series.count":        int64(2),
		"eventTime":           "2024-01-01T00:00:00.000001Z",
		"action":              "A",
		"reason":              "R",
		"type":                "Warning",
		"note":                nil,
		"regarding":           nil,
		"deprecatedCount":     nil,
	}
	for path, want := range checks {
		got, _, _ := unstructured.NestedFieldNoCopy(v1.Object, strings.Split(path, ".")...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("core %s = %#v, want %#v", path, got, want)
		}
	}
	core := v1.DeepCopy()

	if err := r.Conversion.FromStorage(v1); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v1.Object, original.Object) {
		t.Errorf("events.k8s.io round trip:\n got %v\nwant %v", v1.Object, original.Object)
	}
	// And the other way: core -> events.k8s.io -> core.
	if err := r.Conversion.ToStorage(v1); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v1.Object, core.Object) {
		t.Errorf("core round trip:\n got %v\nwant %v", v1.Object, core.Object)
	}
}

func TestSelectableFields(t *testing.T) {
	tests := []struct {
		res  *catalog.Resource
		obj  string
		want fields.Set
	}{
		{resource(t, "", "v1", "secrets"), `{"metadata":{"name":"s"},"type":"kubernetes.io/tls"}`,
			fields.Set{"type": "kubernetes.io/tls"}},
		{resource(t, "", "v1", "events"), `{"metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"reportingComponent":"c","reason":"R"}`,
			fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": "p", "involvedObject.namespace": "",
				"involvedObject.uid": "", "involvedObject.apiVersion": "", "involvedObject.resourceVersion": "",
				"involvedObject.fieldPath": "", "reason": "R", "reportingComponent": "c", "source": "c", "type": ""}},
		{resource(t, "events.k8s.io", "v1", "events"), `{"metadata":{"name":"e"},"regarding":{"name":"p"},"reportingController":"c","deprecatedSource":{"component":"k"}}`,
			fields.Set{"regarding.kind": "", "regarding.name": "p", "regarding.namespace": "",
				"regarding.uid": "", "regarding.apiVersion": "", "regarding.resourceVersion": "",
				"regarding.fieldPath": "", "reason": "", "reportingController": "c", "source": "k", "type": ""}},
	}
	for _, tc := range tests {
		if got := tc.res.Behavior.SelectableFields(obj(t, tc.obj)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.res.GroupVersionResource(), got, tc.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name    string
		res     *catalog.Resource
		in      string
		unknown []string
		wantErr bool
	}{
		{name: "configmap unknown fields", res: resource(t, "", "v1", "configmaps"),
			in:      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","colour":"red"},"data":{"a":"b"},"spec":{"x":1}}`,
			unknown: []string{`unknown field "metadata.colour"`, `unknown field "spec"`}},
		{name: "event unknown nested", res: resource(t, "events.k8s.io", "v1", "events"),
			in:      `{"metadata":{"name":"e"},"regarding":{"name":"p","bogus":true},"message":"core field name"}`,
			unknown: []string{`unknown field "message"`, `unknown field "regarding.bogus"`}},
		{name: "wrong value type", res: resource(t, "", "v1", "secrets"),
			in: `{"metadata":{"name":"s"},"type":7}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := obj(t, tc.in)
			unknown, err := tc.res.Behavior.Normalize(u)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			slices.Sort(unknown)
			if !reflect.DeepEqual(unknown, tc.unknown) {
				t.Errorf("unknown = %v, want %v", unknown, tc.unknown)
			}
			for _, msg := range tc.unknown {
				path := strings.Trim(strings.TrimPrefix(msg, "unknown field "), `"`)
				if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...); found {
					t.Errorf("%s not dropped: %v", path, u.Object)
				}
			}
		})
	}
}
