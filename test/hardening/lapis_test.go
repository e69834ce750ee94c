package hardening

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

var lapisBin string // the binary TestMain built, or $LAPIS_HARDENING_BIN / $LAPIS_BIN

func TestMain(m *testing.M) {
	os.Exit(lapisproc.Main(context.Background(), func(bin string) int {
		lapisBin = bin
		return m.Run()
	}, "LAPIS_HARDENING_BIN"))
}

// startLapis starts lapis on a fresh data directory and waits until it is ready (/readyz). It
// is stopped when the test ends; the last 20 KB of its log are printed if the test failed.
func startLapis(t testing.TB, flags ...string) *lapisproc.Proc {
	t.Helper()
	return lapisproc.StartTest(t, lapisproc.Options{Bin: lapisBin, DataDir: t.TempDir(), WaitReady: true, LogTail: 20 << 10, Flags: flags})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
}
