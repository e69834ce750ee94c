package builtin

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// column is the part of a column definition kubectl's output depends on.
type column struct {
	Name     string
	Type     string
	Format   string
	Priority int32
}

var (
	eventTableColumns = []column{
		{"Last Seen", "string", "", 0},
		{"Type", "string", "", 0},
		{"Reason", "string", "", 0},
		{"Object", "string", "", 0},
		{"Subobject", "string", "", 1},
		{"Source", "string", "", 1},
		{"Message", "string", "", 0},
		{"First Seen", "string", "", 1},
		{"Count", "string", "", 1},
		{"Name", "string", "name", 1},
	}
	crdTableColumns = []column{
		{"Name", "string", "name", 0},
		{"Scope", "string", "", 0},
		{"Versions", "string", "", 0},
		{"Created At", "date", "", 0},
		{"Group", "string", "", 1},
		{"Kind", "string", "", 1},
		{"ShortNames", "string", "", 1},
		{"Established", "boolean", "", 1},
	}
)

func TestPrinters(t *testing.T) {
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })

	tests := []struct {
		name                string
		group, version, res string
		object              string
		columns             []column
		cells               []any
	}{
		{
			name: "namespace", version: "v1", res: "namespaces",
			object: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a","creationTimestamp":"2025-12-29T12:00:00Z"},
				"status":{"phase":"Terminating"}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Status", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"team-a", "Terminating", "3d"},
		},
		{
			name: "namespace without creation time", version: "v1", res: "namespaces",
			object:  `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"new"}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Status", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"new", "", "<unknown>"},
		},
		{
			name: "configmap counts data and binaryData", version: "v1", res: "configmaps",
			object: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"default","creationTimestamp":"2026-01-01T11:59:15Z"},
				"data":{"a":"1","b":"2"},"binaryData":{"c":"AA=="}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Data", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"cfg", int64(3), "45s"},
		},
		{
			name: "empty configmap", version: "v1", res: "configmaps",
			object:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"empty","namespace":"default","creationTimestamp":"2026-01-01T09:30:00Z"}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Data", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"empty", int64(0), "150m"},
		},
		{
			name: "secret", version: "v1", res: "secrets",
			object: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls","namespace":"default","creationTimestamp":"2026-01-01T06:30:00Z"},
				"type":"kubernetes.io/tls","data":{"tls.crt":"YQ==","tls.key":"Yg=="}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Type", "string", "", 0}, {"Data", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"tls", "kubernetes.io/tls", int64(2), "5h30m"},
		},
		{
			name: "secret with stringData not yet folded in", version: "v1", res: "secrets",
			object: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default","creationTimestamp":"2025-01-01T12:00:00Z"},
				"type":"Opaque","data":{"a":"YQ=="},"stringData":{"a":"x","b":"y"}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Type", "string", "", 0}, {"Data", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"s", "Opaque", int64(2), "365d"},
		},
		{
			name: "serviceaccount", version: "v1", res: "serviceaccounts",
			object: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"builder","namespace":"ci","creationTimestamp":"2025-12-31T12:00:00Z"},
				"secrets":[{"name":"builder-token"}]}`,
			columns: []column{{"Name", "string", "name", 0}, {"Secrets", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"builder", int64(1), "24h"},
		},
		{
			name: "serviceaccount without secrets", version: "v1", res: "serviceaccounts",
			object:  `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default","namespace":"ci","creationTimestamp":"2026-01-01T11:52:30Z"}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Secrets", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"default", int64(0), "7m30s"},
		},
		{
			name: "lease", group: "coordination.k8s.io", version: "v1", res: "leases",
			object: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"kube-scheduler","namespace":"kube-system","creationTimestamp":"2025-12-30T00:00:00Z"},
				"spec":{"holderIdentity":"node-1_abc","leaseDurationSeconds":15}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Holder", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"kube-scheduler", "node-1_abc", "2d12h"},
		},
		{
			name: "lease without holder", group: "coordination.k8s.io", version: "v1", res: "leases",
			object:  `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"free","namespace":"default","creationTimestamp":"2026-01-01T11:59:59Z"},"spec":{}}`,
			columns: []column{{"Name", "string", "name", 0}, {"Holder", "string", "", 0}, {"Age", "string", "", 0}},
			cells:   []any{"free", "", "1s"},
		},
		{
			name: "core event with count, timestamps and source", version: "v1", res: "events",
			object: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"web-0.17a","namespace":"default","creationTimestamp":"2026-01-01T11:00:00Z"},
				"involvedObject":{"kind":"Pod","name":"web-0","namespace":"default","fieldPath":"spec.containers{web}"},
				"reason":"BackOff","message":"  Back-off restarting failed container\n","type":"Warning",
				"source":{"component":"kubelet","host":"node-1"},
				"firstTimestamp":"2026-01-01T11:00:00Z","lastTimestamp":"2026-01-01T11:55:00Z","count":7}`,
			columns: eventTableColumns,
			cells: []any{"5m", "Warning", "BackOff", "pod/web-0", "spec.containers{web}", "kubelet, node-1",
				"Back-off restarting failed container", "60m", int64(7), "web-0.17a"},
		},
		{
			name: "core event with component only", version: "v1", res: "events",
			object: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"n.1","namespace":"default"},
				"involvedObject":{"kind":"Node","name":"node-1"},"reason":"Starting","message":"Starting kubelet.","type":"Normal",
				"source":{"component":"kubelet"},"firstTimestamp":"2026-01-01T10:00:00Z","lastTimestamp":"2026-01-01T10:00:00Z","count":1}`,
			columns: eventTableColumns,
			cells:   []any{"120m", "Normal", "Starting", "node/node-1", "", "kubelet", "Starting kubelet.", "120m", int64(1), "n.1"},
		},
		{
			name: "core event with eventTime only, no series, no named object", version: "v1", res: "events",
			object: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e.2","namespace":"default"},
				"involvedObject":{"kind":"ClusterThing"},"reason":"Synced","message":"ok","type":"Normal",
				"eventTime":"2026-01-01T11:58:00.000000Z","action":"Sync","reportingComponent":"thing-controller","reportingInstance":"thing-controller-7d9"}`,
			columns: eventTableColumns,
			cells:   []any{"2m", "Normal", "Synced", "clusterthing", "", "thing-controller, thing-controller-7d9", "ok", "2m", int64(1), "e.2"},
		},
		{
			name: "core event without any timestamp", version: "v1", res: "events",
			object: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e.3","namespace":"default"},
				"involvedObject":{"kind":"Pod","name":"p"},"reason":"R","message":"m","type":"Normal"}`,
			columns: eventTableColumns,
			cells:   []any{"<unknown>", "Normal", "R", "pod/p", "", "", "m", "<unknown>", int64(1), "e.3"},
		},
		// First Seen is 39m59.88s ago: HumanDuration truncates, as kube shows it.
		{
			name: "events.k8s.io event with eventTime and series only", group: "events.k8s.io", version: "v1", res: "events",
			object: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"web.18b","namespace":"default","creationTimestamp":"2026-01-01T11:00:00Z"},
				"eventTime":"2026-01-01T11:20:00.123456Z","series":{"count":4,"lastObservedTime":"2026-01-01T11:57:30.000000Z"},
				"reportingController":"example.com/scaler","reportingInstance":"scaler-0","action":"Scale","reason":"Scaled",
				"regarding":{"kind":"Deployment","name":"web","namespace":"default"},"note":"Scaled up to 3 ","type":"Normal"}`,
			columns: eventTableColumns,
			cells:   []any{"2m30s", "Normal", "Scaled", "deployment/web", "", "example.com/scaler, scaler-0", "Scaled up to 3", "39m", int64(4), "web.18b"},
		},
		{
			name: "events.k8s.io event with deprecated fields", group: "events.k8s.io", version: "v1", res: "events",
			object: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"old.1","namespace":"default"},
				"regarding":{"kind":"Pod","name":"p","fieldPath":"spec.containers{c}"},"reason":"Pulled","note":"pulled","type":"Normal",
				"deprecatedSource":{"component":"kubelet","host":"node-2"},"deprecatedFirstTimestamp":"2026-01-01T09:00:00Z",
				"deprecatedLastTimestamp":"2026-01-01T11:00:00Z","deprecatedCount":2}`,
			columns: eventTableColumns,
			cells:   []any{"60m", "Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, node-2", "pulled", "3h", int64(2), "old.1"},
		},
		{
			name: "customresourcedefinition", group: "apiextensions.k8s.io", version: "v1", res: "customresourcedefinitions",
			object: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
				"metadata":{"name":"widgets.example.com","creationTimestamp":"2025-05-03T16:36:32Z"},
				"spec":{"group":"example.com","scope":"Namespaced",
					"names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList","shortNames":["wd","wdg"]},
					"versions":[{"name":"v2alpha1","served":false,"storage":false},{"name":"v1beta1","served":true,"storage":false},{"name":"v1","served":true,"storage":true}]},
				"status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True"}]}}`,
			columns: crdTableColumns,
			cells:   []any{"widgets.example.com", "Namespaced", "v1(storage),v1beta1", "2025-05-03T16:36:32Z", "example.com", "Widget", "wd,wdg", true},
		},
		{
			name: "customresourcedefinition not established", group: "apiextensions.k8s.io", version: "v1", res: "customresourcedefinitions",
			object: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.com"},
				"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"gadgets","kind":"Gadget"},
					"versions":[{"name":"v1","served":true,"storage":true}]},
				"status":{"conditions":[{"type":"Established","status":"False"}]}}`,
			columns: crdTableColumns,
			cells:   []any{"gadgets.example.com", "Cluster", "v1(storage)", "0001-01-01T00:00:00Z", "example.com", "Gadget", "", false},
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resource(t, tc.group, tc.version, tc.res)
			if r.Printer == nil {
				t.Fatalf("%s has no printer", r.Name)
			}
			var got []column
			for _, c := range r.Printer.Columns {
				if c.Description == "" {
					t.Errorf("column %q has no description", c.Name)
				}
				got = append(got, column{c.Name, c.Type, c.Format, c.Priority})
			}
			if !reflect.DeepEqual(got, tc.columns) {
				t.Errorf("columns:\n got %v\nwant %v", got, tc.columns)
			}
			u := obj(t, tc.object)
			before := u.DeepCopy()
			cells, err := r.Printer.Cells(u)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cells, tc.cells) {
				t.Errorf("cells:\n got %#v\nwant %#v", cells, tc.cells)
			}
			if len(cells) != len(r.Printer.Columns) {
				t.Errorf("%d cells for %d columns", len(cells), len(r.Printer.Columns))
			}
			if !reflect.DeepEqual(u, before) {
				t.Errorf("printing changed the object")
			}
		})
	}
}

// Every built-in resource has a printer whose first Name column is kube's.
func TestEveryResourceHasPrinter(t *testing.T) {
	for _, r := range Resources() {
		if r.Printer == nil {
			t.Errorf("%v has no printer", r.GroupVersionResource())
			continue
		}
		names := 0
		for _, c := range r.Printer.Columns {
			if c.Name == "Name" {
				names++
				if c.Format != "name" || c.Type != "string" {
					t.Errorf("%v: Name column %+v", r.GroupVersionResource(), c)
				}
			}
		}
		if names != 1 {
			t.Errorf("%v: %d Name columns", r.GroupVersionResource(), names)
		}
	}
}

// An events.k8s.io/v1 event prints as the core/v1 event it is stored as.
func TestEventPrintersAgree(t *testing.T) {
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })

	core := resource(t, "", "v1", "events")
	v1 := resource(t, "events.k8s.io", "v1", "events")
	stored := obj(t, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x.1","namespace":"default"},
		"involvedObject":{"kind":"Pod","name":"p","fieldPath":"spec.containers{c}"},"reason":"Pulled","message":"pulled","type":"Normal",
		"source":{"component":"kubelet","host":"node-2"},"firstTimestamp":"2026-01-01T09:00:00Z","lastTimestamp":"2026-01-01T11:00:00Z","count":2,
		"eventTime":"2026-01-01T09:00:00.000000Z","series":{"count":5,"lastObservedTime":"2026-01-01T11:30:00.000000Z"},
		"reportingComponent":"kubelet","reportingInstance":"node-2"}`)
	want, err := core.Printer.Cells(stored)
	if err != nil {
		t.Fatal(err)
	}
	served := stored.DeepCopy()
	if err := v1.Conversion.FromStorage(served); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*unstructured.Unstructured{served, stored} {
		got, err := v1.Printer.Cells(u)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", u.GetAPIVersion(), got, want)
		}
	}
	wantCells := []any{"30m", "Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, node-2", "pulled", "3h", int64(5), "x.1"}
	if !reflect.DeepEqual(want, wantCells) {
		t.Errorf("got %#v, want %#v", want, wantCells)
	}
}
