package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// Backend is a connection to etcd, and the embedded etcd server when lapis runs one.
type Backend struct {
	Client    *clientv3.Client
	embedded  *embed.Etcd
	closeOnce sync.Once
	// walBlocked: the embedded etcd started with no room for its next WAL segment.
	walBlocked bool
}

// ServerTLS is how an exposed embedded etcd serves: with CertFile and KeyFile, accepting only
// clients whose certificate ClientCAFile signed and, if ClientCNs is not empty, names one of them.
type ServerTLS struct {
	CertFile, KeyFile, ClientCAFile string
	ClientCNs                       []string
}

// OpenEmbedded starts etcd in this process with its data under dir (fsync on) and connects to it
// without going through the network; with clientURL "" it opens no socket at all. A clientURL
// also exposes it there, without TLS or authentication: for tests only (lapis exposes it with
// OpenEmbeddedTLS).
func OpenEmbedded(ctx context.Context, dir string, clientURL string) (*Backend, error) {
	return OpenEmbeddedTLS(ctx, dir, clientURL, nil)
}

// minFreeToStart is the room the embedded etcd must have left once its start has taken what it
// takes (see openRoom): below it, it is not started.
const minFreeToStart = 4 << 20

// OpenEmbeddedTLS is OpenEmbedded exposing etcd at an https clientURL with serving, which
// requires client certificates. An https URL needs serving; serving needs an https URL.
func OpenEmbeddedTLS(ctx context.Context, dir string, clientURL string, serving *ServerTLS) (*Backend, error) {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.Name = "lapis"
	// lapis talks to its etcd in-process (v3client): no client listener unless asked for, and
	// a single member needs no peer listener. Its peer URL is only a name in InitialCluster.
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls, cfg.ListenClientHttpUrls = nil, nil, nil
	cfg.ListenPeerUrls = nil
	pu, _ := url.Parse("http://127.0.0.1:0")
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	if clientURL != "" {
		cu, err := url.Parse(clientURL)
		if err != nil {
			return nil, fmt.Errorf("etcd client URL: %w", err)
		}
		if (cu.Scheme == "https") != (serving != nil) {
			return nil, fmt.Errorf("etcd client URL %s: https goes with a serving certificate and client authentication, and only https", clientURL)
		}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	} else if serving != nil {
		return nil, errors.New("etcd serving certificate without a client URL")
	}
	if serving != nil {
		info := &cfg.ClientTLSInfo
		info.CertFile, info.KeyFile, info.TrustedCAFile = serving.CertFile, serving.KeyFile, serving.ClientCAFile
		info.ClientCertAuth, info.AllowedCNs = true, serving.ClientCNs
	}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A single member elects itself: short ticks make start-up take milliseconds, not a second.
	// etcd fast-forwards a single member to one tick before its election timeout, which raft
	// draws from [election, 2×election): the member campaigns 1 to 5 ticks (10–50 ms) after
	// opening (1 to 10 at 100 ms: opening took twice as long). The tick stays 10 ms: a 5 ms tick
	// costs ~6 ms of CPU a second at idle for ~20 ms less, hidden anyway behind lapis's own
	// start-up work, which runs meanwhile.
	cfg.TickMs, cfg.ElectionMs = 10, 50 // etcd requires election ≥ 5 ticks
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger())
	cfg.MaxRequestBytes = 3 * 1024 * 1024
	// One member needs no long raft log for followers to catch up from: snapshot (and release
	// the in-memory log) often. etcd keeps the entries since its last snapshot, and the catch-up
	// entries, in memory whatever their size: 144 entries of 512 KiB objects are 72 MiB, where
	// etcd's defaults (10 000 and 5 000) would hold gigabytes. Measured: no loss of write
	// throughput against 2000/500.
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = 128, 16
	cfg.QuotaBackendBytes = 8 * 1024 * 1024 * 1024

	// On a full disk etcd would start, tear its log's tail writing to it and then need a whole
	// segment's room to repair it: it is not started at all there. On a nearly full one, its
	// start is readied so that it has one outcome (see startroom.go); whether etcd gets its
	// next segment is known only before it starts.
	walBlocked, err := prepareOpen(dir, cfg.Dir)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("embedded etcd did not become ready within 60s")
	}
	return &Backend{Client: observed(v3client.New(e.Server)), embedded: e, walBlocked: walBlocked}, nil
}

// OpenExternal connects to an etcd cluster.
func OpenExternal(ctx context.Context, endpoints []string) (*Backend, error) {
	return OpenExternalTLS(ctx, endpoints, nil)
}

// OpenExternalTLS connects to an etcd cluster, over TLS with tlsConfig when it is not nil.
func OpenExternalTLS(ctx context.Context, endpoints []string, tlsConfig *tls.Config) (*Backend, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        10 * time.Second,
		Context:            ctx,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: 4 * 1024 * 1024,
		TLS:                tlsConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", endpoints, err)
	}
	// Fail now, not on the first request, when etcd is unreachable.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Get(sctx, "health-probe"); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcd %v is not reachable: %w", endpoints, err)
	}
	return &Backend{Client: observed(c)}, nil
}

// ClientTLSConfig is the TLS configuration for connecting to etcd as kube-apiserver's
// --etcd-cafile, --etcd-certfile and --etcd-keyfile make it: trust caFile (the system's roots
// when empty), present certFile and keyFile (nothing when empty).
func ClientTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA file %s holds no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("an etcd client certificate needs both its certificate and key files")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Close disconnects and stops the embedded etcd, if any. Closing again does nothing.
func (b *Backend) Close() error {
	var err error
	b.closeOnce.Do(func() {
		err = b.Client.Close()
		if errors.Is(err, context.Canceled) {
			err = nil // the in-process client reports its own cancellation on close
		}
		if b.embedded != nil {
			b.embedded.Close()
		}
	})
	return err
}
