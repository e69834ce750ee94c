package authn

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

// TestSigningKey: the key is generated once under the data directory and kept (0600, whole);
// a signing key file is used as it is; key files add keys that verify tokens.
func TestSigningKey(t *testing.T) {
	dir := t.TempDir()
	first, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: dir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pki", "sa.key")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v (%v)", info, err)
	}
	data, _ := os.ReadFile(path)
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("pki holds %d files, want only sa.key", len(entries))
	}
	again, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: dir}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
		t.Error("the key changed on restart")
	}
	c := newCluster()
	c.use(again)
	if _, ok, err := again.AuthenticateToken(context.Background(), issue(t, first, c, nil)); !ok {
		t.Errorf("a token of the first start is refused after a restart: %v", err)
	}

	// A signing key file (RSA here), and the generated key of another data directory (a private
	// key file) as a key file: both sign tokens the first one verifies.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := keyutil.MarshalPrivateKeyToPEM(rsaKey)
	rsaFile := filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(rsaFile, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := build(Config{ServiceAccounts: ServiceAccountConfig{SigningKeyFile: rsaFile}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rsaToken := issue(t, signer, c, nil)
	if h := header(t, rsaToken); h["alg"] != "RS256" {
		t.Errorf("RSA key signs %v", h["alg"])
	}
	verifier, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir(), KeyFiles: []string{rsaFile, path}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.use(verifier)
	for name, token := range map[string]string{"rsa key file": rsaToken, "other data dir": issue(t, first, c, nil), "own key": issue(t, verifier, c, nil)} {
		if _, ok, err := verifier.AuthenticateToken(context.Background(), token); !ok {
			t.Errorf("%s: token refused: %v", name, err)
		}
	}
	stranger, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.use(stranger)
	if _, ok, err := stranger.AuthenticateToken(context.Background(), rsaToken); ok || err == nil {
		t.Error("a token of an unknown key authenticated")
	}
}
