package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Credentials are the files lapis keeps under DIR/pki.
type Credentials struct {
	CA         *x509.Certificate
	CAPEM      []byte
	Serving    tls.Certificate
	ClientCert []byte // admin client certificate (PEM)
	ClientKey  []byte // admin client key (PEM)
	AdminToken string
	// LoopbackToken is this process's own bearer token, for its loopback client: new at every
	// start and never written down, as kube-apiserver's privileged loopback token.
	LoopbackToken string
}

// LoadOrCreate reads the credentials under dir, creating what is missing. The serving
// certificate covers localhost, the loopback addresses and host (the listen address).
func LoadOrCreate(dir string, host string) (*Credentials, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	caCert, caKey, caPEM, err := loadOrCreateCA(pki)
	if err != nil {
		return nil, err
	}
	c := &Credentials{CA: caCert, CAPEM: caPEM}
	if c.Serving, err = loadOrCreateServing(pki, caCert, caKey, host); err != nil {
		return nil, err
	}
	if c.ClientCert, c.ClientKey, err = loadOrCreateLeaf(pki, "admin", caCert, caKey, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}); err != nil {
		return nil, err
	}
	if c.AdminToken, err = loadOrCreateToken(filepath.Join(pki, "admin.token")); err != nil {
		return nil, err
	}
	if c.LoopbackToken, err = newToken(); err != nil {
		return nil, err
	}
	return c, nil
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func template(cn string, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}, nil
}

func loadOrCreateCA(pki string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	return loadOrCreateCANamed(pki, "ca", "lapis-ca")
}

// loadOrCreateCANamed returns the CA pki/name.{crt,key}, made with common name cn when absent.
func loadOrCreateCANamed(pki, name, cn string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := filepath.Join(pki, name+".crt"), filepath.Join(pki, name+".key")
	if certPEM, err := os.ReadFile(certPath); err == nil {
		keyPEM, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, nil, nil, err
		}
		cert, key, err := parsePair(certPEM, keyPEM)
		return cert, key, certPEM, err
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl, err := template(cn, 10*365*24*time.Hour)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writeFiles(map[string][]byte{keyPath: keyPEM, certPath: certPEM}); err != nil {
		return nil, nil, nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key, certPEM, nil
}

func loadOrCreateServing(pki string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, host string) (tls.Certificate, error) {
	certPEM, keyPEM, err := loadOrCreateServingFor(pki, "serving", "lapis", ca, caKey, host)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// loadOrCreateServingFor returns the serving certificate pki/name.{crt,key}, made for
// localhost, the loopback addresses and host; one made for another host is replaced.
func loadOrCreateServingFor(pki, name, cn string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, host string) ([]byte, []byte, error) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	dns := []string{"localhost"}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	} else if host != "" && ip == nil {
		dns = append(dns, host)
	}
	certPEM, keyPEM, err := loadOrCreateLeaf(pki, name, ca, caKey, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: cn}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		t.IPAddresses, t.DNSNames = ips, dns
	})
	if err != nil {
		return nil, nil, err
	}
	if b, _ := pem.Decode(certPEM); b != nil {
		if leaf, err := x509.ParseCertificate(b.Bytes); err == nil && !covers(leaf, ips, dns) {
			_ = os.Remove(filepath.Join(pki, name+".crt"))
			return loadOrCreateServingFor(pki, name, cn, ca, caKey, host)
		}
	}
	return certPEM, keyPEM, nil
}

// EtcdClientCN is the common name of the client certificate other lapis processes present to
// an exposed embedded etcd; the etcd accepts no other.
const EtcdClientCN = "lapis-etcd-client"

// EtcdFiles name the PEM files for exposing the embedded etcd over TLS: its serving
// certificate, and the client certificate other lapis processes present to it (pass
// CAFile, ClientCert and ClientKey to their --etcd-cafile, --etcd-certfile, --etcd-keyfile).
// All are signed by lapis's CA, CAFile.
type EtcdFiles struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// LoadOrCreateEtcd makes sure the etcd certificates exist under dir/pki, signed by lapis's CA
// (created if missing); the serving certificate covers localhost, the loopback addresses and host.
func LoadOrCreateEtcd(dir, host string) (EtcdFiles, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return EtcdFiles{}, err
	}
	ca, caKey, _, err := loadOrCreateCA(pki)
	if err != nil {
		return EtcdFiles{}, err
	}
	if _, _, err := loadOrCreateServingFor(pki, "etcd-server", "lapis-etcd", ca, caKey, host); err != nil {
		return EtcdFiles{}, err
	}
	if _, _, err := loadOrCreateLeaf(pki, "etcd-client", ca, caKey, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: EtcdClientCN}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}); err != nil {
		return EtcdFiles{}, err
	}
	f := func(name string) string { return filepath.Join(pki, name) }
	return EtcdFiles{CAFile: f("ca.crt"), ServerCert: f("etcd-server.crt"), ServerKey: f("etcd-server.key"),
		ClientCert: f("etcd-client.crt"), ClientKey: f("etcd-client.key")}, nil
}

func covers(cert *x509.Certificate, ips []net.IP, dns []string) bool {
	for _, ip := range ips {
		if cert.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	for _, d := range dns {
		if cert.VerifyHostname(d) != nil {
			return false
		}
	}
	return true
}

func loadOrCreateLeaf(pki, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, shape func(*x509.Certificate)) ([]byte, []byte, error) {
	certPath, keyPath := filepath.Join(pki, name+".crt"), filepath.Join(pki, name+".key")
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	if err1 == nil && err2 == nil {
		return certPEM, keyPEM, nil
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := template(name, 5*365*24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	shape(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return certPEM, keyPEM, writeFiles(map[string][]byte{keyPath: keyPEM, certPath: certPEM})
}

func loadOrCreateToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	token, err := newToken()
	if err != nil {
		return "", err
	}
	return token, writeFiles(map[string][]byte{path: []byte(token + "\n")})
}

func newToken() (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf), nil
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("unreadable CA files")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	return cert, key, nil
}

// writeFiles writes private files atomically (write, then rename).
func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := WriteFileAtomic(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic writes data to path so that readers see the old file or the new, never a part.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
