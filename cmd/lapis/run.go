package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"k8s.io/kubectl/pkg/cmd"

	"github.com/lapis-dev/lapis/internal/server"
)

// shutdownTimeout bounds a graceful stop: in-flight requests get that long to finish.
const shutdownTimeout = 60 * time.Second

// runServer starts lapis and serves until SIGTERM or SIGINT, which also stop it while it is
// still starting (it then exits without error).
func runServer(ctx context.Context, cfg server.Config, log *slog.Logger) error {
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	restoreGC := startGC(os.LookupEnv)
	srv, err := server.Start(ctx, cfg, log)
	restoreGC()
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped while starting")
			return nil
		}
		return err
	}
	<-ctx.Done()
	log.Info("shutting down")
	shutdownCtx, done := context.WithTimeout(context.Background(), shutdownTimeout)
	defer done()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// startGCPercent is the garbage collector's GOGC while lapis starts.
const startGCPercent = 400

// startGC makes the garbage collector run less often until the returned function is called,
// unless GOGC is set (lookup is os.LookupEnv). Starting allocates several times the heap lapis
// then keeps (kube's schemes and type converters, OpenAPI documents, the first lists): collected
// at 400 rather than 100, it costs ~100 ms less CPU on two cores, for ~25 MB more at the peak
// (Start hands the garbage back once ready).
func startGC(lookup func(string) (string, bool)) (restore func()) {
	if _, set := lookup("GOGC"); set {
		return func() {}
	}
	previous := debug.SetGCPercent(startGCPercent)
	return func() { debug.SetGCPercent(previous) }
}

// runKubectl runs the bundled kubectl with args, as kubectl itself.
func runKubectl(args []string) int {
	c := cmd.NewDefaultKubectlCommand()
	c.SetArgs(args)
	if err := c.Execute(); err != nil {
		return 1
	}
	return 0
}

// envtestAssetNames are the files envtest looks for in KUBEBUILDER_ASSETS.
var envtestAssetNames = []string{"kube-apiserver", "etcd", "kubectl"}

// envtestAssets makes DIR/kube-apiserver, DIR/etcd and DIR/kubectl: symbolic links to this
// binary, which runs as the program it is started as.
func envtestAssets(args []string) error {
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		return errors.New("usage: lapis envtest-assets DIR")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return err
	}
	if err := os.MkdirAll(args[0], 0o755); err != nil {
		return err
	}
	for _, name := range envtestAssetNames {
		link := filepath.Join(args[0], name)
		tmp := link + ".lapis-tmp"
		_ = os.Remove(tmp)
		if err := os.Symlink(self, tmp); err != nil {
			return err
		}
		// Replaces a file or link of that name (an earlier lapis, a downloaded binary) at once.
		if err := os.Rename(tmp, link); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("%s: %w", link, err)
		}
	}
	return nil
}
