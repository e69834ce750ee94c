package server

import (
	"fmt"
	"os"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"

	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/auth/authz"
	"github.com/lapis-dev/lapis/internal/pki"
)

// clientCA is the bundle of CAs whose client certificates authenticate: lapis's CA, then
// --client-ca-file's.
func clientCA(cfg Config, creds *pki.Credentials) (dynamiccertificates.CAContentProvider, error) {
	bundle := append([]byte(nil), creds.CAPEM...)
	if cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		if _, err := dynamiccertificates.NewStaticCAContent("client-ca-file", pem); err != nil {
			return nil, fmt.Errorf("--client-ca-file %s: %w", cfg.ClientCAFile, err)
		}
		bundle = append(bundle, pem...)
	}
	return dynamiccertificates.NewStaticCAContent("client-ca-bundle", bundle)
}

// newAuthenticator is kube-apiserver's authenticator chain over lapis's credentials and the
// identity flags: front proxies (fp's request-header configuration), client certificates of
// clientCA, the admin token, the token file, ServiceAccount tokens and, when allowed,
// anonymous requests.
func newAuthenticator(cfg Config, creds *pki.Credentials, clientCA dynamiccertificates.CAContentProvider, fp *frontProxy) (*authn.Authenticator, error) {
	verify, _ := clientCA.VerifyOptions()
	return authn.New(authn.Config{
		ClientCAs: verify.Roots, RequestHeader: fp.requestHeader,
		AdminToken: creds.AdminToken, LoopbackToken: creds.LoopbackToken,
		TokenAuthFile: cfg.TokenAuthFile, TokenWebhook: cfg.TokenWebhook, Anonymous: !cfg.NoAnonymousAuth,
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
	return identity{authn: a, audiences: a.APIAudiences(), authz: z, rules: z, tokens: a, issuer: a}
}
