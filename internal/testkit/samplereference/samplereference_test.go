package samplereference

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
)

func TestNewServingCertificate(t *testing.T) {
	name := ServerName("sample-api", "aggregator")
	if name != "sample-api.aggregator.svc" {
		t.Fatalf("ServerName = %q, want sample-api.aggregator.svc", name)
	}
	c, err := NewServingCertificate(name)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CA) {
		t.Fatalf("CA is not a PEM certificate: %s", c.CA)
	}
	leaf := parse(t, c.Cert)
	for _, tc := range []struct {
		host  string
		valid bool
	}{
		{name, true}, // what the aggregator verifies
		{"localhost", false},
		{"127.0.0.1", false},
		{"sample-api.other.svc", false},
	} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if (err == nil) != tc.valid {
			t.Errorf("verifying for %q: %v; want valid=%v", tc.host, err, tc.valid)
		}
	}
	if leaf.Subject.CommonName != name {
		t.Errorf("CN %q, want %q (the e2e spec's)", leaf.Subject.CommonName, name)
	}
	if block, _ := pem.Decode(c.Key); block == nil || !strings.Contains(block.Type, "PRIVATE KEY") {
		t.Errorf("key is not a PEM private key: %s", c.Key)
	}
}

func TestArgs(t *testing.T) {
	got := args("http://127.0.0.1:2379", "/d/tls.crt", "/d/tls.key", "/d/kubeconfig", 4443)
	for _, want := range []string{
		// the e2e spec's container arguments
		"--etcd-servers=http://127.0.0.1:2379", "--tls-cert-file=/d/tls.crt", "--tls-private-key-file=/d/tls.key",
		"--audit-log-path=-", "--audit-log-maxage=0", "--audit-log-maxbackup=0",
		// a process's in place of the pod's
		"--bind-address=127.0.0.1", "--secure-port=4443", "--authentication-kubeconfig=/d/kubeconfig",
		"--authorization-kubeconfig=/d/kubeconfig", "--kubeconfig=/d/kubeconfig",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("args lack %s: %q", want, got)
		}
	}
}

func parse(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("no PEM: %s", b)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
