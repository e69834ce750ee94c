package acceptance

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// alice is what a front proxy says of the user it forwards, in kube's standard headers.
var alice = http.Header{
	"X-Remote-User":         {"alice"},
	"X-Remote-Uid":          {"uid-alice"},
	"X-Remote-Group":        {"devs", "ops"},
	"X-Remote-Extra-Scopes": {"read"},
}

// TestExtensionAPIServerAuthentication: without front-proxy flags, lapis makes its own
// front-proxy CA and client certificate (DIR/pki/front-proxy-*), trusts them with kubeadm's
// header flags, and says so in kube-system/extension-apiserver-authentication, as kube's
// controller writes it; the proxy's certificate makes the X-Remote-* headers the user, no
// other certificate does. Extension API servers may read that ConfigMap (kube's bootstrap Role).
func TestExtensionAPIServerAuthentication(t *testing.T) {
	l := startLapis(t)
	pki := filepath.Join(l.dataDir, "pki")
	data := extensionAuthData(t, l)
	want := map[string]string{
		"client-ca-file":                     readText(t, filepath.Join(pki, "ca.crt")),
		"requestheader-client-ca-file":       readText(t, filepath.Join(pki, "front-proxy-ca.crt")),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}
	wantData(t, data, want)

	proxy := clientPair(t, filepath.Join(pki, "front-proxy-client.crt"), filepath.Join(pki, "front-proxy-client.key"))
	admin := clientPair(t, filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	got := selfSubjectReview(t, l, &proxy, alice)
	if got.Username != "alice" || got.UID != "uid-alice" || !slices.Equal(got.Groups, []string{"devs", "ops", "system:authenticated"}) ||
		!slices.Equal(got.Extra["scopes"], authenticationv1.ExtraValue{"read"}) {
		t.Errorf("the front proxy's request is %+v, want alice with her uid, groups and extra", got)
	}
	if got := selfSubjectReview(t, l, &admin, alice); got.Username != "admin" {
		t.Errorf("a client certificate of lapis's CA with X-Remote-User is %q, want admin", got.Username)
	}
	if code, body := proxyRequest(t, l, nil, alice); code != http.StatusForbidden || !strings.Contains(body, `User \"system:anonymous\"`) {
		t.Errorf("X-Remote-User without a certificate: %d %s, want 403 for system:anonymous", code, body)
	}

	var role rbacv1.Role
	getJSON(t, l, &role, "-n", "kube-system", "get", "role", "extension-apiserver-authentication-reader")
	wantRule := rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{"extension-apiserver-authentication"}}
	if len(role.Rules) != 1 || !jsonEqual(mustJSON(t, role.Rules[0]), mustJSON(t, wantRule)) {
		t.Errorf("Role extension-apiserver-authentication-reader: %+v", role.Rules)
	}
	var binding rbacv1.RoleBinding
	getJSON(t, l, &binding, "-n", "kube-system", "get", "rolebinding", "system::extension-apiserver-authentication-reader")
	if binding.RoleRef.Name != "extension-apiserver-authentication-reader" || len(binding.Subjects) != 2 {
		t.Errorf("RoleBinding system::extension-apiserver-authentication-reader: %+v", binding)
	}
}

// TestExtensionAPIServerAuthenticationFlags: with kube-apiserver's flags, lapis trusts and
// publishes what they say (its client CA bundle with --client-ca-file's), makes no
// front-proxy credentials of its own, and reads the flags' own header names.
func TestExtensionAPIServerAuthenticationFlags(t *testing.T) {
	clientCA, _ := newTestCA(t)
	clientCAFile := writeFile(t, "client-ca.crt", string(pemBlock("CERTIFICATE", clientCA.Raw)))
	proxyCA, proxyKey := newTestCA(t)
	proxyCAFile := writeFile(t, "proxy-ca.crt", string(pemBlock("CERTIFICATE", proxyCA.Raw)))
	proxyCert, proxyKeyFile := newClientCert(t, proxyCA, proxyKey, "aggregator", "")
	l := startLapis(t, "--client-ca-file="+clientCAFile, "--requestheader-client-ca-file="+proxyCAFile,
		"--requestheader-allowed-names=aggregator", "--requestheader-username-headers=X-Remote-User,X-Proxy-User",
		"--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+proxyCert, "--proxy-client-key-file="+proxyKeyFile)
	pki := filepath.Join(l.dataDir, "pki")
	wantData(t, extensionAuthData(t, l), map[string]string{
		"client-ca-file":                     readText(t, filepath.Join(pki, "ca.crt")) + string(pemBlock("CERTIFICATE", clientCA.Raw)),
		"requestheader-client-ca-file":       string(pemBlock("CERTIFICATE", proxyCA.Raw)),
		"requestheader-allowed-names":        `["aggregator"]`,
		"requestheader-username-headers":     `["X-Remote-User","X-Proxy-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	})
	if _, err := os.Stat(filepath.Join(pki, "front-proxy-ca.crt")); err == nil {
		t.Error("lapis made its own front-proxy CA although the flags name one")
	}
	proxy := clientPair(t, proxyCert, proxyKeyFile)
	if got := selfSubjectReview(t, l, &proxy, http.Header{"X-Proxy-User": {"bob"}}); got.Username != "bob" {
		t.Errorf("the flags' front proxy naming bob in X-Proxy-User: %q", got.Username)
	}
}

// extensionAuthData waits for kube-system/extension-apiserver-authentication (written once
// lapis is ready) and returns its data.
func extensionAuthData(t *testing.T, l *lapisProc) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, errOut, err := l.kubectl("-n", "kube-system", "get", "configmap", "extension-apiserver-authentication", "-o", "json")
		if err == nil {
			var cm corev1.ConfigMap
			if err := json.Unmarshal([]byte(out), &cm); err != nil {
				t.Fatal(err)
			}
			return cm.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-system/extension-apiserver-authentication: %v %s", err, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wantData compares a ConfigMap's data with want, key by key, and wants no other key.
func wantData(t *testing.T, data, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if data[k] != v {
			t.Errorf("%s:\n%s\nwant\n%s", k, data[k], v)
		}
	}
	for k := range data {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s: %s", k, data[k])
		}
	}
}

// selfSubjectReview asks lapis who the request is, with cert (if any) and headers.
func selfSubjectReview(t *testing.T, l *lapisProc, cert *tls.Certificate, headers http.Header) authenticationv1.UserInfo {
	t.Helper()
	code, body := proxyRequest(t, l, cert, headers)
	var review authenticationv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(body), &review); code != http.StatusCreated || err != nil {
		t.Fatalf("SelfSubjectReview: %d %s (%v)", code, body, err)
	}
	return review.Status.UserInfo
}

// proxyRequest POSTs a SelfSubjectReview to lapis with cert (if any) and headers, as a front
// proxy would forward it.
func proxyRequest(t *testing.T, l *lapisProc, cert *tls.Certificate, headers http.Header) (int, string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(l.caData)
	tlsConfig := &tls.Config{RootCAs: roots}
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	req, err := http.NewRequest("POST", l.server+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		bytes.NewReader([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = headers.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func clientPair(t *testing.T, certFile, keyFile string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func getJSON(t *testing.T, l *lapisProc, into any, args ...string) {
	t.Helper()
	if err := json.Unmarshal([]byte(l.must(t, append(args, "-o", "json")...)), into); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
