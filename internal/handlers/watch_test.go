package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWatch(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("before", nil)})
	rv := nested(f.must(200, call{method: "GET", path: configMaps}), "metadata.resourceVersion")

	// The rows run in order: the legacy path replays what the first row wrote.
	tests := []struct {
		name   string
		path   string
		writes func(t *testing.T)
		events []string // "TYPE name data.k"
	}{
		{name: "from the list's resourceVersion", path: configMaps + "?watch=1&timeoutSeconds=1&resourceVersion=" + rv,
			writes: func(t *testing.T) {
				f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("w", map[string]string{"k": "1"})})
				f.must(200, call{method: "PATCH", path: configMaps + "/w", body: `{"data":{"k":"2"}}`, headers: []string{mergePatch}})
				f.must(200, call{method: "DELETE", path: configMaps + "/w"})
			},
			events: []string{"ADDED w 1", "MODIFIED w 2", "DELETED w 2"}},
		{name: "legacy watch path", path: "/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=1&resourceVersion=" + rv,
			events: []string{"ADDED w 1", "MODIFIED w 2", "DELETED w 2"}},
		{name: "without a resourceVersion, current objects first", path: configMaps + "?watch=true&timeoutSeconds=1",
			events: []string{"ADDED before "}},
		{name: "legacy watch path of one object: only its events", path: "/api/v1/watch/namespaces/default/configmaps/before?timeoutSeconds=1&resourceVersion=" + rv,
			events: []string{}},
		{name: "legacy watch path of one object, from its state", path: "/api/v1/watch/namespaces/default/configmaps/w?timeoutSeconds=1&resourceVersion=" + rv,
			events: []string{"ADDED w 1", "MODIFIED w 2", "DELETED w 2"}},
		{name: "timeoutSeconds ends an idle stream", path: configMaps + "?watch=1&timeoutSeconds=1&resourceVersion=" + rv + "&fieldSelector=metadata.name%3Dnone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := call{method: "GET", path: tt.path}.request(t, f.url).WithContext(ctx)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("watch answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if tt.writes != nil {
				tt.writes(t)
			}
			// Each event is one JSON object on its own line.
			got := []string{}
			lines := bufio.NewScanner(resp.Body)
			for lines.Scan() {
				var ev struct {
					Type   string         `json:"type"`
					Object map[string]any `json:"object"`
				}
				if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
					t.Fatalf("event line is not JSON: %v: %s", err, lines.Bytes())
				}
				if ev.Object["kind"] != "ConfigMap" || ev.Object["apiVersion"] != "v1" {
					t.Errorf("event object: %v", ev.Object)
				}
				got = append(got, ev.Type+" "+nested(ev.Object, "metadata.name")+" "+nested(ev.Object, "data.k"))
			}
			if err := lines.Err(); err != nil {
				t.Fatalf("stream did not end cleanly after %v: %v (events %v)", time.Since(start), err, got)
			}
			if !slices.Equal(got, tt.events) {
				t.Errorf("events %q, want %q", got, tt.events)
			}
			if elapsed := time.Since(start); elapsed < 900*time.Millisecond || elapsed > 5*time.Second {
				t.Errorf("stream ended after %v, want about timeoutSeconds=1", elapsed)
			}
		})
	}
}

func TestWatchErrors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		path string
		want want
	}{
		{"unknown field selector", configMaps + "?watch=1&fieldSelector=x%3Dy", want{code: 400, reason: metav1.StatusReasonBadRequest}},
		{"bad label selector", configMaps + "?watch=1&labelSelector=a%20in%20(", want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "unable to parse requirement"}},
		{"unknown resource", "/api/v1/namespaces/default/widgets?watch=1", want{code: 404, reason: metav1.StatusReasonNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.check(t, f.do(call{method: "GET", path: tt.path}))
		})
	}
}
