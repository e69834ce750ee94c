package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/keyutil"

	"github.com/lapis-dev/lapis/internal/pki"
)

// signingKeyPath is where the generated signing key is kept, under the data directory (where
// kubeadm keeps its own: pki/sa.key).
func signingKeyPath(dataDir string) string {
	return filepath.Join(dataDir, "pki", "sa.key")
}

// signingKey reads the key tokens are signed with: --service-account-signing-key-file, or the
// key under the data directory, generated the first time.
func (c ServiceAccountConfig) signingKey() (crypto.Signer, error) {
	if c.SigningKeyFile != "" {
		key, err := keyutil.PrivateKeyFromFile(c.SigningKeyFile)
		if err != nil {
			return nil, fmt.Errorf("failed to parse service-account-issuer-key-file: %w", err)
		}
		return asSigner(key)
	}
	if c.DataDir == "" {
		return nil, errors.New("service account tokens need a signing key file or a data directory")
	}
	path := signingKeyPath(c.DataDir)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return generateSigningKey(path)
	}
	if err != nil {
		return nil, err
	}
	key, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return asSigner(key)
}

// generateSigningKey makes an ECDSA P-256 key (ES256 tokens; generating an RSA key would cost
// a fresh lapis most of its start-up) and writes it, mode 0600, so that it is there whole or
// not at all.
func generateSigningKey(path string) (crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("writing the service account signing key: %w", err)
	}
	return key, nil
}

func asSigner(key any) (crypto.Signer, error) {
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported service account signing key type %T", key)
	}
	return s, nil
}

// publicKeys are the keys that verify tokens: the signing key's and those of
// --service-account-key-file (public or private keys, as kube reads them).
func (c ServiceAccountConfig) publicKeys(signing crypto.Signer) ([]any, error) {
	keys := []any{signing.Public()}
	for _, file := range c.KeyFiles {
		more, err := keyutil.PublicKeysFromFile(file)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
	}
	return keys, nil
}
