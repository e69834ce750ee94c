package sharedetcd

import (
	"context"
	"os"
	"testing"

	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

// lapisBin is the lapis binary under test; skip says why the tests cannot run ("" when they
// can).
var (
	lapisBin string
	skip     string
)

func TestMain(m *testing.M) {
	if skip = kubereference.Built(); skip != "" {
		os.Exit(m.Run()) // nothing to build for tests that skip
	}
	os.Exit(lapisproc.Main(context.Background(), func(bin string) int {
		lapisBin = bin
		return m.Run()
	}))
}
