package certfixtures

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"time"
)

// Placeholders maps the fixtures' placeholders to their values, named after commonName:
// $CSR a PEM certificate request (base64, as a CSR's spec.request), $STUB the same request in
// DER (base64), $CERT a self-signed CA certificate (PEM, as a JSON string).
func Placeholders(commonName string) (map[string]string, error) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: commonName}}, key)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: commonName + "-ca"},
		NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	b64 := base64.StdEncoding.EncodeToString
	quoted, _ := json.Marshal(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})))
	return map[string]string{
		"$CSR":  b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr})),
		"$CERT": string(quoted),
		"$STUB": b64(csr),
	}, nil
}
