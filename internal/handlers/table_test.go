package handlers_test

import (
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
