package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/kubeencoding"
)

// storedValues reads what kube-apiserver writes to etcd, and writes what cfg's
// --storage-media-type asks for (JSON unless told otherwise: lapis serves stored JSON without
// decoding it).
func storedValues(cfg Config) (*kubeencoding.Values, error) {
	mediaType := cfg.StorageMediaType
	if mediaType == "" {
		mediaType = kubeencoding.JSON
	}
	// kube-apiserver's own servers' types: CustomResourceDefinitions are apiextensions-apiserver's
	// (APIServices, kube-aggregator's, are in the legacy scheme: catalog/kube adds them).
	apiextensions := runtime.NewScheme()
	apiextensionsinstall.Install(apiextensions)
	return kubeencoding.New(mediaType, legacyscheme.Scheme, apiextensions)
}

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
