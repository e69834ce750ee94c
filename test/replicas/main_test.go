package replicas

import (
	"context"
	"os"
	"testing"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

// lapisBin is the binary under test (lapisproc.Build).
var lapisBin string

func TestMain(m *testing.M) {
	os.Exit(lapisproc.Main(context.Background(), func(bin string) int {
		lapisBin = bin
		return m.Run()
	}))
}
