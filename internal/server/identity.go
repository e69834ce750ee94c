package server

import (
	"crypto/x509"
	"fmt"
	"os"

	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/lapis-dev/lapis/internal/auth"
	"github.com/lapis-dev/lapis/internal/auth/authn"
)

// newAuthenticator is kube-apiserver's authenticator chain over lapis's credentials and the
// identity flags: client certificates of lapis's CA (and --client-ca-file's), the admin token,
// the token file, ServiceAccount tokens and, when allowed, anonymous requests.
func newAuthenticator(cfg Config, creds *auth.Credentials) (*authn.Authenticator, error) {
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(creds.CA)
	if cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		if !clientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", cfg.ClientCAFile)
		}
	}
	return authn.New(authn.Config{
		ClientCAs: clientCAs, AdminToken: creds.AdminToken, TokenAuthFile: cfg.TokenAuthFile, Anonymous: !cfg.NoAnonymousAuth,
		ServiceAccounts: authn.ServiceAccountConfig{
			DataDir: cfg.DataDir, SigningKeyFile: cfg.ServiceAccountSigningKeyFile, KeyFiles: cfg.ServiceAccountKeyFiles,
			Issuers: cfg.ServiceAccountIssuers, MaxTokenExpiration: cfg.ServiceAccountMaxTokenExpiration,
			ExtendExpiration: true, // kube-apiserver's default --service-account-extend-token-expiration
		},
	})
}

// newIdentity is who may do what.
// TODO(issue 9): internal/auth/authz replaces the interim authorizer.
func newIdentity(a *authn.Authenticator) identity {
	allow := authorizerfactory.NewAlwaysAllowAuthorizer()
	return identity{authn: a, audiences: a.APIAudiences(), authz: allow, rules: allow, tokens: a}
}
