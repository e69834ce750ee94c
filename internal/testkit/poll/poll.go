package poll

import (
	"testing"
	"time"
)

// Interval is how long Until sleeps between two asks.
const Interval = 50 * time.Millisecond

// Until calls cond until it reports true or timeout passes, and returns its last answer: whether
// it held, and what it said of what it saw.
func Until(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok || time.Now().After(deadline) {
			return ok, last
		}
		time.Sleep(Interval)
	}
}

// Eventually fails t (Fatalf) unless cond holds within timeout, saying what was awaited and
// the condition's last explanation.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, last := Until(timeout, cond); !ok {
		t.Fatalf("%s: not true after %v; last seen: %s", what, timeout, last)
	}
}
