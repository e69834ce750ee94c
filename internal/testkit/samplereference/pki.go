package samplereference

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"time"
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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCertificate{}, err
	}
	caTmpl := certTemplate("e2e-server-cert-ca")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return ServingCertificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCertificate{}, err
	}
	leaf := certTemplate(serverName)
	leaf.DNSNames = []string{serverName}
	leaf.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	leaf.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return ServingCertificate{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return ServingCertificate{}, err
	}
	return ServingCertificate{
		CA:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// write puts the serving certificate and key where --tls-cert-file and --tls-private-key-file
// name them.
func (c ServingCertificate) write(certPath, keyPath string) error {
	return errors.Join(os.WriteFile(certPath, c.Cert, 0o600), os.WriteFile(keyPath, c.Key, 0o600))
}

func certTemplate(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}
