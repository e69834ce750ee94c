package openapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// TestServedUnzipped: documents are kept gzipped but served as JSON, as kube-apiserver 1.37
// serves /openapi/v3/api/v1 (no Content-Encoding whatever the client accepts, one ETag).
func TestServedUnzipped(t *testing.T) {
	_, _, srv := newServer(t)
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1"} {
		plain := get(t, srv.URL+path, "application/json", "Accept-Encoding", "identity")
		plainBody := readAll(t, plain)
		asked := get(t, srv.URL+path, "application/json", "Accept-Encoding", "gzip")
		if ce := asked.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s with gzip accepted: Content-Encoding %q, want none (as kube)", path, ce)
		}
		body := readAll(t, asked)
		if !bytes.Equal(body, plainBody) || !json.Valid(body) {
			t.Errorf("%s: %d bytes with gzip accepted, %d without, or not JSON", path, len(body), len(plainBody))
		}
		if a, b := plain.Header.Get("Etag"), asked.Header.Get("Etag"); a == "" || a != b {
			t.Errorf("%s: ETag %q and %q", path, a, b)
		}
		notModified := get(t, srv.URL+path, "application/json", "If-None-Match", plain.Header.Get("Etag"))
		if notModified.StatusCode != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d, want 304", path, notModified.StatusCode)
		}
	}
}

// TestDefinitionsDropped: prepared definitions are dropped once unused for a while and prepared
// again, the same, when next needed.
func TestDefinitionsDropped(t *testing.T) {
	m := &defsMemo{f: v3, keep: 100 * time.Millisecond}
	first := m.get()
	if !m.loaded() {
		t.Fatal("definitions not held right after use")
	}
	for range 80 { // 400 ms of use, four times keep
		m.get()
		time.Sleep(5 * time.Millisecond)
		if !m.loaded() {
			t.Fatal("definitions dropped while in use")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for m.loaded() {
		if time.Now().After(deadline) {
			t.Fatal("definitions still held 5 s after their last use")
		}
		time.Sleep(10 * time.Millisecond)
	}
	again := m.get()
	if !reflect.DeepEqual(first, again) {
		t.Error("definitions prepared again differ")
	}
}
