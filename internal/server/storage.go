package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/storage"
)

// pendingStorage is storage being opened.
type pendingStorage struct {
	done    chan struct{}
	backend *storage.Backend
	err     error
}

// openStorageAsync opens storage in the background.
func openStorageAsync(ctx context.Context, cfg Config, log *slog.Logger) *pendingStorage {
	p := &pendingStorage{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.backend, p.err = openStorage(ctx, cfg, log)
	}()
	return p
}

// wait returns the opened storage, or why it did not open.
func (p *pendingStorage) wait() (*storage.Backend, error) {
	<-p.done
	return p.backend, p.err
}

// openStorage connects to the external etcd, or starts the embedded one: reachable only
// in-process unless --embedded-etcd-listen exposes it, over TLS to lapis's etcd client
// certificate only.
func openStorage(ctx context.Context, cfg Config, log *slog.Logger) (*storage.Backend, error) {
	if len(cfg.EtcdServers) > 0 {
		var tlsConfig *tls.Config
		if cfg.EtcdCAFile != "" || cfg.EtcdCertFile != "" || cfg.EtcdKeyFile != "" {
			var err error
			if tlsConfig, err = storage.ClientTLSConfig(cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile); err != nil {
				return nil, err
			}
		}
		return storage.OpenExternalTLS(ctx, cfg.EtcdServers, tlsConfig)
	}
	if cfg.EmbeddedEtcdClientURL == "" {
		return storage.OpenEmbedded(ctx, cfg.DataDir, "")
	}
	u, _ := url.Parse(cfg.EmbeddedEtcdClientURL) // validated
	files, err := pki.LoadOrCreateEtcd(cfg.DataDir, u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("etcd certificates: %w", err)
	}
	b, err := storage.OpenEmbeddedTLS(ctx, cfg.DataDir, cfg.EmbeddedEtcdClientURL, &storage.ServerTLS{
		CertFile: files.ServerCert, KeyFile: files.ServerKey, ClientCAFile: files.CAFile, ClientCNs: []string{pki.EtcdClientCN}})
	if err != nil {
		return nil, err
	}
	log.Info("embedded etcd exposed", "url", cfg.EmbeddedEtcdClientURL,
		"etcd-cafile", files.CAFile, "etcd-certfile", files.ClientCert, "etcd-keyfile", files.ClientKey)
	return b, nil
}
