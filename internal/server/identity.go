package server

import (
	"crypto/x509"
	"fmt"
	"os"

	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/auth/authz"
	"github.com/lapis-dev/lapis/internal/pki"
)

// newAuthenticator is kube-apiserver's authenticator chain over lapis's credentials and the
// identity flags: client certificates of lapis's CA (and --client-ca-file's), the admin token,
// the token file, ServiceAccount tokens and, when allowed, anonymous requests.
func newAuthenticator(cfg Config, creds *pki.Credentials) (*authn.Authenticator, error) {
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
		ClientCAs: clientCAs, AdminToken: creds.AdminToken, LoopbackToken: creds.LoopbackToken,
		TokenAuthFile: cfg.TokenAuthFile, Anonymous: !cfg.NoAnonymousAuth,
		ServiceAccounts: authn.ServiceAccountConfig{
			DataDir: cfg.DataDir, SigningKeyFile: cfg.ServiceAccountSigningKeyFile, KeyFiles: cfg.ServiceAccountKeyFiles,
			Issuers: cfg.ServiceAccountIssuers, MaxTokenExpiration: cfg.ServiceAccountMaxTokenExpiration,
			ExtendExpiration: true, // kube-apiserver's default --service-account-extend-token-expiration
		},
	})
}

// newIdentity is who may do what: kube's authenticator chain and its authorizer for the modes
// configured, over the loopback informers of RBAC's objects.
func newIdentity(a *authn.Authenticator, z *authz.Authorizer) identity {
	return identity{authn: a, audiences: a.APIAudiences(), authz: z, rules: z, tokens: a}
}
