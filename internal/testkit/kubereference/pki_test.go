package kubereference

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"testing"
)

func TestEnsurePKI(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsurePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	ca := parseCert(t, p.CACert)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, c := range []struct {
		name  string
		file  string
		usage x509.ExtKeyUsage
		host  string // a name the certificate must be valid for ("" for a client)
		org   string
	}{
		{"admin client", p.ClientCert, x509.ExtKeyUsageClientAuth, "", "system:masters"},
		{"serving on 127.0.0.1", p.ServingCert, x509.ExtKeyUsageServerAuth, "127.0.0.1", ""},
		{"serving on 127.0.0.2", p.ServingCert, x509.ExtKeyUsageServerAuth, "127.0.0.2", ""},
		{"serving as localhost", p.ServingCert, x509.ExtKeyUsageServerAuth, "localhost", ""},
		{"serving as kubernetes.default.svc", p.ServingCert, x509.ExtKeyUsageServerAuth, "kubernetes.default.svc", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cert := parseCert(t, c.file)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: c.host, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
				t.Errorf("%s does not verify against the CA: %v", c.file, err)
			}
			if c.org != "" && !slices.Contains(cert.Subject.Organization, c.org) {
				t.Errorf("%s: organizations %q, want %s", c.file, cert.Subject.Organization, c.org)
			}
		})
	}
	for _, key := range []string{p.CAKey, p.ClientKey, p.ServingKey, p.SAKey, p.SAPub} {
		if _, err := os.Stat(key); err != nil {
			t.Errorf("key file: %v", err)
		}
	}
	again, err := EnsurePKI(dir)
	if err != nil || again != p || !parseCert(t, p.CACert).Equal(ca) {
		t.Errorf("EnsurePKI again: %+v, %v; want the same files, unchanged", again, err)
	}
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
