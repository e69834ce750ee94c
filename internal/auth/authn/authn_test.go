package authn

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

const adminSecret = "admin-secret-token"

// tokenFile writes a static token file in kube's CSV format.
func tokenFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	data := "alice-token,alice,uid-alice,\"dev,ops\"\nbob-token,bob,uid-bob\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuthenticateRequest: who a request is, as kube-apiserver's chain decides it.
func TestAuthenticateRequest(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	carol := ca.client(t, "carol", "g1", "g2")
	stranger := other.client(t, "mallory", "system:masters")
	files := tokenFile(t)
	ws := []string{"Connection: Upgrade", "Upgrade: websocket",
		"Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("bob-token")) + ", v4.channel.k8s.io"}
	anonymous := outcome{user: "system:anonymous", groups: []string{"system:unauthenticated"}}
	admin := outcome{user: "admin", groups: []string{"system:masters", "system:authenticated"}}
	tests := []struct {
		name      string
		anonymous bool
		headers   []string
		cert      bool // carol's certificate
		strange   bool // a certificate of another CA
		want      outcome
		ok        bool
	}{
		{name: "nothing", want: outcome{}, ok: false},
		{name: "nothing, anonymous on", anonymous: true, want: anonymous, ok: true},
		{name: "admin token", headers: bearer(adminSecret), want: admin, ok: true},
		{name: "admin token, lower-case scheme", headers: []string{"Authorization: bearer " + adminSecret}, want: admin, ok: true},
		{name: "token file user with groups", headers: bearer("alice-token"), want: outcome{user: "alice", uid: "uid-alice", groups: []string{"dev", "ops", "system:authenticated"}}, ok: true},
		{name: "token file user", headers: bearer("bob-token"), want: outcome{user: "bob", uid: "uid-bob", groups: []string{"system:authenticated"}}, ok: true},
		{name: "unknown token", headers: bearer("nope"), want: outcome{err: "invalid bearer token"}},
		{name: "unknown token is not anonymous", anonymous: true, headers: bearer("nope"), want: outcome{err: "invalid bearer token"}},
		{name: "a JWT of no issuer of ours", headers: bearer("eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.x"), want: outcome{err: "invalid bearer token"}},
		// Basic credentials are no credentials to kube-apiserver 1.37.
		{name: "basic auth, anonymous on", anonymous: true, headers: []string{"Authorization: Basic YWRtaW46eA=="}, want: anonymous, ok: true},
		{name: "basic auth", headers: []string{"Authorization: Basic YWRtaW46eA=="}, want: outcome{}, ok: false},
		{name: "client certificate", cert: true, want: outcome{user: "carol", groups: []string{"g1", "g2", "system:authenticated"}}, ok: true},
		{name: "certificate of another CA", strange: true, anonymous: true, want: outcome{err: "x509: certificate signed by unknown authority"}},
		{name: "certificate wins over a bad token", cert: true, headers: bearer("nope"), want: outcome{user: "carol", groups: []string{"g1", "g2", "system:authenticated"}}, ok: true},
		{name: "websocket bearer protocol", headers: ws, want: outcome{user: "bob", uid: "uid-bob", groups: []string{"system:authenticated"}}, ok: true},
	}
	for _, anon := range []bool{false, true} {
		a, err := build(Config{ClientCAs: ca.pool, AdminToken: adminSecret, TokenAuthFile: files, Anonymous: anon,
			ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, tokenSuccessCacheTTL)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			if tt.anonymous != anon {
				continue
			}
			t.Run(tt.name, func(t *testing.T) {
				var req = request(tt.headers)
				if tt.cert {
					req = request(tt.headers, carol)
				}
				if tt.strange {
					req = request(tt.headers, stranger)
				}
				resp, ok, err := a.AuthenticateRequest(req)
				if got := outcomeOf(resp, ok, err); ok != tt.ok || !got.matches(tt.want) {
					t.Errorf("got %+v ok=%v, want %+v ok=%v", got, ok, tt.want, tt.ok)
				}
			})
		}
	}
}

// TestAuthenticateToken: TokenReview's view of a token: the same chain, with audiences.
func TestAuthenticateToken(t *testing.T) {
	a, err := New(Config{AdminToken: adminSecret, Anonymous: true, ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir(), Issuers: []string{"https://one", "https://two"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.APIAudiences(); len(got) != 2 || got[0] != "https://one" || got[1] != "https://two" {
		t.Errorf("API audiences %v, want the issuers", got)
	}
	tests := []struct {
		name      string
		token     string
		audiences []string
		want      outcome
	}{
		{name: "admin", token: adminSecret, want: outcome{user: "admin", groups: []string{"system:masters", "system:authenticated"}}},
		{name: "admin for an API audience", token: adminSecret, audiences: []string{"https://two"}, want: outcome{user: "admin", groups: []string{"system:masters", "system:authenticated"}}},
		// Audience-agnostic authenticators only serve the API audiences.
		{name: "admin for another audience", token: adminSecret, audiences: []string{"vault"}, want: outcome{err: "invalid bearer token"}},
		{name: "unknown", token: "nope", want: outcome{err: "invalid bearer token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.audiences != nil {
				ctx = authenticator.WithAudiences(ctx, tt.audiences)
			}
			resp, ok, err := a.AuthenticateToken(ctx, tt.token)
			if got := outcomeOf(resp, ok, err); !got.matches(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestConfigChecks: kube-apiserver's checks of the ServiceAccount flags.
func TestConfigChecks(t *testing.T) {
	tests := []struct {
		name string
		sa   ServiceAccountConfig
		err  string
	}{
		{name: "defaults", sa: ServiceAccountConfig{}},
		{name: "duplicate issuer", sa: ServiceAccountConfig{Issuers: []string{"https://a", "https://a"}}, err: `service-account-issuer "https://a" is already specified`},
		{name: "empty issuer", sa: ServiceAccountConfig{Issuers: []string{""}}, err: "service-account-issuer should not be an empty string"},
		{name: "bad issuer URL", sa: ServiceAccountConfig{Issuers: []string{"https://a b:x"}}, err: "contained a ':' but was not a valid URL"},
		{name: "max expiration too short", sa: ServiceAccountConfig{MaxTokenExpiration: 30 * 60e9}, err: "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"},
		{name: "max expiration", sa: ServiceAccountConfig{MaxTokenExpiration: 2 * 3600e9}},
		{name: "no key anywhere", sa: ServiceAccountConfig{}, err: "need a signing key file or a data directory"},
		{name: "missing key file", sa: ServiceAccountConfig{KeyFiles: []string{"/nonexistent/key"}}, err: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa := tt.sa
			if tt.name != "no key anywhere" {
				sa.DataDir = t.TempDir()
			}
			_, err := New(Config{ServiceAccounts: sa})
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
		})
	}
}

// TestUseServiceAccountsConcurrently: the getter may arrive while requests are authenticated.
func TestUseServiceAccountsConcurrently(t *testing.T) {
	c := newCluster()
	a, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	token := issue(t, a, c, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				_, _, _ = a.AuthenticateRequest(request(bearer(token)))
			}
		})
	}
	c.use(a)
	wg.Wait()
	if _, ok, err := a.AuthenticateRequest(request(bearer(token))); !ok {
		t.Errorf("not authenticated once the getter is there: %v", err)
	}
}

// The loopback token is kube-apiserver's privileged loopback user, system:apiserver with a UID,
// not the admin: lapis's own requests read as its own in audit logs.
func TestLoopbackToken(t *testing.T) {
	const loopbackSecret = "loopback-secret"
	a, err := New(Config{AdminToken: adminSecret, LoopbackToken: loopbackSecret, ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := a.AuthenticateRequest(request(bearer(loopbackSecret)))
	got := outcomeOf(resp, ok, err)
	if !ok || got.user != "system:apiserver" || got.uid == "" || !slices.Equal(got.groups, []string{"system:authenticated", "system:masters"}) {
		t.Errorf("loopback token: %+v ok=%v, want system:apiserver with a UID in system:authenticated, system:masters", got, ok)
	}
	resp, ok, err = a.AuthenticateRequest(request(bearer(adminSecret)))
	if got := outcomeOf(resp, ok, err); !ok || got.user != "admin" {
		t.Errorf("admin token beside the loopback token: %+v ok=%v", got, ok)
	}
}
