package watchcache

import (
	"testing"

	"github.com/lapis-dev/lapis/internal/storage"
)

// The history keeps at most historySize events and historyBytes of objects, dropping the
// oldest first; the oldest revision a watch may resume after follows what was dropped.
func TestHistoryBounds(t *testing.T) {
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
			c := &Cache{}
			for i, size := range tt.sizes {
				c.remember(event(int64(i+1), size))
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

func repeat(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}
