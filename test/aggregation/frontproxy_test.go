package aggregation

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/lapis-dev/lapis/internal/server"
	"github.com/lapis-dev/lapis/internal/testkit/certfixtures"
)

// frontProxy is the aggregator's front-proxy identity, given to both servers alike: a
// request-header CA of its own (separate from the client CA, as kubeadm makes it), the proxy
// client certificate it signs, and the names and headers extension servers are told to trust.
type frontProxy struct {
	caFile, certFile, keyFile string
	allowedNames              []string
	usernameHeaders           []string
	uidHeaders                []string
	groupHeaders              []string
	extraHeadersPrefix        []string
}

// proxyClientName is the proxy client certificate's CN, kubeadm's.
const proxyClientName = "front-proxy-client"

// newFrontProxy writes the request-header CA and the proxy client certificate into dir.
func newFrontProxy(dir string) (frontProxy, error) {
	f := frontProxy{
		caFile: filepath.Join(dir, "front-proxy-ca.crt"), certFile: filepath.Join(dir, "front-proxy-client.crt"),
		keyFile: filepath.Join(dir, "front-proxy-client.key"), allowedNames: []string{proxyClientName},
		usernameHeaders: []string{"X-Remote-User"}, uidHeaders: []string{"X-Remote-Uid"},
		groupHeaders: []string{"X-Remote-Group"}, extraHeadersPrefix: []string{"X-Remote-Extra-"},
	}
	signed, err := certfixtures.Sign("front-proxy-ca", &x509.Certificate{Subject: pkix.Name{CommonName: proxyClientName},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return frontProxy{}, err
	}
	return f, errors.Join(os.WriteFile(f.caFile, signed.CA, 0o600), os.WriteFile(f.certFile, signed.Cert, 0o600),
		os.WriteFile(f.keyFile, signed.Key, 0o600))
}

// kubeArgs are kube-apiserver's flags for f.
func (f frontProxy) kubeArgs() []string {
	return []string{
		"--requestheader-client-ca-file=" + f.caFile,
		"--requestheader-allowed-names=" + strings.Join(f.allowedNames, ","),
		"--requestheader-username-headers=" + strings.Join(f.usernameHeaders, ","),
		"--requestheader-uid-headers=" + strings.Join(f.uidHeaders, ","),
		"--requestheader-group-headers=" + strings.Join(f.groupHeaders, ","),
		"--requestheader-extra-headers-prefix=" + strings.Join(f.extraHeadersPrefix, ","),
		"--proxy-client-cert-file=" + f.certFile,
		"--proxy-client-key-file=" + f.keyFile,
	}
}

// configure sets lapis's fields of the same flags.
func (f frontProxy) configure(cfg *server.Config) {
	cfg.RequestHeader = server.RequestHeaderConfig{
		ClientCAFile: f.caFile, AllowedNames: f.allowedNames, UsernameHeaders: f.usernameHeaders,
		UIDHeaders: f.uidHeaders, GroupHeaders: f.groupHeaders, ExtraHeadersPrefix: f.extraHeadersPrefix,
	}
	cfg.ProxyClientCertFile, cfg.ProxyClientKeyFile = f.certFile, f.keyFile
}

// certificate is the proxy client certificate, for a test that speaks to an extension server
// as the aggregator does.
func (f frontProxy) certificate() (tls.Certificate, error) {
	return tls.LoadX509KeyPair(f.certFile, f.keyFile)
}
