package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
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
}

// OpenEmbedded starts etcd in this process with its data under dir (fsync on) and connects to it
// without going through the network. clientURL, if not empty, also exposes it to other processes.
func OpenEmbedded(ctx context.Context, dir string, clientURL string) (*Backend, error) {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.Name = "lapis"
	listen := "http://127.0.0.1:0"
	if clientURL != "" {
		listen = clientURL
	}
	cu, err := url.Parse(listen)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL: %w", err)
	}
	pu, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A single member elects itself: short ticks make start-up take milliseconds, not a second.
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.MaxRequestBytes = 3 * 1024 * 1024
	// One member needs no long raft log for followers to catch up from: snapshot (and release
	// the in-memory log) often, which keeps memory small.
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = 2000, 500
	cfg.QuotaBackendBytes = 8 * 1024 * 1024 * 1024

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
	return &Backend{Client: v3client.New(e.Server), embedded: e}, nil
}

// OpenExternal connects to an etcd cluster.
func OpenExternal(ctx context.Context, endpoints []string) (*Backend, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        10 * time.Second,
		Context:            ctx,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: 4 * 1024 * 1024,
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
	return &Backend{Client: c}, nil
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
