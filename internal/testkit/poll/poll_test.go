package poll

import (
	"fmt"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		name     string
		holdsAt  int // the ask at which cond first holds; 0: never
		timeout  time.Duration
		wantOK   bool
		wantLast string
	}{
		{"holds at once", 1, time.Second, true, "ask 1"},
		{"holds after a few asks", 3, time.Second, true, "ask 3"},
		{"never holds", 0, 3 * Interval, false, "ask 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asks := 0
			ok, last := Until(tc.timeout, func() (bool, string) {
				asks++
				return asks == tc.holdsAt, fmt.Sprintf("ask %d", asks)
			})
			if ok != tc.wantOK || (tc.wantOK && last != tc.wantLast) {
				t.Errorf("Until = %v, %q; want %v, %q", ok, last, tc.wantOK, tc.wantLast)
			}
			if !ok && asks < 3 {
				t.Errorf("gave up after %d asks within %v", asks, tc.timeout)
			}
		})
	}
}
