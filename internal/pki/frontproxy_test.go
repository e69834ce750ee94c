package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// TestFrontProxy: the request-header CA is lapis's own, apart from its client CA; its client
// certificate is front-proxy-client's, for client authentication, kept across starts and made
// again when the CA is replaced.
func TestFrontProxy(t *testing.T) {
	dir := t.TempDir()
	creds, err := LoadOrCreate(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	files, err := LoadOrCreateFrontProxy(dir)
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	clientPEM, caPEM := read(files.ClientCert), read(files.CAFile)
	for _, c := range []struct {
		name string
		ok   func() bool
	}{
		{"kubeadm's file names", func() bool {
			return files.CAFile == filepath.Join(dir, "pki", "front-proxy-ca.crt") &&
				files.ClientCert == filepath.Join(dir, "pki", "front-proxy-client.crt") &&
				files.ClientKey == filepath.Join(dir, "pki", "front-proxy-client.key")
		}},
		{"a CA apart from the client CA", func() bool { return !bytes.Equal(caPEM, creds.CAPEM) }},
		{"the key is private", func() bool {
			info, err := os.Stat(files.ClientKey)
			return err == nil && info.Mode().Perm() == 0o600
		}},
		{"the pair matches", func() bool {
			_, err := tls.X509KeyPair(clientPEM, read(files.ClientKey))
			return err == nil
		}},
		{"CN front-proxy-client, a client certificate of the front-proxy CA", func() bool {
			leaf := parseCert(t, clientPEM)
			return leaf.Subject.CommonName == "front-proxy-client" && verifyClient(clientPEM, parseCert(t, caPEM)) == nil
		}},
		{"not a client certificate of lapis's CA", func() bool { return verifyClient(clientPEM, creds.CA) != nil }},
	} {
		if !c.ok() {
			t.Errorf("front proxy: %s: no", c.name)
		}
	}

	again, err := LoadOrCreateFrontProxy(dir)
	if err != nil || again != files || !bytes.Equal(read(files.ClientCert), clientPEM) || !bytes.Equal(read(files.CAFile), caPEM) {
		t.Errorf("a second start changed the front proxy's credentials (%v)", err)
	}

	// The CA replaced (removed by hand): the client certificate is made again, of the new CA.
	for _, f := range []string{"front-proxy-ca.crt", "front-proxy-ca.key"} {
		if err := os.Remove(filepath.Join(dir, "pki", f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadOrCreateFrontProxy(dir); err != nil {
		t.Fatal(err)
	}
	newClient := read(files.ClientCert)
	if bytes.Equal(newClient, clientPEM) || verifyClient(newClient, parseCert(t, read(files.CAFile))) != nil {
		t.Error("after the CA was replaced, the client certificate is not one of the new CA")
	}
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
