package clientgo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/server"
)

// compactionInterval is the etcd compaction interval of the compacting server: short, so that
// resourceVersions and continue tokens expire within a test.
const compactionInterval = time.Second

// servers are the lapis instances under test, started once by TestMain: stable keeps all history
// (no compaction), compacting compacts etcd every compactionInterval.
var servers struct {
	stable, compacting *rest.Config
}

func TestMain(m *testing.M) {
	// The reflector reads client-go's feature gates from the environment on first use; the
	// WatchList client is on by default in client-go 0.37, and this makes sure of it.
	os.Setenv("KUBE_FEATURE_WatchListClient", "true")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lapis-clientgo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	var wg sync.WaitGroup
	var stableErr, compactingErr error
	var stable, compacting *server.Server
	wg.Add(2)
	go func() {
		defer wg.Done()
		stable, servers.stable, stableErr = start(filepath.Join(dir, "stable"), 0)
	}()
	go func() {
		defer wg.Done()
		compacting, servers.compacting, compactingErr = start(filepath.Join(dir, "compacting"), compactionInterval)
	}()
	wg.Wait()
	if stable != nil {
		defer stable.Shutdown(context.Background())
	}
	if compacting != nil {
		defer compacting.Shutdown(context.Background())
	}
	if stableErr != nil || compactingErr != nil {
		fmt.Fprintln(os.Stderr, "starting lapis:", stableErr, compactingErr)
		return 1
	}
	return m.Run()
}

func start(dataDir string, compaction time.Duration) (*server.Server, *rest.Config, error) {
	cfg := server.Config{DataDir: dataDir, Listen: "127.0.0.1:0", EtcdCompactionInterval: compaction}
	srv, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", server.KubeconfigPath(dataDir))
	if err != nil {
		srv.Shutdown(context.Background())
		return nil, nil, err
	}
	rc.QPS, rc.Burst = 1000, 1000
	return srv, rc, nil
}
