package certfixtures

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"testing"
)

// The same values on every call, each decodable as what it stands for.
func TestPlaceholders(t *testing.T) {
	a, err := Placeholders("x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Placeholders("x")
	if a["$CSR"] != b["$CSR"] || a["$CERT"] != b["$CERT"] {
		t.Error("two calls made different material")
	}
	csr, err := base64.StdEncoding.DecodeString(a["$CSR"])
	if block, _ := pem.Decode(csr); err != nil || block == nil || block.Type != "CERTIFICATE REQUEST" {
		t.Errorf("$CSR is not a base64 PEM request: %q", a["$CSR"])
	}
	var cert string
	if err := json.Unmarshal([]byte(a["$CERT"]), &cert); err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode([]byte(cert)); block == nil || block.Type != "CERTIFICATE" {
		t.Errorf("$CERT is not a quoted PEM certificate: %s", a["$CERT"])
	}
}

// TestSign: the certificate verifies against its CA, for its name and usage.
func TestSign(t *testing.T) {
	s, err := Sign("test-ca", &x509.Certificate{Subject: pkix.Name{CommonName: "svc.ns.svc"}, DNSNames: []string{"svc.ns.svc"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.CA) {
		t.Fatal("the CA is not PEM")
	}
	block, _ := pem.Decode(s.Cert)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "svc.ns.svc"}); err != nil {
		t.Errorf("the certificate does not verify: %v", err)
	}
	if _, err := tls.X509KeyPair(s.Cert, s.Key); err != nil {
		t.Errorf("the key is not the certificate's: %v", err)
	}
}
