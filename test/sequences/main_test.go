package sequences

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lapis-dev/lapis/internal/testkit/inprocess"
	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
)

// The sizes recorded outcomes depend on: changing either means recording again.
const (
	poolSize       = 8
	recordedSeeds  = 400
	recordingsFile = "testdata/kube-" + kubereference.Version + ".json.gz"
)

// env is set up once by TestMain: lapis always, kube-apiserver when a test needs it.
var env struct {
	gen      *Generator
	lapis    *Target
	kube     *Target
	kubeSkip string // why kube is not there
}

// Knobs (see doc.go).
var (
	liveCount, _ = strconv.Atoi(os.Getenv("SEQUENCES"))
	liveFrom, _  = strconv.ParseUint(os.Getenv("SEQUENCES_FROM"), 10, 64)
	record       = os.Getenv("SEQUENCES_RECORD") == "1"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.gen = NewGenerator(poolSize)
	lapis, err := inprocess.Start(ctx, "lapis-sequences-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer lapis.Stop()
	dir := lapis.Dir()
	if env.lapis, err = prepared(ctx, "lapis", lapis.Kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if liveCount > 0 || record || os.Getenv("SEQUENCES_SHOW") != "" {
		stop, err := startKube(ctx, filepath.Join(dir, "kube"))
		defer stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	} else {
		env.kubeSkip = "SEQUENCES=N runs N sequences against kube-apiserver (see doc.go)"
	}
	return m.Run()
}

// startKube starts kube-apiserver alone (no controller writes during a sequence), or uses
// the one $SEQUENCES_KUBECONFIG names.
func startKube(ctx context.Context, dir string) (stop func(), err error) {
	stop = func() {}
	kubeconfig := os.Getenv("SEQUENCES_KUBECONFIG")
	if kubeconfig == "" {
		if env.kubeSkip = kubereference.Built(); env.kubeSkip != "" {
			return stop, nil
		}
		stop = func() { kubereference.Stop(dir) }
		if kubeconfig, err = kubereference.Start(dir, "KCM=0"); err != nil {
			return stop, fmt.Errorf("starting kube-apiserver: %w", err)
		}
	}
	env.kube, err = prepared(ctx, "kube", kubeconfig)
	return stop, err
}

func prepared(ctx context.Context, name, kubeconfig string) (*Target, error) {
	t, err := NewTarget(name, kubeconfig)
	if err != nil {
		return nil, err
	}
	return t, t.Prepare(ctx, env.gen)
}
