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
