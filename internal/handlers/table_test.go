package handlers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// TestCustomTableListMatchesGet checks that the rows of a custom resource's Table list (made from
// the served JSON) are the rows a GET of each object as a Table makes (from the decoded object).
func TestCustomTableListMatchesGet(t *testing.T) {
	f := newFixture(t)
	bodies := []string{
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b","labels":{"app":"web"},"annotations":{"note":"<x&y>"},
		  "finalizers":["example.com/f"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u"}]},"spec":{"size":2}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"c","labels":{"app":"db"},"annotations":{"k8s.io/initial-events-end":"true"}},"status":{"x":[1,2.5]}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"d","labels":{"app":"web"}}}`,
	}
	for _, b := range bodies {
		f.must(http.StatusCreated, call{method: "POST", path: widgetsURL, body: b})
	}
	// b is deleted with a finalizer: it keeps a deletionTimestamp.
	f.must(http.StatusOK, call{method: "DELETE", path: widgetsURL + "/b"})
	for _, version := range []string{"v1", "v1beta1"} {
		accept := "Accept: application/json;as=Table;g=meta.k8s.io;v=" + version
		for _, query := range []string{"", "?includeObject=None", "?includeObject=Metadata", "?includeObject=Object",
			"?labelSelector=app%3Dweb", "?fieldSelector=metadata.name%3Dc", "?limit=2", "?limit=2&resourceVersion=0", "?resourceVersion=0&includeObject=None"} {
			t.Run(version+query, func(t *testing.T) {
				list := tableOf(t, f.must(http.StatusOK, call{method: "GET", path: widgetsURL + query, headers: []string{accept}}))
				if meta, _ := list["metadata"].(map[string]any); meta["resourceVersion"] == "" {
					t.Errorf("no resourceVersion: %v", meta)
				}
				rows, _ := list["rows"].([]any)
				if len(rows) == 0 {
					t.Fatalf("no rows: %v", list)
				}
				for _, row := range rows {
					cells := row.(map[string]any)["cells"].([]any)
					get := tableOf(t, f.must(http.StatusOK, call{method: "GET", path: widgetsURL + "/" + fmt.Sprint(cells[0]) + query, headers: []string{accept}}))
					if !reflect.DeepEqual(list["columnDefinitions"], get["columnDefinitions"]) {
						t.Errorf("columns differ: %v, %v", list["columnDefinitions"], get["columnDefinitions"])
					}
					if want := get["rows"].([]any)[0]; !reflect.DeepEqual(row, want) {
						t.Errorf("row of %v differs:\nlist: %v\nget:  %v", cells[0], row, want)
					}
				}
			})
		}
	}
}

func tableOf(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	if obj["kind"] != "Table" {
		b, _ := json.Marshal(obj)
		t.Fatalf("not a Table: %s", b)
	}
	return obj
}

// TestCustomTableWatch checks a watch list of a custom resource as Tables: each initial object
// is the Table a GET of it gives (column definitions on the first only, the object's
// resourceVersion as the Table's), then an initial-events-end bookmark keeps its metadata.
func TestCustomTableWatch(t *testing.T) {
	f := newFixture(t)
	for _, b := range []string{
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","annotations":{"n":"1"}}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b","labels":{"app":"web"}},"spec":{"x":1}}`,
	} {
		f.must(http.StatusCreated, call{method: "POST", path: widgetsURL, body: b})
	}
	accept := "Accept: application/json;as=Table;g=meta.k8s.io;v=v1"
	for _, include := range []string{"", "None", "Metadata", "Object"} {
		t.Run(include, func(t *testing.T) {
			query := "?includeObject=" + include
			resp := f.do(call{method: "GET", headers: []string{accept},
				path: widgetsURL + query + "&watch=true&timeoutSeconds=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"})
			if resp.code != http.StatusOK {
				t.Fatalf("watch answered %d: %s", resp.code, resp.body)
			}
			lines := bytes.Split(bytes.TrimSpace(resp.body), []byte("\n"))
			// Without a watch cache (as here) the stream may end before the bookmark.
			if len(lines) < 2 || len(lines) > 3 {
				t.Fatalf("%d events, want 2 or 3:\n%s", len(lines), resp.body)
			}
			for i, line := range lines {
				var ev struct {
					Type   string         `json:"type"`
					Object map[string]any `json:"object"`
				}
				if err := json.Unmarshal(line, &ev); err != nil {
					t.Fatal(err)
				}
				table := tableOf(t, ev.Object)
				row := table["rows"].([]any)[0].(map[string]any)
				if i == 2 {
					meta := row["object"].(map[string]any)["metadata"].(map[string]any)
					if ev.Type != "BOOKMARK" || meta["annotations"].(map[string]any)["k8s.io/initial-events-end"] != "true" {
						t.Errorf("last event: %s", line)
					}
					continue
				}
				name := fmt.Sprint(row["cells"].([]any)[0])
				get := tableOf(t, f.must(http.StatusOK, call{method: "GET", path: widgetsURL + "/" + name + query, headers: []string{accept}}))
				if i > 0 {
					get["columnDefinitions"] = nil
				}
				if ev.Type != "ADDED" || !reflect.DeepEqual(table, get) {
					t.Errorf("event %d (%s):\n%s\nGET gave:\n%v", i, ev.Type, line, get)
				}
			}
		})
	}
}
