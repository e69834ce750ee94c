package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/pki"
)

// writeCA makes a CA and a serving certificate it signs for 127.0.0.1, as envtest does, and
// writes the certificate and key as certFile and keyFile.
func writeCA(t *testing.T, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "test-serving"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

func TestServingCertificate(t *testing.T) {
	dir := t.TempDir()
	creds, err := pki.LoadOrCreate(filepath.Join(dir, "data"), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	own := creds.Serving.Certificate[0]
	other, otherKey := filepath.Join(dir, "other.crt"), filepath.Join(dir, "other.key")
	writeCA(t, other, otherKey)
	otherPEM, _ := os.ReadFile(other)
	otherBlock, _ := pem.Decode(otherPEM)

	certDir := filepath.Join(dir, "certs")
	for _, c := range []struct {
		name    string
		cfg     Config
		want    []byte
		wantErr string
	}{
		{name: "lapis's own", want: own},
		{name: "cert dir without certificates: lapis's own, written there", cfg: Config{CertDir: certDir}, want: own},
		{name: "cert dir with them: read", cfg: Config{CertDir: certDir}, want: own},
		{name: "tls files over the cert dir", cfg: Config{CertDir: certDir, TLSCertFile: other, TLSPrivateKeyFile: otherKey}, want: otherBlock.Bytes},
		{name: "certificate without key", cfg: Config{TLSCertFile: other}, wantErr: "go together"},
		{name: "unreadable pair", cfg: Config{TLSCertFile: other, TLSPrivateKeyFile: filepath.Join(dir, "nope")}, wantErr: "--tls-cert-file"},
	} {
		got, err := servingCertificate(c.cfg, creds)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || string(got.Certificate[0]) != string(c.want) {
			t.Errorf("%s: wrong certificate (%v)", c.name, err)
		}
	}
	// What the cert dir got verifies with lapis's CA, as kube's self-signed pair verifies.
	written, err := tls.LoadX509KeyPair(filepath.Join(certDir, "apiserver.crt"), filepath.Join(certDir, "apiserver.key"))
	if err != nil || len(written.Certificate) != 2 {
		t.Fatalf("written pair: %v, %d certificates (want the serving certificate, then the CA)", err, len(written.Certificate))
	}
	if info, _ := os.Stat(filepath.Join(certDir, "apiserver.key")); info.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", info.Mode().Perm())
	}
}

// TestServeWithOwnCertificate: with --tls-cert-file lapis serves that certificate to clients
// (trusting its CA suffices) and still reaches itself (the loopback, by its own name): it
// starts, which needs its loopback informers, and answers.
func TestServeWithOwnCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	pool := writeCA(t, certFile, keyFile)
	srv, err := Start(context.Background(), Config{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0", TLSCertFile: certFile, TLSPrivateKeyFile: keyFile},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + srv.Addr().String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("/readyz: %d %q", resp.StatusCode, body)
	}
	// Others asking for the loopback's name get the loopback's certificate, which no one but
	// lapis trusts.
	conn, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: pool, ServerName: loopbackServerName})
	if err == nil {
		conn.Close()
		t.Error("the loopback's certificate verified with another CA")
	}
}
