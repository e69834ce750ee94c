package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

func TestCredentialsPersist(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreate(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreate(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if first.AdminToken != again.AdminToken || string(first.CAPEM) != string(again.CAPEM) {
		t.Error("credentials changed across restarts")
	}
	if len(first.AdminToken) < 32 {
		t.Errorf("admin token too short: %d", len(first.AdminToken))
	}
	info, err := os.Stat(filepath.Join(dir, "pki", "admin.token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v)", info.Mode(), err)
	}
	// A new listen host gets a serving certificate that covers it, signed by the same CA.
	other, err := LoadOrCreate(dir, "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(other.Serving.Certificate[0])
	if err := leaf.VerifyHostname("10.1.2.3"); err != nil {
		t.Error(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(first.CA)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Error(err)
	}
}
