package storage

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// History is bounded in bytes as well as in time: a period ends once half the byte bound has
// been written, and each period's end compacts away what came before the previous one began.
func TestCompactionByBytes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	backend, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	s := NewStore(backend.Client)
	compacted := make(chan int64, 10)
	policy := CompactionPolicy{Interval: time.Hour, HistoryBytes: 1 << 20}
	go s.RunCompactor(ctx, policy, slog.New(slog.NewTextHandler(io.Discard, nil)), func(rev int64) { compacted <- rev })

	value := []byte(strings.Repeat("v", 200<<10))
	write := func(batch int) int64 {
		var rev int64
		for i := range 3 { // 600 KiB: past half the bound
			if rev, err = s.Create(ctx, fmt.Sprintf("/k/%d/%d", batch, i), value); err != nil {
				t.Fatal(err)
			}
		}
		return rev
	}
	write(0)
	// The first period ends; nothing before it to compact yet.
	select {
	case rev := <-compacted:
		t.Fatalf("compacted at %d after one period", rev)
	case <-time.After(4 * compactorPoll):
	}
	mark, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(1)
	select {
	case rev := <-compacted:
		if rev != mark {
			t.Errorf("compacted at %d, want the second period's start %d", rev, mark)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no compaction after two periods' worth of bytes")
	}
	if _, _, err := s.Get(ctx, "/k/0/0", mark-1); err == nil {
		t.Errorf("revision %d still readable after compaction at %d", mark-1, mark)
	}
}

// Compaction turns are kube-apiserver's: whoever moves compact_rev_key's version first in a
// period compacts; the others see they lost and adopt the new version for the next period.
func TestCompactionTurnsAreSharedThroughCompactRevKey(t *testing.T) {
	ctx := context.Background()
	backend, err := OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	a, b := NewStore(backend.Client), NewStore(backend.Client)
	rev, err := a.Create(ctx, "/k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	version, _, won, err := a.claimCompaction(ctx, 0, rev)
	if err != nil || !won || version != 1 {
		t.Fatalf("first claim: version %d, won %v, %v; want version 1, won", version, won, err)
	}
	// b still believes the version is 0: this period's turn is taken.
	version, _, won, err = b.claimCompaction(ctx, 0, rev)
	if err != nil || won || version != 1 {
		t.Fatalf("second claim in the same period: version %d, won %v, %v; want version 1, lost", version, won, err)
	}
	// Next period, b holds the current version and takes the turn.
	if _, _, won, err = b.claimCompaction(ctx, version, rev); err != nil || !won {
		t.Fatalf("b's claim in the next period: won %v, %v", won, err)
	}
	kv, err := backend.Client.Get(ctx, compactRevKey)
	if err != nil || len(kv.Kvs) != 1 || string(kv.Kvs[0].Value) != fmt.Sprint(rev) || kv.Kvs[0].Version != 2 {
		t.Errorf("compact_rev_key = %v, %v; want %d at version 2, as kube-apiserver writes it", kv.Kvs, err, rev)
	}
}
