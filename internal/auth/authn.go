package auth

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"net/http"
	"strings"
)

// User is an authenticated caller.
type User struct {
	Name   string
	Groups []string
}

// Authenticator decides who sent a request: the admin bearer token, or a client certificate
// signed by lapis's CA (verified by the TLS layer).
type Authenticator struct {
	token []byte
}

// NewAuthenticator accepts the admin token and CA-signed client certificates.
func NewAuthenticator(adminToken string) *Authenticator {
	return &Authenticator{token: []byte(adminToken)}
}

// Authenticate returns the request's user, or false for an anonymous request.
func (a *Authenticator) Authenticate(req *http.Request) (User, bool) {
	if h := req.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), a.token) == 1 {
			return User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}, true
		}
		return User{}, false
	}
	if req.TLS != nil && len(req.TLS.VerifiedChains) > 0 {
		return userFromCert(req.TLS.VerifiedChains[0][0]), true
	}
	return User{}, false
}

func userFromCert(c *x509.Certificate) User {
	return User{Name: c.Subject.CommonName, Groups: append(append([]string(nil), c.Subject.Organization...), "system:authenticated")}
}

type userKey struct{}

// WithUser records the request's user in ctx.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user recorded in ctx.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}
