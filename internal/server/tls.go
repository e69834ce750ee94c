package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/lapis-dev/lapis/internal/pki"
)

// loopbackServerName is the name lapis's own client asks for (SNI), as kube-apiserver's
// loopback client does: it gets a certificate only that client trusts, whatever certificate
// lapis serves to others (its own, --tls-cert-file or --cert-dir's).
const loopbackServerName = "apiserver-loopback-client"

// servingTLS is the server's TLS configuration and the TLS settings of its loopback client.
func servingTLS(cfg Config, creds *pki.Credentials) (*tls.Config, rest.TLSClientConfig, error) {
	serving, err := servingCertificate(cfg, creds)
	if err != nil {
		return nil, rest.TLSClientConfig{}, err
	}
	loopbackCert, loopbackPEM, err := selfSignedLoopback()
	if err != nil {
		return nil, rest.TLSClientConfig{}, fmt.Errorf("loopback certificate: %w", err)
	}
	tlsConfig := &tls.Config{
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName == loopbackServerName {
				return loopbackCert, nil
			}
			return serving, nil
		},
		// As kube-apiserver: the x509 authenticator verifies certificates, so that one of an
		// unknown CA is a 401, not a failed handshake.
		ClientAuth: tls.RequestClientCert,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
	}
	return tlsConfig, rest.TLSClientConfig{CAData: loopbackPEM, ServerName: loopbackServerName}, nil
}

// servingCertificate is kube-apiserver's choice: --tls-cert-file and --tls-private-key-file;
// else --cert-dir's apiserver.crt and apiserver.key, written there (lapis's own serving
// certificate and its CA) when absent; else lapis's own.
func servingCertificate(cfg Config, creds *pki.Credentials) (*tls.Certificate, error) {
	if (cfg.TLSCertFile == "") != (cfg.TLSPrivateKeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if cfg.TLSCertFile != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSPrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file: %w", err)
		}
		return &pair, nil
	}
	if cfg.CertDir == "" {
		return &creds.Serving, nil
	}
	certFile, keyFile := filepath.Join(cfg.CertDir, "apiserver.crt"), filepath.Join(cfg.CertDir, "apiserver.key")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err == nil {
		return &pair, nil
	}
	if _, statErr := os.Stat(certFile); !errors.Is(statErr, os.ErrNotExist) {
		return nil, fmt.Errorf("--cert-dir: %w", err)
	}
	if err := writeServingPair(cfg.CertDir, certFile, keyFile, creds); err != nil {
		return nil, fmt.Errorf("--cert-dir: %w", err)
	}
	return &creds.Serving, nil
}

// writeServingPair writes lapis's serving certificate (then its CA) and key, as kube-apiserver
// writes the certificate it makes when --cert-dir holds none.
func writeServingPair(dir, certFile, keyFile string, creds *pki.Credentials) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var chain []byte
	for _, der := range creds.Serving.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	chain = append(chain, creds.CAPEM...)
	keyDER, err := x509.MarshalPKCS8PrivateKey(creds.Serving.PrivateKey)
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return pki.WriteFileAtomic(certFile, chain, 0o644)
}

// selfSignedLoopback makes the loopback's certificate: self-signed, for loopbackServerName,
// in memory only (ECDSA: made in well under a millisecond).
func selfSignedLoopback() (*tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: loopbackServerName + "-ca"},
		DNSNames:              []string{loopbackServerName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
