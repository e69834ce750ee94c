package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/lapis-dev/lapis/internal/storage"
)

// etcdFlags are the etcd flags lapis started as `etcd` understands: one member, one plain
// http client URL (what envtest starts).
type etcdFlags struct {
	listenClientURLs, advertiseClientURLs []string
	dataDir, name                         string
	version                               bool
}

// ignoredEtcdFlags are etcd flags accepted and ignored: they concern peers and clusters, which
// one embedded member has not, or tuning lapis's embedded etcd sets itself.
var ignoredEtcdFlags = []string{
	"listen-peer-urls", "initial-advertise-peer-urls", "initial-cluster", "initial-cluster-state",
	"initial-cluster-token", "log-level", "logger", "quota-backend-bytes", "auto-compaction-mode",
	"auto-compaction-retention", "heartbeat-interval", "election-timeout", "snapshot-count",
}

// etcd runs lapis's embedded etcd as the `etcd` program, serving etcd's API (and /health) on
// the client URL until SIGTERM or SIGINT.
func etcd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f, err := parseEtcd(fs, args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(stdout, "Usage:\n\n  etcd [flags]\n    Start an etcd server (lapis's embedded etcd: one member, plain http).\n\nFlags:\n%s", fs.FlagUsages())
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "etcd:", err)
		return 1
	}
	if f.version {
		fmt.Fprintln(stdout, "etcd (lapis's embedded etcd)")
		return 0
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	backend, err := storage.OpenEmbedded(ctx, f.dataDir, f.listenClientURLs[0])
	if err != nil {
		if ctx.Err() != nil {
			return 0 // stopped while starting
		}
		fmt.Fprintln(stderr, "etcd:", err)
		return 1
	}
	fmt.Fprintln(stderr, "etcd: serving", f.listenClientURLs[0], "data", f.dataDir)
	<-ctx.Done()
	if err := backend.Close(); err != nil {
		fmt.Fprintln(stderr, "etcd:", err)
		return 1
	}
	return 0
}

func parseEtcd(fs *pflag.FlagSet, args []string) (etcdFlags, error) {
	var f etcdFlags
	fs.StringSliceVar(&f.listenClientURLs, "listen-client-urls", []string{"http://localhost:2379"}, "List of URLs to listen on for client traffic (one http URL).")
	fs.StringSliceVar(&f.advertiseClientURLs, "advertise-client-urls", nil, "List of this member's client URLs to advertise to the public.")
	fs.StringVar(&f.dataDir, "data-dir", "", "Path to the data directory (default ${name}.etcd).")
	fs.StringVar(&f.name, "name", "default", "Human-readable name for this member.")
	fs.BoolVar(&f.version, "version", false, "Print the version and exit.")
	for _, name := range ignoredEtcdFlags {
		fs.String(name, "", "Accepted for etcd compatibility and ignored (one embedded member).")
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.dataDir == "" {
		f.dataDir = f.name + ".etcd"
	}
	if len(f.listenClientURLs) != 1 {
		return f, fmt.Errorf("--listen-client-urls %q: lapis's etcd listens on one URL", f.listenClientURLs)
	}
	u, err := url.Parse(f.listenClientURLs[0])
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		return f, fmt.Errorf("--listen-client-urls %q: lapis's etcd listens on one http://HOST:PORT URL", f.listenClientURLs[0])
	}
	return f, nil
}
