package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/upstream/requestheader"
)

// frontProxy is lapis as a front proxy, and whom it trusts as one: the client certificate it
// presents to extension API servers (--proxy-client-cert-file and --proxy-client-key-file,
// reloaded when they change, or its own of its front-proxy CA), and the request-header
// configuration its authenticator and kube-system/extension-apiserver-authentication share.
type frontProxy struct {
	cert *dynamiccertificates.DynamicCertKeyPairContent
	// requestHeaderCA and requestHeader are nil when lapis trusts no front proxy.
	requestHeaderCA *dynamiccertificates.DynamicFileCAContent
	requestHeader   *authenticatorfactory.RequestHeaderConfig
}

// kubeadm's request-header flags, which lapis trusts its own front-proxy CA with.
var (
	kubeadmUsernameHeaders     = []string{"X-Remote-User"}
	kubeadmGroupHeaders        = []string{"X-Remote-Group"}
	kubeadmExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	// kubeadm sets none; kube 1.37's aggregator sends this one while RemoteRequestHeaderUID is on.
	standardUIDHeaders = []string{"X-Remote-Uid"}
)

// newFrontProxy reads the proxy client certificate the flags name or, without them, makes
// lapis's own (pki.LoadOrCreateFrontProxy). Front proxies are trusted as
// --requestheader-client-ca-file says or, without it, when lapis made its own certificate,
// with kubeadm's flags over lapis's front-proxy CA: what lapis publishes is what it trusts.
func newFrontProxy(cfg Config, log *slog.Logger) (*frontProxy, error) {
	files := pki.FrontProxyFiles{ClientCert: cfg.ProxyClientCertFile, ClientKey: cfg.ProxyClientKeyFile}
	own := files.ClientCert == "" || files.ClientKey == ""
	if own {
		if files.ClientCert != "" || files.ClientKey != "" {
			log.Warn("--proxy-client-cert-file and --proxy-client-key-file go together; lapis presents its own front-proxy client certificate")
		}
		var err error
		if files, err = pki.LoadOrCreateFrontProxy(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("front-proxy credentials: %w", err)
		}
	}
	cert, err := dynamiccertificates.NewDynamicServingContentFromFiles("aggregator-proxy-cert", files.ClientCert, files.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("--proxy-client-cert-file: %w", err)
	}
	f := &frontProxy{cert: cert}
	opts := requestHeaderOptions(cfg.RequestHeader)
	if opts.ClientCAFile == "" && own {
		opts = ownRequestHeader(files.CAFile, utilfeature.DefaultFeatureGate.Enabled(features.RemoteRequestHeaderUID))
	}
	if opts.ClientCAFile == "" {
		return f, nil
	}
	if f.requestHeaderCA, err = dynamiccertificates.NewDynamicCAContentFromFile("request-header", opts.ClientCAFile); err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	f.requestHeader = &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice(opts.UsernameHeaders),
		UIDHeaders:          headerrequest.StaticStringSlice(opts.UIDHeaders),
		GroupHeaders:        headerrequest.StaticStringSlice(opts.GroupHeaders),
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice(opts.ExtraHeaderPrefixes),
		CAContentProvider:   f.requestHeaderCA,
		AllowedClientNames:  headerrequest.StaticStringSlice(opts.AllowedNames),
	}
	return f, nil
}

// ownRequestHeader is kubeadm's request-header configuration over lapis's front-proxy CA.
func ownRequestHeader(caFile string, uidHeaders bool) requestheader.Options {
	opts := requestheader.Options{ClientCAFile: caFile, UsernameHeaders: kubeadmUsernameHeaders,
		GroupHeaders: kubeadmGroupHeaders, ExtraHeaderPrefixes: kubeadmExtraHeaderPrefixes,
		AllowedNames: []string{pki.FrontProxyClientCN}}
	if uidHeaders {
		opts.UIDHeaders = standardUIDHeaders
	}
	return opts
}

func requestHeaderOptions(rh RequestHeaderConfig) requestheader.Options {
	return requestheader.Options{ClientCAFile: rh.ClientCAFile, UsernameHeaders: rh.UsernameHeaders,
		UIDHeaders: rh.UIDHeaders, GroupHeaders: rh.GroupHeaders, ExtraHeaderPrefixes: rh.ExtraHeadersPrefix,
		AllowedNames: rh.AllowedNames}
}

// validateRequestHeader refuses the --requestheader-* flags kube-apiserver refuses.
func (c Config) validateRequestHeader() error {
	opts := requestHeaderOptions(c.RequestHeader)
	return errors.Join(requestheader.ValidateWithClientCA(&opts, c.ClientCAFile)...)
}

// Name names the certificate's source.
func (f *frontProxy) Name() string { return f.cert.Name() }

// CurrentCertKeyContent is the proxy client certificate and key (PEM), as last read: kube's
// aggregator's proxyCurrentCertKeyContent.
func (f *frontProxy) CurrentCertKeyContent() ([]byte, []byte) { return f.cert.CurrentCertKeyContent() }

// AddListener has l told when the certificate changes. Listeners must be added before the
// post-start phase, which starts reloading (run).
func (f *frontProxy) AddListener(l dynamiccertificates.Listener) { f.cert.AddListener(l) }

// run reloads the certificate's and the request-header CA's files when they change, until ctx
// ends (kube's aggregator-reload-proxy-client-cert hook, and its cluster-authentication-info
// hook for the CA). Listeners are told.
func (f *frontProxy) run(ctx context.Context) {
	go f.cert.Run(ctx, 1)
	if f.requestHeaderCA != nil {
		go f.requestHeaderCA.Run(ctx, 1)
	}
}

var _ dynamiccertificates.CertKeyContentProvider = (*frontProxy)(nil)
