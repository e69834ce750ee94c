package aggregation

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"

	"github.com/lapis-dev/lapis/internal/server"
	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
	"github.com/lapis-dev/lapis/internal/testkit/samplereference"
)

// env is set up once by TestMain: lapis and kube-apiserver, given the same front-proxy flags.
var env struct {
	lapis, kube *target
	proxy       frontProxy
	dir         string // the run's temporary directory: servers' data and logs
	skip        string // why the tests cannot run ("" when they can)
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Neither binary is built by go test: kube-apiserver takes about 15 minutes.
	if env.skip = kubereference.Built(); env.skip == "" {
		env.skip = samplereference.Built()
	}
	if env.skip != "" {
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "lapis-aggregation-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.dir = dir
	keep := os.Getenv("AGGREGATION_KEEP") == "1"
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	if env.proxy, err = newFrontProxy(dir); err != nil {
		fmt.Fprintln(os.Stderr, "front-proxy certificates:", err)
		return 1
	}
	stopLapis, err := startLapis(ctx, filepath.Join(dir, "lapis"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting lapis:", err)
		return 1
	}
	defer stopLapis()
	var stopKube func()
	env.kube, stopKube, err = startKube(ctx, "kube", filepath.Join(dir, "kube"))
	defer stopKube()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver:", err)
		return 1
	}
	if os.Getenv("AGGREGATION_KUBE_TWICE") == "1" {
		// A second kube-apiserver in lapis's place: every comparison must then pass, which
		// shows that the tests compare only what is deterministic and mask enough.
		var stopSecond func()
		env.lapis, stopSecond, err = startKube(ctx, "kube#2", filepath.Join(dir, "kube2"))
		defer stopSecond()
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting a second kube-apiserver:", err)
			return 1
		}
	}
	code := m.Run()
	if code != 0 || keep {
		fmt.Fprintf(os.Stderr, "logs (lapis, kube-apiserver, sample-apiservers) in %s\n", dir)
		keep = true
	}
	return code
}

// startLapis serves lapis in-process from dir with the front-proxy flags; its log goes to
// dir/lapis.log.
func startLapis(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "lapis.log"))
	if err != nil {
		return nil, err
	}
	// kube's libraries in lapis (and client-go in the tests) log through klog: to the file too.
	klog.LogToStderr(false)
	klog.SetOutput(logFile)
	cfg := server.Config{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0"}
	env.proxy.configure(&cfg)
	srv, err := server.Start(ctx, cfg, slog.New(slog.NewTextHandler(logFile, nil)))
	if err != nil {
		logFile.Close()
		return nil, err
	}
	stop := func() {
		_ = srv.Shutdown(context.Background())
		logFile.Close()
	}
	if env.lapis, err = newTarget("lapis", server.KubeconfigPath(cfg.DataDir), dir); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// startKube runs kube-apiserver alone (no kube-controller-manager) on an etcd of its own, with
// the front-proxy flags. Its etcd is stopped with it.
func startKube(ctx context.Context, name, dir string) (*target, func(), error) {
	etcd, err := kubereference.StartEtcd(ctx, dir)
	if err != nil {
		return nil, func() {}, err
	}
	args := append(env.proxy.kubeArgs(), "--endpoint-reconciler-type=none")
	kube, err := kubereference.StartServer(ctx, kubereference.ServerOptions{Dir: dir, EtcdURL: etcd.URL, Args: args})
	if err != nil {
		_ = etcd.Stop()
		return nil, func() {}, err
	}
	stop := func() {
		if err := kube.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = etcd.Stop()
	}
	t, err := newTarget(name, kube.Kubeconfig, dir)
	return t, stop, err
}

// servers returns lapis and kube, or skips the test saying why they are not there.
func servers(t *testing.T) (lapis, kube *target) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	return env.lapis, env.kube
}
