package acceptance

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// route is one request a served resource answers: verb on a collection or a named object, of
// the resource or one of its subresources.
type route struct {
	verb, method, path, contentType string
}

// routesOf lists a request per verb that discovery says each resource and subresource serves,
// in namespace ns for namespaced ones. Writes are dry runs: the server keeps nothing.
func routesOf(t *testing.T, l *lapisProc, ns string) []route {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var routes []route
	for _, list := range lists {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		prefix := "/apis/" + list.GroupVersion
		if gv.Group == "" {
			prefix = "/api/" + gv.Version
		}
		for _, r := range list.APIResources {
			resource, sub, _ := strings.Cut(r.Name, "/")
			collection := prefix + "/" + resource
			if r.Namespaced {
				collection = prefix + "/namespaces/" + ns + "/" + resource
			}
			named := collection + "/x"
			if sub != "" {
				named += "/" + sub
			}
			for _, verb := range r.Verbs {
				switch verb {
				case "list":
					routes = append(routes, route{verb, http.MethodGet, collection, ""})
				case "watch":
					routes = append(routes, route{verb, http.MethodGet, collection + "?watch=1&timeoutSeconds=1", ""})
				case "deletecollection":
					routes = append(routes, route{verb, http.MethodDelete, collection + "?dryRun=All&labelSelector=nothing%3Dhere", ""})
				case "create":
					target := collection
					if sub != "" {
						target = named
					}
					routes = append(routes, route{verb, http.MethodPost, target + "?dryRun=All", "application/json"})
				case "get":
					routes = append(routes, route{verb, http.MethodGet, named, ""})
				case "update":
					routes = append(routes, route{verb, http.MethodPut, named + "?dryRun=All", "application/json"})
				case "patch":
					routes = append(routes, route{verb, http.MethodPatch, named + "?dryRun=All", "application/merge-patch+json"})
				case "delete":
					routes = append(routes, route{verb, http.MethodDelete, named + "?dryRun=All", ""})
				}
			}
		}
	}
	return routes
}

// TestEveryRouteAuthorized: for every route lapis serves, an identity with no role is refused
// with kube's 403, an anonymous request too, and one without credentials when anonymous
// requests are off is 401; bound to cluster-admin, the same identity gets past authorization.
func TestEveryRouteAuthorized(t *testing.T) {
	l := startLapis(t)
	l.must(t, "create", "namespace", "authz")
	routes := routesOf(t, l, "authz")
	if len(routes) < 200 {
		t.Fatalf("discovery gave %d routes, want every built-in resource's", len(routes))
	}
	send := func(r route, user string) (int, metav1.Status) { return sendAs(t, l, r, user) }
	for _, r := range routes {
		code, status := send(r, "nobody")
		if strings.Contains(r.path, "/selfsubject") {
			// Every authenticated user may ask about themself (system:basic-user).
		} else if code != http.StatusForbidden || status.Reason != metav1.StatusReasonForbidden ||
			!strings.Contains(status.Message, fmt.Sprintf(`User "nobody" cannot %s resource`, r.verb)) {
			t.Errorf("%s %s as a user without roles: %d %q, want kube's 403", r.method, r.path, code, status.Message)
		}
		if code, status := send(r, ""); code != http.StatusForbidden ||
			!strings.Contains(status.Message, fmt.Sprintf(`User "system:anonymous" cannot %s resource`, r.verb)) {
			t.Errorf("%s %s anonymously: %d %q, want kube's 403", r.method, r.path, code, status.Message)
		}
	}
	for _, path := range []string{"/api", "/apis", "/openapi/v2", "/debug/pprof/"} {
		if code, status := send(route{"get", http.MethodGet, path, ""}, ""); code != http.StatusForbidden ||
			status.Message != fmt.Sprintf(`forbidden: User "system:anonymous" cannot get path %q`, path) {
			t.Errorf("anonymous GET %s: %d %q, want kube's 403", path, code, status.Message)
		}
	}

	l.must(t, "create", "clusterrolebinding", "somebody-admin", "--clusterrole=cluster-admin", "--user=somebody")
	poll.Eventually(t, 10*time.Second, "the binding takes effect", func() (bool, string) {
		code, status := send(routes[0], "somebody")
		return code != http.StatusForbidden, status.Message
	})
	for _, r := range routes {
		if code, status := send(r, "somebody"); code == http.StatusForbidden || code == http.StatusUnauthorized {
			t.Errorf("%s %s as cluster-admin: %d %q", r.method, r.path, code, status.Message)
		}
	}

	closed := startLapis(t, "--anonymous-auth=false")
	closedRoutes := routesOf(t, closed, "default")
	for _, r := range append(closedRoutes[:20:20], route{"get", http.MethodGet, "/healthz", ""}, route{"get", http.MethodGet, "/version", ""}) {
		if code, status := sendAs(t, closed, r, ""); code != http.StatusUnauthorized || status.Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("%s %s without credentials, anonymous off: %d %q, want 401", r.method, r.path, code, status.Message)
		}
	}
}

// clients keeps one client per server, so that requests reuse connections.
var clients = map[*lapisProc]*http.Client{}

// sendAs makes the request as user (impersonated by the admin), or anonymously when user is "".
func sendAs(t *testing.T, l *lapisProc, r route, user string) (int, metav1.Status) {
	t.Helper()
	client, ok := clients[l]
	if !ok {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(l.caData)
		client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		clients[l] = client
	}
	req, err := http.NewRequest(r.method, l.server+r.path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+l.token)
		req.Header.Set("Impersonate-User", user)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	var status metav1.Status
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &status)
	return resp.StatusCode, status
}

// TestServiceAccountTokens: tokens from the TokenRequest API and from legacy token Secrets
// authenticate as their ServiceAccount, RBAC applies to them, TokenReview answers for them,
// and a token bound to a Pod stops working when the Pod is gone.
func TestServiceAccountTokens(t *testing.T) {
	l := startLapis(t)
	l.must(t, "create", "namespace", "robots")
	poll.Eventually(t, 10*time.Second, "the default ServiceAccount", func() (bool, string) {
		_, errOut, err := l.kubectl("-n", "robots", "get", "serviceaccount", "default")
		return err == nil, errOut
	})
	whoami := func(token string) (string, string, error) {
		return l.kubectl("--token="+token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	}
	token := strings.TrimSpace(l.must(t, "-n", "robots", "create", "token", "default"))
	out, errOut, err := whoami(token)
	wantEqual(t, "whoami with a TokenRequest token", out+errOut,
		`system:serviceaccount:robots:default ["system:serviceaccounts","system:serviceaccounts:robots","system:authenticated"]`)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, _ = l.kubectl("--token="+token, "-n", "robots", "get", "pods")
	wantContains(t, "a ServiceAccount without roles", errOut,
		`pods is forbidden: User "system:serviceaccount:robots:default" cannot list resource "pods" in API group "" in the namespace "robots"`)
	l.must(t, "-n", "robots", "create", "rolebinding", "robots-view", "--clusterrole=view", "--serviceaccount=robots:default")
	poll.Eventually(t, 10*time.Second, "the binding applies", func() (bool, string) {
		_, errOut, err := l.kubectl("--token="+token, "-n", "robots", "get", "pods")
		return err == nil, errOut
	})

	review := l.mustIn(t, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+token+`"}}`,
		"create", "-f", "-", "-o", "jsonpath={.status.authenticated} {.status.user.username}")
	wantEqual(t, "TokenReview", review, "true system:serviceaccount:robots:default")

	// A token bound to a Pod works while the Pod exists.
	l.mustIn(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, "-n", "robots", "create", "-f", "-")
	bound := strings.TrimSpace(l.must(t, "-n", "robots", "create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=p"))
	if _, errOut, err := whoami(bound); err != nil {
		t.Fatalf("a token bound to an existing Pod: %v %s", err, errOut)
	}
	l.must(t, "-n", "robots", "delete", "pod", "p", "--grace-period=0", "--force")
	poll.Eventually(t, 15*time.Second, "a token bound to a deleted Pod is refused", func() (bool, string) {
		out, errOut, err := whoami(bound)
		return err != nil && strings.Contains(errOut, "Unauthorized"), out + errOut
	})

	// A token bound to a Secret works while the Secret exists.
	l.must(t, "-n", "robots", "create", "secret", "generic", "anchor", "--from-literal=k=v")
	boundToSecret := strings.TrimSpace(l.must(t, "-n", "robots", "create", "token", "default", "--bound-object-kind=Secret", "--bound-object-name=anchor"))
	if _, errOut, err := whoami(boundToSecret); err != nil {
		t.Fatalf("a token bound to an existing Secret: %v %s", err, errOut)
	}
	l.must(t, "-n", "robots", "delete", "secret", "anchor")
	poll.Eventually(t, 15*time.Second, "a token bound to a deleted Secret is refused", func() (bool, string) {
		out, errOut, err := whoami(boundToSecret)
		return err != nil && strings.Contains(errOut, "Unauthorized"), out + errOut
	})

	// A legacy token Secret is filled in by the token controller and authenticates.
	l.mustIn(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"legacy","annotations":{"kubernetes.io/service-account.name":"default"}},"type":"kubernetes.io/service-account-token"}`,
		"-n", "robots", "create", "-f", "-")
	var legacy string
	poll.Eventually(t, 15*time.Second, "the legacy token Secret is filled", func() (bool, string) {
		out, errOut, _ := l.kubectl("-n", "robots", "get", "secret", "legacy", "-o", "jsonpath={.data.token}")
		legacy = out
		return out != "", errOut
	})
	decoded, err := base64Decode(legacy)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, _ = whoami(decoded)
	wantContains(t, "whoami with a legacy token", out+errOut, "system:serviceaccount:robots:default")
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// TestIdentities: users from a client CA (--client-ca-file) and a token file
// (--token-auth-file) are who kube-apiserver says they are, get what RBAC grants them, and
// may impersonate only with the impersonate verb; the admin may impersonate anyone.
func TestIdentities(t *testing.T) {
	caCert, caKey := newTestCA(t)
	caFile := writeFile(t, "ca.crt", string(pemBlock("CERTIFICATE", caCert.Raw)))
	certFile, keyFile := newClientCert(t, caCert, caKey, "carol", "qa")
	tokens := writeFile(t, "tokens.csv", "dave-token-0123456789,dave,1002,\"ops,devs\"\n")
	l := startLapis(t, "--client-ca-file="+caFile, "--token-auth-file="+tokens)
	// Clients of lapis without the admin's kubeconfig: its address and CA only.
	bare := []string{"--kubeconfig=" + writeFile(t, "empty-kubeconfig", ""), "--server=" + l.server,
		"--certificate-authority=" + writeFile(t, "lapis-ca.crt", string(l.caData))}
	asCarol := append(bare[:3:3], "--client-certificate="+certFile, "--client-key="+keyFile)
	asDave := []string{"--token=dave-token-0123456789"}

	whoami := func(as []string) string {
		out, errOut, _ := l.kubectl(append(as, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")...)
		return out + errOut
	}
	wantEqual(t, "carol's certificate", whoami(asCarol), `carol ["qa","system:authenticated"]`)
	wantEqual(t, "dave's token", whoami(asDave), `dave ["ops","devs","system:authenticated"]`)

	l.must(t, "create", "namespace", "team")
	_, errOut, _ := l.kubectl(append(asDave, "-n", "team", "get", "configmaps")...)
	wantContains(t, "dave without a role", errOut, `configmaps is forbidden: User "dave" cannot list resource "configmaps" in API group "" in the namespace "team"`)
	l.must(t, "-n", "team", "create", "rolebinding", "devs-edit", "--clusterrole=edit", "--group=devs")
	l.must(t, "-n", "team", "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps")
	l.must(t, "-n", "team", "create", "rolebinding", "carol-reads", "--role=cm-reader", "--user=carol")
	poll.Eventually(t, 10*time.Second, "dave's group binding applies", func() (bool, string) {
		_, errOut, err := l.kubectl(append(asDave, "-n", "team", "create", "configmap", "from-dave")...)
		return err == nil, errOut
	})
	poll.Eventually(t, 10*time.Second, "carol may read", func() (bool, string) {
		out, errOut, err := l.kubectl(append(asCarol, "-n", "team", "get", "configmap", "from-dave", "-o", "name")...)
		return err == nil && strings.TrimSpace(out) == "configmap/from-dave", errOut
	})
	_, errOut, _ = l.kubectl(append(asCarol, "-n", "team", "delete", "configmap", "from-dave")...)
	wantContains(t, "carol deleting", errOut, `configmaps "from-dave" is forbidden: User "carol" cannot delete resource "configmaps" in API group "" in the namespace "team"`)
	out, _, _ := l.kubectl(append(asCarol, "auth", "can-i", "list", "configmaps", "-n", "team")...)
	wantEqual(t, "carol can-i list", strings.TrimSpace(out), "yes")
	out, _, _ = l.kubectl(append(asCarol, "auth", "can-i", "create", "configmaps", "-n", "team")...)
	wantEqual(t, "carol can-i create", strings.TrimSpace(out), "no")

	// Impersonation: refused to carol, allowed to the admin (system:masters).
	_, errOut, _ = l.kubectl(append(asCarol, "--as=dave", "-n", "team", "get", "configmaps")...)
	// kube 1.37's constrained impersonation words the refusal of a user who may impersonate
	// nothing in terms of the request (test/against-kube-apiserver checks it against kube-apiserver).
	wantContains(t, "carol impersonating dave", errOut, `configmaps is forbidden: User "carol" cannot impersonate-on:user-info:list resource "configmaps" in API group "" in the namespace "team"`)
	out, errOut, _ = l.kubectl("--as=dave", "--as-group=devs", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	wantEqual(t, "the admin impersonating dave", out+errOut, `dave ["devs","system:authenticated"]`)
	out, errOut, _ = l.kubectl("--as=dave", "--as-uid=1234", "--as-group=devs", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.uid}")
	wantEqual(t, "the admin impersonating dave with a uid", out+errOut, `dave 1234`)
	_, errOut, _ = l.kubectl("--as=nobody", "-n", "team", "create", "configmap", "x")
	wantContains(t, "the admin impersonating a user without roles", errOut, `configmaps is forbidden: User "nobody" cannot create resource "configmaps" in API group "" in the namespace "team"`)

	// A certificate of another CA is refused (401), not taken for anonymous.
	otherCA, otherKey := newTestCA(t)
	strangerCert, strangerKey := newClientCert(t, otherCA, otherKey, "mallory", "")
	_, errOut, _ = l.kubectl(append(bare[:3:3], "--client-certificate="+strangerCert, "--client-key="+strangerKey, "get", "ns")...)
	wantContains(t, "a certificate of an unknown CA", errOut, "Unauthorized")
}

func newTestCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// newClientCert writes a client certificate of ca for user (CN) in group (O) and its key.
func newClientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, user, group string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	subject := pkix.Name{CommonName: user}
	if group != "" {
		subject.Organization = []string{group}
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: subject, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, user+".crt", string(pemBlock("CERTIFICATE", der))),
		writeFile(t, user+".key", string(pemBlock("EC PRIVATE KEY", keyDER)))
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
