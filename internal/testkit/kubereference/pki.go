package kubereference

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI names the certificates and keys kube-apiserver and kube-controller-manager run with, as
// the kube-reference script makes them with openssl: a CA (--client-ca-file, and the key
// kube-controller-manager signs with), an admin client certificate in system:masters, and a
// ServiceAccount key pair. Unlike the script's kube-apiserver, which signs its own serving
// certificate, this one serves with a certificate of the CA (loopback addresses, localhost and
// the kubernetes Service's names), so that one CA verifies it, a lapis given the same CA, and
// the kube-root-ca.crt both publish. The CA's key is ECDSA in SEC 1 form, which lapis reads as
// its own CA (DIR/pki/ca.{crt,key}).
type PKI struct {
	CACert, CAKey           string
	ClientCert, ClientKey   string
	ServingCert, ServingKey string
	SAKey, SAPub            string
}

// EnsurePKI makes the PKI in dir unless it is there already, so that a kube-apiserver started
// again in dir is the same server to its clients.
func EnsurePKI(dir string) (PKI, error) {
	f := func(name string) string { return filepath.Join(dir, name) }
	p := PKI{CACert: f("ca.crt"), CAKey: f("ca.key"), ClientCert: f("client.crt"), ClientKey: f("client.key"),
		ServingCert: f("serving.crt"), ServingKey: f("serving.key"), SAKey: f("sa.key"), SAPub: f("sa.pub")}
	if _, err := os.Stat(p.SAPub); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return PKI{}, err
	}
	ca, caKey, err := writeCA(p)
	if err != nil {
		return PKI{}, fmt.Errorf("CA: %w", err)
	}
	if err := writeLeaf(p.ClientCert, p.ClientKey, ca, caKey, adminClient); err != nil {
		return PKI{}, fmt.Errorf("admin client certificate: %w", err)
	}
	if err := writeLeaf(p.ServingCert, p.ServingKey, ca, caKey, apiserverServing); err != nil {
		return PKI{}, fmt.Errorf("serving certificate: %w", err)
	}
	if err := writeServiceAccountKey(p); err != nil {
		return PKI{}, fmt.Errorf("ServiceAccount key: %w", err)
	}
	return p, nil
}

func writeCA(p PKI) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := certTemplate("kube-reference-ca")
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(p.CAKey, "EC PRIVATE KEY", keyDER); err != nil {
		return nil, nil, err
	}
	if err := writePEM(p.CACert, "CERTIFICATE", der); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

// adminClient is the admin's client certificate: CN admin, O system:masters.
func adminClient() *x509.Certificate {
	tmpl := certTemplate("admin")
	tmpl.Subject.Organization = []string{"system:masters"}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return tmpl
}

// apiserverServing is a serving certificate for any loopback address a test binds, and for the
// names kube-apiserver's own self-signed certificate carries.
func apiserverServing() *x509.Certificate {
	tmpl := certTemplate("kube-apiserver")
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	tmpl.IPAddresses = []net.IP{net.ParseIP("::1"), net.ParseIP("10.96.0.1")}
	for i := 1; i <= 8; i++ {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IPv4(127, 0, 0, byte(i)))
	}
	return tmpl
}

// writeLeaf writes a certificate the CA signs, made from tmpl, and its new key.
func writeLeaf(certPath, keyPath string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl func() *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	t := tmpl()
	t.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(keyPath, "EC PRIVATE KEY", keyDER); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der)
}

// writeServiceAccountKey writes an RSA key, as the script's `openssl genrsa 2048`.
func writeServiceAccountKey(p PKI) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.SAKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)); err != nil {
		return err
	}
	return writePEM(p.SAPub, "PUBLIC KEY", pub)
}

func certTemplate(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
	}
}

func writePEM(path, kind string, der []byte) error {
	b := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if b == nil {
		return errors.New("encoding " + kind)
	}
	return os.WriteFile(path, b, 0o600)
}
