package handlers

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
)

// socketWrites counts the writes to the sockets under a listener's connections (below TLS).
type socketWrites struct {
	net.Listener
	n *atomic.Int64
}

func (l socketWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countedConn{c, l.n}, err
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// TestLargeBodySocketWrites: a large body, a list's or one object's, reaches a client-go-like
// HTTP/2 client (16 KiB frames) in one TLS record and one socket write per frame. Written
// 16 KiB or more at a time it took two of each per frame.
func TestLargeBodySocketWrites(t *testing.T) {
	const size = 1 << 20
	whole := bytes.Repeat([]byte("x"), size)
	list := &parts{}
	for piece := range slices.Chunk(whole, 10_000) {
		list.add(piece)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/list" {
			sendParts(w, r, http.StatusOK, "application/json", list)
			return
		}
		send(w, r, http.StatusOK, "application/json", whole)
	}))
	writes := &atomic.Int64{}
	srv.Listener = socketWrites{srv.Listener, writes}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	transport := client.Transport.(*http.Transport)
	transport.HTTP2 = &http.HTTP2Config{MaxReadFrameSize: 16 << 10} // as client-go's transport
	get := func(path string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil || resp.ProtoMajor != 2 || !bytes.Equal(got, whole) {
			t.Fatalf("GET %s: %s, %d bytes, %v; want HTTP/2 and the %d bytes sent", path, resp.Proto, len(got), err, size)
		}
	}
	get("/object") // TLS starts with small records: past them
	for _, path := range []string{"/list", "/object"} {
		before := writes.Load()
		get(path)
		frames := int64(size/frameChunk + 1)
		if n := writes.Load() - before; n > frames+4 {
			t.Errorf("GET %s: %d socket writes for %d bytes, want about one per %d-byte frame (%d)", path, n, size, frameChunk, frames)
		}
	}
}
