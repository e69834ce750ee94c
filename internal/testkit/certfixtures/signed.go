package certfixtures

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"
)

// Signed is a CA made for one certificate, and that certificate and its key, all PEM.
type Signed struct {
	CA, Cert, Key []byte
}

// Sign makes a CA named caCN, valid for a day, and a certificate of leaf's shape (its CN, names
// and usages; serial and validity are set here) that the CA signs.
func Sign(caCN string, leaf *x509.Certificate) (Signed, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Signed{}, err
	}
	ca := &x509.Certificate{Subject: pkix.Name{CommonName: caCN}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	validForADay(ca)
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Signed{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Signed{}, err
	}
	validForADay(leaf)
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return Signed{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Signed{}, err
	}
	return Signed{CA: encode("CERTIFICATE", caDER), Cert: encode("CERTIFICATE", der), Key: encode("EC PRIVATE KEY", keyDER)}, nil
}

func validForADay(c *x509.Certificate) {
	c.SerialNumber, _ = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	c.NotBefore, c.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
}

func encode(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
