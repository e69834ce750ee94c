package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// backends runs a test against the embedded etcd and against a separately started etcd
// (the etcd binary when installed, else a second embedded etcd reached over the network).
func backends(t *testing.T) map[string]*Store {
	t.Helper()
	ctx := context.Background()
	embedded, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embedded.Close() })
	external, err := OpenExternal(ctx, []string{startSeparateEtcd(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { external.Close() })
	return map[string]*Store{"embedded": NewStore(embedded.Client), "external": NewStore(external.Client)}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startSeparateEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		// No etcd binary: a second embedded etcd, used only through its client URL.
		url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		b, err := OpenEmbedded(context.Background(), t.TempDir(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		t.Log("etcd binary not found; using a separately started embedded etcd at", url)
		return url
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	dir := t.TempDir()
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer)
	logf, _ := os.Create(filepath.Join(dir, "etcd.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return client
}

func TestStore(t *testing.T) {
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("create get update delete", func(t *testing.T) { testCRUD(t, s) })
			t.Run("list pages at one revision", func(t *testing.T) { testList(t, s) })
			t.Run("watch after revision", func(t *testing.T) { testWatch(t, s) })
			t.Run("compaction", func(t *testing.T) { testCompaction(t, s) })
		})
	}
}

func testCRUD(t *testing.T, s *Store) {
	ctx := context.Background()
	rev, err := s.Create(ctx, "/crud/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/crud/a", []byte("2")); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	kv, _, err := s.Get(ctx, "/crud/a", 0)
	if err != nil || string(kv.Value) != "1" || kv.ModRevision != rev {
		t.Fatalf("get: %+v %v", kv, err)
	}
	rev2, _, err := s.Update(ctx, "/crud/a", []byte("3"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update: %d %v", rev2, err)
	}
	if _, cur, err := s.Update(ctx, "/crud/a", []byte("4"), rev); !errors.Is(err, ErrConflict) || string(cur.Value) != "3" {
		t.Fatalf("stale update: %v %+v, want ErrConflict with current value", err, cur)
	}
	if _, _, err := s.Update(ctx, "/crud/missing", []byte("4"), 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	if _, _, err := s.Delete(ctx, "/crud/a", rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale delete: %v", err)
	}
	prev, drev, err := s.Delete(ctx, "/crud/a", rev2)
	if err != nil || string(prev.Value) != "3" || drev <= rev2 {
		t.Fatalf("delete: %+v %d %v", prev, drev, err)
	}
	if _, _, err := s.Get(ctx, "/crud/a", 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	old, _, err := s.Get(ctx, "/crud/a", rev)
	if err != nil || string(old.Value) != "1" {
		t.Fatalf("get at old revision: %+v %v", old, err)
	}
}

func testList(t *testing.T, s *Store) {
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("/list/k%d", i), []byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.List(ctx, "/list/", ListOptions{Limit: 2})
	if err != nil || len(first.Items) != 2 || !first.More || first.Remaining != 3 {
		t.Fatalf("first page: %+v %v", first, err)
	}
	// A write between pages must not show up in later pages read at the first page's revision.
	if _, err := s.Create(ctx, "/list/k9", []byte("9")); err != nil {
		t.Fatal(err)
	}
	var keys []string
	after := first.Items[1].Key
	for {
		page, err := s.List(ctx, "/list/", ListOptions{Limit: 2, Revision: first.Revision, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range page.Items {
			keys = append(keys, kv.Key)
			after = kv.Key
		}
		if !page.More {
			break
		}
	}
	if fmt.Sprint(keys) != "[/list/k2 /list/k3 /list/k4]" {
		t.Fatalf("later pages: %v", keys)
	}
	latest, _ := s.List(ctx, "/list/", ListOptions{})
	if len(latest.Items) != 6 {
		t.Fatalf("latest list has %d items", len(latest.Items))
	}
}

func testWatch(t *testing.T, s *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, _ := s.Create(ctx, "/watch/a", []byte("1"))
	events, _ := s.Watch(ctx, "/watch/", rev)
	rev2, _, _ := s.Update(ctx, "/watch/a", []byte("2"), rev)
	s.Delete(ctx, "/watch/a", rev2)
	var got []string
	for len(got) < 2 {
		select {
		case batch := <-events:
			for _, ev := range batch.Events {
				got = append(got, fmt.Sprintf("%d:%s:%s", ev.Type, ev.KV.Value, ev.Previous.Value))
			}
		case <-ctx.Done():
			t.Fatalf("timed out; got %v", got)
		}
	}
	if fmt.Sprint(got) != "[0:2:1 1::2]" {
		t.Fatalf("events %v", got)
	}
}

func testCompaction(t *testing.T, s *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, _ := s.Create(ctx, "/compact/a", []byte("1"))
	rev2, _, _ := s.Update(ctx, "/compact/a", []byte("2"), rev)
	if err := s.Compact(ctx, rev2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "/compact/a", rev); !errors.Is(err, ErrCompacted) {
		t.Fatalf("read before compaction: %v, want ErrCompacted", err)
	}
	if _, err := s.List(ctx, "/compact/", ListOptions{Revision: rev}); !errors.Is(err, ErrCompacted) {
		t.Fatalf("list before compaction: %v, want ErrCompacted", err)
	}
	_, errc := s.Watch(ctx, "/compact/", rev-1)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrCompacted) {
			t.Fatalf("watch: %v, want ErrCompacted", err)
		}
	case <-ctx.Done():
		t.Fatal("watch from a compacted revision did not fail")
	}
}

func TestMove(t *testing.T) {
	ctx := context.Background()
	b, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s := NewStore(b.Client)
	rev, _ := s.Create(ctx, "/a", []byte("v"))
	if _, err := s.Move(ctx, "/a", "/b", []byte("v"), rev-1); !errors.Is(err, ErrConflict) {
		t.Errorf("move of a changed key: %v, want ErrConflict", err)
	}
	_, _ = s.Create(ctx, "/taken", []byte("t"))
	if _, err := s.Move(ctx, "/a", "/taken", []byte("v"), rev); !errors.Is(err, ErrExists) {
		t.Errorf("move onto a taken key: %v, want ErrExists", err)
	}
	if _, err := s.Move(ctx, "/a", "/b", []byte("v"), rev); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "/a", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("old key after move: %v, want ErrNotFound", err)
	}
	if kv, _, err := s.Get(ctx, "/b", 0); err != nil || string(kv.Value) != "v" {
		t.Errorf("new key after move: %q, %v", kv.Value, err)
	}
}
