package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestCredentialsPersist(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreate(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreate(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if first.AdminToken != again.AdminToken || string(first.CAPEM) != string(again.CAPEM) {
		t.Error("credentials changed across restarts")
	}
	if len(first.AdminToken) < 32 {
		t.Errorf("admin token too short: %d", len(first.AdminToken))
	}
	info, err := os.Stat(filepath.Join(dir, "pki", "admin.token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v)", info.Mode(), err)
	}
	// A new listen host gets a serving certificate that covers it, signed by the same CA.
	other, err := LoadOrCreate(dir, "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(other.Serving.Certificate[0])
	if err := leaf.VerifyHostname("10.1.2.3"); err != nil {
		t.Error(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(first.CA)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Error(err)
	}
}

func TestAuthenticate(t *testing.T) {
	creds, err := LoadOrCreate(t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAuthenticator(creds.AdminToken)
	clientCert, err := tls.X509KeyPair(creds.ClientCert, creds.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(clientCert.Certificate[0])
	tests := []struct {
		name  string
		setup func(r *http.Request)
		user  string
		ok    bool
	}{
		{"anonymous", func(*http.Request) {}, "", false},
		{"admin token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+creds.AdminToken) }, "admin", true},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, "", false},
		{"basic auth", func(r *http.Request) { r.SetBasicAuth("admin", creds.AdminToken) }, "", false},
		{"verified client certificate", func(r *http.Request) {
			r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}
		}, "admin", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/api", nil)
			tt.setup(req)
			u, ok := a.Authenticate(req)
			if ok != tt.ok || u.Name != tt.user {
				t.Errorf("got %+v %v", u, ok)
			}
			if ok {
				ctx := WithUser(context.Background(), u)
				if got, _ := UserFrom(ctx); got.Name != u.Name {
					t.Error("user not carried in the context")
				}
			}
		})
	}
	if allowed, _, _ := (AllowAuthenticated{}).Authorize(context.Background(), Attributes{}); !allowed {
		t.Error("AllowAuthenticated refused")
	}
}
