package samplereference

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"

	"github.com/lapis-dev/lapis/internal/testkit/certfixtures"
)

// ServingCertificate is what the e2e spec's setupServerCert makes: a CA made for the extension
// server (its PEM is the APIService's caBundle), and a serving certificate it signs for the
// Service's name alone, <service>.<namespace>.svc (CN and DNS name), the name the aggregator
// verifies; all PEM.
type ServingCertificate struct {
	CA, Cert, Key []byte
}

// ServerName is the name a ServingCertificate is for.
func ServerName(service, namespace string) string { return service + "." + namespace + ".svc" }

// NewServingCertificate makes a CA and a serving certificate for serverName.
func NewServingCertificate(serverName string) (ServingCertificate, error) {
	signed, err := certfixtures.Sign("e2e-server-cert-ca", &x509.Certificate{
		Subject: pkix.Name{CommonName: serverName}, DNSNames: []string{serverName},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return ServingCertificate(signed), err
}

// write puts the serving certificate and key where --tls-cert-file and --tls-private-key-file
// name them.
func (c ServingCertificate) write(certPath, keyPath string) error {
	return errors.Join(os.WriteFile(certPath, c.Cert, 0o600), os.WriteFile(keyPath, c.Key, 0o600))
}
