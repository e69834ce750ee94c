package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// client is a client certificate of the CA.
func (ca *testCA) client(t *testing.T, cn string, orgs ...string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// request is a GET /api with the given headers ("Name: value") and client certificates.
func request(headers []string, certs ...*x509.Certificate) *http.Request {
	req := httptest.NewRequest("GET", "/api", nil)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	if len(certs) > 0 {
		req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	}
	return req
}

func bearer(token string) []string { return []string{"Authorization: Bearer " + token} }

// outcome is what an authentication gave, for comparison: the user and groups, or the error.
type outcome struct {
	user   string
	uid    string
	groups []string
	extra  map[string][]string
	err    string // a substring of the error; "" for none
}

func outcomeOf(resp *authenticator.Response, ok bool, err error) outcome {
	var o outcome
	if err != nil {
		o.err = err.Error()
	}
	if ok && resp != nil && resp.User != nil {
		o.user, o.uid, o.groups, o.extra = resp.User.GetName(), resp.User.GetUID(), resp.User.GetGroups(), resp.User.GetExtra()
	}
	return o
}

// matches compares a result with an expectation: an error is matched by substring, and the
// expectation's extra only by the keys it names.
func (o outcome) matches(want outcome) bool {
	if want.err != "" || o.err != "" {
		return want.err != "" && strings.Contains(o.err, want.err) && o.user == ""
	}
	if o.user != want.user || o.uid != want.uid || !slices.Equal(o.groups, want.groups) {
		return false
	}
	for k, v := range want.extra {
		if !slices.Equal(o.extra[k], v) {
			return false
		}
	}
	return true
}

// claims decodes a JWT's payload, unverified.
func claims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// header decodes a JWT's header.
func header(t *testing.T, token string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// cluster is a fake clientset holding the namespace ns1's ServiceAccount sa1, its Pod p1 on
// the Node n1, and the Secret s1, with the getter kube-apiserver would build over it (its
// informers never started: every lookup reaches the client).
type cluster struct {
	client *fake.Clientset
	sa     *corev1.ServiceAccount
	pod    *corev1.Pod
	secret *corev1.Secret
	node   *corev1.Node
}

func newCluster(extra ...runtime.Object) *cluster {
	c := &cluster{
		sa:     &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa1", Namespace: "ns1", UID: "sa-uid"}},
		pod:    &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "ns1", UID: "pod-uid"}, Spec: corev1.PodSpec{ServiceAccountName: "sa1", NodeName: "n1"}},
		secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: "ns1", UID: "secret-uid"}},
		node:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
	}
	c.client = fake.NewClientset(append([]runtime.Object{c.sa, c.pod, c.secret, c.node}, extra...)...)
	return c
}

// use makes a authenticate ServiceAccount tokens against the cluster.
func (c *cluster) use(a *Authenticator) {
	a.UseServiceAccounts(NewGetter(c.client, informers.NewSharedInformerFactory(c.client, 0)))
}
