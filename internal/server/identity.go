package server

import (
	"context"
	"crypto/x509"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/lapis-dev/lapis/internal/auth"
)

// newIdentity builds who may do what.
// TODO(issue 9): internal/auth/authn and internal/auth/authz replace this interim pair.
func newIdentity(creds *auth.Credentials, clientCAs *x509.CertPool) identity {
	admin := authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
		if token != creds.AdminToken {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}}, true, nil
	})
	certs := x509request.New(x509.VerifyOptions{Roots: clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, x509request.CommonNameUserConversion)
	authn := union.New(group.NewAuthenticatedGroupAdder(union.New(certs, bearertoken.New(admin))), anonymous.NewAuthenticator(nil))
	allow := authorizerfactory.NewAlwaysAllowAuthorizer()
	return identity{authn: authn, authz: allow, rules: allow}
}
