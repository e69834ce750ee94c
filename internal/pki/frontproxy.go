package pki

import (
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The front proxy's credentials, named as kubeadm names them.
const (
	// FrontProxyCAName is the request-header CA's file name (and common name).
	FrontProxyCAName = "front-proxy-ca"
	// FrontProxyClientCN is the front proxy client certificate's common name and file name.
	FrontProxyClientCN = "front-proxy-client"
)

// FrontProxyFiles name the PEM files of lapis's front proxy: the request-header CA, apart from
// lapis's client CA so that a client certificate of lapis's CA never vouches for headers, and
// the client certificate of it that lapis presents when it proxies to extension API servers.
type FrontProxyFiles struct {
	CAFile                string
	ClientCert, ClientKey string
}

// LoadOrCreateFrontProxy makes sure dir/pki holds front-proxy-ca.{crt,key} and
// front-proxy-client.{crt,key} (CN front-proxy-client, client authentication), making what is
// missing. A client certificate its CA does not verify (the CA was replaced, or it expired) is
// made again.
func LoadOrCreateFrontProxy(dir string) (FrontProxyFiles, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return FrontProxyFiles{}, err
	}
	ca, caKey, _, err := loadOrCreateCANamed(pki, FrontProxyCAName, FrontProxyCAName)
	if err != nil {
		return FrontProxyFiles{}, fmt.Errorf("%s: %w", FrontProxyCAName, err)
	}
	f := func(name string) string { return filepath.Join(pki, name) }
	files := FrontProxyFiles{CAFile: f(FrontProxyCAName + ".crt"),
		ClientCert: f(FrontProxyClientCN + ".crt"), ClientKey: f(FrontProxyClientCN + ".key")}
	certPEM, err := loadOrCreateFrontProxyClient(pki, ca, caKey)
	if err != nil {
		return FrontProxyFiles{}, err
	}
	if verifyClient(certPEM, ca) == nil {
		return files, nil
	}
	if err := os.Remove(files.ClientCert); err != nil {
		return FrontProxyFiles{}, err
	}
	certPEM, err = loadOrCreateFrontProxyClient(pki, ca, caKey)
	if err != nil {
		return FrontProxyFiles{}, err
	}
	return files, verifyClient(certPEM, ca)
}

func loadOrCreateFrontProxyClient(pki string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) ([]byte, error) {
	certPEM, _, err := loadOrCreateLeaf(pki, FrontProxyClientCN, ca, caKey, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: FrontProxyClientCN}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FrontProxyClientCN, err)
	}
	return certPEM, nil
}

// verifyClient checks that certPEM is a client certificate of ca, valid now.
func verifyClient(certPEM []byte, ca *x509.Certificate) error {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}
