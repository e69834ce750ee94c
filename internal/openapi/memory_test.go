package openapi

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"deflate, GZIP"}, true},
		{[]string{"br", "gzip;q=0.5"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"identity"}, false},
		{[]string{"x-gzip"}, false},
	} {
		if got := acceptsGzip(tc.values); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}

// TestGzipServed: a document is the same JSON whether the client takes it gzipped or not, with
// the same ETag, and only a client that accepts gzip gets it so.
func TestGzipServed(t *testing.T) {
	_, _, srv := newServer(t)
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1"} {
		plain := get(t, srv.URL+path, "application/json", "Accept-Encoding", "identity")
		if ce := plain.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s without gzip accepted: Content-Encoding %q", path, ce)
		}
		plainBody := readAll(t, plain)
		zipped := get(t, srv.URL+path, "application/json", "Accept-Encoding", "gzip")
		if ce := zipped.Header.Get("Content-Encoding"); ce != "gzip" {
			t.Fatalf("%s with gzip accepted: Content-Encoding %q", path, ce)
		}
		zr, err := gzip.NewReader(zipped.Body)
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(unzipped, plainBody) || len(plainBody) == 0 {
			t.Errorf("%s: gzipped body (%d bytes unzipped) differs from plain one (%d bytes)", path, len(unzipped), len(plainBody))
		}
		if a, b := plain.Header.Get("Etag"), zipped.Header.Get("Etag"); a == "" || a != b {
			t.Errorf("%s: ETag %q plain, %q gzipped", path, a, b)
		}
		notModified := get(t, srv.URL+path, "application/json", "Accept-Encoding", "gzip", "If-None-Match", zipped.Header.Get("Etag"))
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
