package watchcache

import (
	"testing"

	"github.com/lapis-dev/lapis/internal/storage"
)

// The history keeps at most historySize events and its budget's bytes of objects, dropping the
// oldest first; the oldest revision a watch may resume after follows what was dropped.
func TestHistoryBounds(t *testing.T) {
	const historyBytes = DefaultHistoryBytes
	event := func(rev int64, size int) *Event {
		return &Event{Revision: rev, Object: &Entry{KeyValue: storage.KeyValue{Key: "k", Value: make([]byte, size)}}}
	}
	tests := []struct {
		name       string
		sizes      []int
		wantKept   int
		wantOldest int64 // revisions are 1, 2, ...
	}{
		{"small events: all kept", []int{10, 10, 10}, 3, 0},
		{"more than historySize events", repeat(historySize+5, 10), historySize, 5},
		{"big events: bytes bound", repeat(10, historyBytes/4), 4, 6},
		{"one event larger than the bound is kept alone", []int{10, historyBytes * 2}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cache{budget: NewBudget(historyBytes)}
			for i, size := range tt.sizes {
				c.remember(event(int64(i+1), size))
			}
			if held := c.budget.held.Load(); held != int64(c.historyHeld) {
				t.Errorf("budget holds %d, the cache %d", held, c.historyHeld)
			}
			if len(c.history) != tt.wantKept || c.oldest != tt.wantOldest {
				t.Errorf("kept %d events, oldest %d; want %d, %d", len(c.history), c.oldest, tt.wantKept, tt.wantOldest)
			}
			held := 0
			for _, e := range c.history {
				held += len(e.Object.Value)
			}
			if held != c.historyHeld {
				t.Errorf("historyHeld %d, events hold %d", c.historyHeld, held)
			}
			if last := c.history[len(c.history)-1].Revision; last != int64(len(tt.sizes)) {
				t.Errorf("newest kept %d", last)
			}
		})
	}
}

// The budget is shared: a cache written heavily gives up its own oldest events when all
// caches together hold too much, and the others keep theirs.
func TestHistoryBudgetShared(t *testing.T) {
	budget := NewBudget(1000)
	quiet, busy := &Cache{budget: budget}, &Cache{budget: budget}
	event := func(rev int64, size int) *Event {
		return &Event{Revision: rev, Object: &Entry{KeyValue: storage.KeyValue{Key: "k", Value: make([]byte, size)}}}
	}
	quiet.remember(event(1, 400))
	for rev := int64(2); rev <= 10; rev++ {
		busy.remember(event(rev, 250))
	}
	if len(quiet.history) != 1 {
		t.Errorf("the quiet cache kept %d events, want its 1", len(quiet.history))
	}
	if len(busy.history) != 2 || busy.oldest != 8 {
		t.Errorf("the busy cache kept %d events (oldest %d), want 2 (oldest 8): 400+2*250 fit in 1000", len(busy.history), busy.oldest)
	}
	if got := budget.held.Load(); got != 900 {
		t.Errorf("budget holds %d, want 900", got)
	}
	busy.Compacted(10)
	if got := budget.held.Load(); got != 400 {
		t.Errorf("after compaction the budget holds %d, want 400", got)
	}
}

func repeat(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}
