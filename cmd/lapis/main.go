// Command lapis is a Kubernetes-compatible API server: `lapis serve` starts it, `lapis kubectl`
// runs the bundled kubectl against it, `lapis version` prints its version. Started as
// `kube-apiserver`, `etcd` or `kubectl` (`lapis envtest-assets DIR` makes those links, for
// envtest's KUBEBUILDER_ASSETS) it is that program, with that program's command line.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	// First of lapis's imports: kubectl's catalogue is loaded only when lapis runs kubectl.
	_ "github.com/lapis-dev/lapis/cmd/lapis/internal/kubectli18n"
	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/server"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

func main() {
	// Started under another name (lapis envtest-assets makes these), lapis is that program.
	switch filepath.Base(os.Args[0]) {
	case "kube-apiserver":
		os.Exit(kubeAPIServer(os.Args[1:], os.Stdout, os.Stderr))
	case "etcd":
		os.Exit(etcd(os.Args[1:], os.Stdout, os.Stderr))
	case "kubectl":
		os.Exit(runKubectl(os.Args[1:]))
	}
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "lapis:", err)
			os.Exit(1)
		}
	case "kubectl":
		os.Exit(kubectl(os.Args[2:]))
	case "kube-apiserver":
		os.Exit(kubeAPIServer(os.Args[2:], os.Stdout, os.Stderr))
	case "etcd":
		os.Exit(etcd(os.Args[2:], os.Stdout, os.Stderr))
	case "envtest-assets":
		if err := envtestAssets(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "lapis:", err)
			os.Exit(1)
		}
	case "version", "--version":
		fmt.Printf("lapis %s (Kubernetes API %s.%s)\n", server.Version.GitVersion, server.Version.Major, server.Version.Minor)
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "lapis: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  lapis serve [--data-dir DIR] [--listen HOST:PORT] [--etcd-servers URL,... [--etcd-cafile F] [--etcd-certfile F] [--etcd-keyfile F]]
              [--etcd-prefix P] [--event-ttl D] [--etcd-compaction-interval D] [--embedded-etcd-listen https://HOST:PORT] [--request-timeout D]
              [--service-cluster-ip-range CIDR[,CIDR]] [--service-node-port-range MIN-MAX]
              [--secure-port N] [--bind-address IP] [--advertise-address IP] [--cert-dir DIR]
              [--tls-cert-file F --tls-private-key-file F] [--max-requests-inflight N] [--max-mutating-requests-inflight N]
              [--feature-gates K=V,...] [--allow-privileged]
              [--requestheader-client-ca-file F [--requestheader-allowed-names N,...] [--requestheader-username-headers H,...]
               [--requestheader-uid-headers H,...] [--requestheader-group-headers H,...] [--requestheader-extra-headers-prefix P,...]]
              [--proxy-client-cert-file F --proxy-client-key-file F] [--enable-aggregator-routing]
  lapis kubectl ARGS...   run the bundled kubectl (uses DIR/kubeconfig unless KUBECONFIG or --kubeconfig is set)
  lapis envtest-assets DIR   fill DIR with kube-apiserver, etcd and kubectl, all this binary, for KUBEBUILDER_ASSETS=DIR
  lapis kube-apiserver FLAGS, lapis etcd FLAGS   run as those programs (also when started under those names)
  lapis version
`)
}

func serve(args []string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfg := server.Config{}
	fs.StringVar(&cfg.DataDir, "data-dir", server.DefaultDataDir, "directory for etcd data, TLS material, credentials and the admin kubeconfig")
	fs.StringVar(&cfg.Listen, "listen", server.DefaultListen, "HOST:PORT to serve on (port 0 picks a free port)")
	fs.Int64Var(&cfg.EtcdHistoryBytes, "etcd-history-bytes", server.DefaultEtcdHistoryBytes, "compact etcd sooner than the interval when this lapis writes this many bytes of objects within two intervals, bounding etcd's history in bytes (-1: no byte bound)")
	fs.Int64Var(&cfg.WatchCacheHistoryBytes, "watch-cache-history-bytes", watchcache.DefaultHistoryBytes, "bytes of changed objects all watch caches keep together for watches that resume from a resourceVersion")
	fs.StringVar(&cfg.EmbeddedEtcdClientURL, "embedded-etcd-listen", "", "also expose the embedded etcd at this https URL (e.g. https://127.0.0.1:2379), for other lapis processes: only to the client certificate written to DIR/pki/etcd-client.{crt,key}")
	audit.AddFlags(fs, &cfg.Audit)
	logs := addLoggingFlags(fs)
	var kube kubeFlags
	addKubeFlags(fs, &cfg, &kube, serveCommand)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil // usage printed; --help succeeds, as kube-apiserver's
		}
		return err
	}
	if err := kube.apply(fs, &cfg); err != nil {
		return err
	}
	log, err := logs.apply(os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	return runServer(context.Background(), cfg, log)
}

// kubectl runs the bundled kubectl, pointed at lapis's admin kubeconfig unless the caller chose
// a kubeconfig.
func kubectl(args []string) int {
	if os.Getenv("KUBECONFIG") == "" && !hasKubeconfigFlag(args) {
		dir := os.Getenv("LAPIS_DATA_DIR")
		if dir == "" {
			dir = server.DefaultDataDir
		}
		path, _ := filepath.Abs(server.KubeconfigPath(dir))
		os.Setenv("KUBECONFIG", path)
	}
	return runKubectl(args)
}

func hasKubeconfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") {
			return true
		}
	}
	return false
}
