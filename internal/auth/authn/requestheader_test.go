package authn

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// frontProxyConfig is kubeadm's request-header configuration (with kube 1.37's UID header)
// over the CA ca, allowing the names given.
func frontProxyConfig(t *testing.T, ca *testCA, allowed ...string) *authenticatorfactory.RequestHeaderConfig {
	t.Helper()
	provider, err := dynamiccertificates.NewStaticCAContent("request-header", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}))
	if err != nil {
		t.Fatal(err)
	}
	return &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
		CAContentProvider:   provider,
		AllowedClientNames:  headerrequest.StaticStringSlice(allowed),
	}
}

// TestRequestHeader: a front proxy's certificate (of the request-header CA, with an allowed
// name) makes the X-Remote-* headers the request's user; nothing else does.
func TestRequestHeader(t *testing.T) {
	clientCA, proxyCA := newTestCA(t), newTestCA(t)
	proxy := proxyCA.client(t, "front-proxy-client")
	notAllowed := proxyCA.client(t, "mallory")
	carol := clientCA.client(t, "carol", "g1")
	alice := []string{"X-Remote-User: alice", "X-Remote-Uid: uid-alice", "X-Remote-Group: dev", "X-Remote-Group: ops",
		"X-Remote-Extra-Scopes: read", "X-Remote-Extra-Scopes: write", "X-Remote-Extra-Acme.com%2fteam: blue"}
	aliceUser := outcome{user: "alice", uid: "uid-alice", groups: []string{"dev", "ops", "system:authenticated"},
		extra: map[string][]string{"scopes": {"read", "write"}, "acme.com/team": {"blue"}}}
	anonymous := outcome{user: "system:anonymous", groups: []string{"system:unauthenticated"}}
	tests := []struct {
		name      string
		allowed   []string
		anonymous bool
		headers   []string
		cert      *x509.Certificate
		want      outcome
		ok        bool
	}{
		{name: "front proxy", allowed: []string{"front-proxy-client"}, headers: alice, cert: proxy, want: aliceUser, ok: true},
		{name: "front proxy, anonymous on", allowed: []string{"front-proxy-client"}, anonymous: true, headers: alice, cert: proxy, want: aliceUser, ok: true},
		{name: "front proxy, any name allowed", headers: alice, cert: notAllowed, want: aliceUser, ok: true},
		{name: "a client certificate is its own user", allowed: []string{"front-proxy-client"}, headers: alice, cert: carol,
			want: outcome{user: "carol", groups: []string{"g1", "system:authenticated"}}, ok: true},
		{name: "no certificate", allowed: []string{"front-proxy-client"}, headers: alice, want: outcome{}},
		{name: "no certificate, anonymous on", allowed: []string{"front-proxy-client"}, anonymous: true, headers: alice, want: anonymous, ok: true},
		{name: "a name not allowed", allowed: []string{"front-proxy-client"}, anonymous: true, headers: alice, cert: notAllowed,
			want: outcome{err: `x509: subject with cn=mallory is not in the allowed list`}},
		{name: "front proxy without a user", allowed: []string{"front-proxy-client"}, anonymous: true, cert: proxy,
			want: outcome{err: "x509: certificate signed by unknown authority"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := build(Config{ClientCAs: clientCA.pool, RequestHeader: frontProxyConfig(t, proxyCA, tt.allowed...), Anonymous: tt.anonymous,
				ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			req := request(tt.headers)
			if tt.cert != nil {
				req = request(tt.headers, tt.cert)
			}
			resp, ok, err := a.AuthenticateRequest(req)
			if got := outcomeOf(resp, ok, err); ok != tt.ok || !got.matches(tt.want) || (tt.want.extra != nil && len(got.extra) != len(tt.want.extra)) {
				t.Errorf("got %+v ok=%v, want %+v ok=%v", got, ok, tt.want, tt.ok)
			}
			// Once authenticated, the front-proxy headers go, whoever the request is.
			for name := range req.Header {
				if ok && strings.HasPrefix(strings.ToLower(name), "x-remote-") {
					t.Errorf("header %s left on an authenticated request", name)
				}
			}
		})
	}
}

// TestRequestHeaderCustomHeaders: the flags' own header names are read, and cleared once the
// request is authenticated, whoever it is.
func TestRequestHeaderCustomHeaders(t *testing.T) {
	clientCA, proxyCA := newTestCA(t), newTestCA(t)
	rh := frontProxyConfig(t, proxyCA)
	rh.UsernameHeaders = headerrequest.StaticStringSlice{"X-Proxy-User"}
	rh.GroupHeaders = headerrequest.StaticStringSlice{"X-Proxy-Group"}
	a, err := build(Config{ClientCAs: clientCA.pool, RequestHeader: rh, ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cert *x509.Certificate
		want string
	}{
		{"front proxy", proxyCA.client(t, "p"), "bob"},
		{"client certificate", clientCA.client(t, "carol"), "carol"},
	} {
		req := request([]string{"X-Proxy-User: bob", "X-Proxy-Group: g", "X-Remote-User: alice"}, c.cert)
		resp, ok, err := a.AuthenticateRequest(req)
		if !ok || err != nil || resp.User.GetName() != c.want {
			t.Errorf("%s: %+v ok=%v, want %s", c.name, outcomeOf(resp, ok, err), ok, c.want)
		}
		if got := req.Header.Get("X-Proxy-User") + req.Header.Get("X-Proxy-Group"); got != "" {
			t.Errorf("%s: the proxy's headers are left: %q", c.name, got)
		}
	}
}
