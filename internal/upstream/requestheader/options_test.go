package requestheader

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// TestValidateWithClientCA: kube-apiserver 1.37's refusals of --requestheader-* flags.
func TestValidateWithClientCA(t *testing.T) {
	dir := t.TempDir()
	caA, caB := writeCA(t, dir, "a"), writeCA(t, dir, "b")
	both := filepath.Join(dir, "both.crt")
	if err := os.WriteFile(both, append(readFile(t, caA), readFile(t, caB)...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		opts     Options
		clientCA string
		uidGate  bool
		want     string // a substring of the errors; "" for none
	}{
		{name: "kubeadm's flags", uidGate: true, opts: Options{ClientCAFile: caB, UsernameHeaders: []string{"X-Remote-User"},
			GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"}, AllowedNames: []string{"front-proxy-client"}}},
		{name: "uid headers", uidGate: true, opts: Options{UIDHeaders: []string{"X-Remote-Uid", "X-Other-Uid"}}},
		{name: "uid headers without the standard one", uidGate: true, opts: Options{UIDHeaders: []string{"X-Other-Uid"}},
			want: "--requestheader-uid-headers is set without specifying the standard X-Remote-Uid header"},
		{name: "uid headers with the gate off", opts: Options{UIDHeaders: []string{"X-Remote-Uid"}},
			want: `--requestheader-uid-headers requires the "RemoteRequestHeaderUID" feature to be enabled`},
		{name: "a blank username header", uidGate: true, opts: Options{UsernameHeaders: []string{"X-Remote-User", " "}},
			want: `empty value in "requestheader-username-headers"`},
		{name: "a blank allowed name", uidGate: true, opts: Options{AllowedNames: []string{""}},
			want: `empty value in "requestheader-allowed-names"`},
		{name: "a non-standard username header only warns", uidGate: true, opts: Options{UsernameHeaders: []string{"X-User"}}},
		{name: "overlapping CAs without allowed names", uidGate: true, opts: Options{ClientCAFile: both}, clientCA: caA,
			want: "--requestheader-client-ca-file and --client-ca-file contain overlapping certificates"},
		{name: "overlapping CAs with allowed names", uidGate: true, opts: Options{ClientCAFile: both, AllowedNames: []string{"proxy"}}, clientCA: caA},
		{name: "separate CAs", uidGate: true, opts: Options{ClientCAFile: caB}, clientCA: caA},
	} {
		t.Run(c.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.RemoteRequestHeaderUID, c.uidGate)
			var msgs []string
			for _, err := range ValidateWithClientCA(&c.opts, c.clientCA) {
				msgs = append(msgs, err.Error())
			}
			got := strings.Join(msgs, "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("errors %q, want %q", got, c.want)
			}
		})
	}
}

func writeCA(t *testing.T, dir, name string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
