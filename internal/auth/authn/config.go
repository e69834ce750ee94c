package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
)

// DefaultIssuer is the ServiceAccount token issuer when none is configured: the in-cluster
// address of the API server, the audience in-cluster clients expect.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Config is what authenticates requests, as kube-apiserver's flags configure it. Only ServiceAccount
// tokens are always accepted; they need ServiceAccounts.DataDir or SigningKeyFile.
type Config struct {
	// ClientCAs verify client certificates; nil accepts none.
	ClientCAs *x509.CertPool
	// RequestHeader, when set, trusts front proxies: a client certificate of its CA (with an
	// allowed name) authenticates the user its headers name (kube's --requestheader-* flags).
	RequestHeader *authenticatorfactory.RequestHeaderConfig
	// AdminToken is lapis's admin bearer token (user "admin", group system:masters); "" for none.
	AdminToken string
	// LoopbackToken is the bearer token of lapis's own loopback client: user system:apiserver
	// (group system:masters), as kube-apiserver's privileged loopback token; "" for none.
	LoopbackToken string
	// TokenAuthFile is a static token file in kube's CSV format (--token-auth-file).
	TokenAuthFile string
	// Anonymous lets requests without credentials through as system:anonymous (--anonymous-auth).
	Anonymous bool
	// ServiceAccounts configures ServiceAccount tokens.
	ServiceAccounts ServiceAccountConfig
	// TokenWebhook asks a webhook about the bearer tokens nothing else knows.
	TokenWebhook TokenWebhookConfig
}

// TokenWebhookConfig is kube-apiserver's --authentication-token-webhook-* flags.
type TokenWebhookConfig struct {
	// ConfigFile is a kubeconfig naming the webhook (--authentication-token-webhook-config-file);
	// "" for none.
	ConfigFile string
	// Version is the TokenReview version sent: v1beta1 (kube's default) or v1.
	Version string
	// CacheTTL is how long the webhook's answers are remembered (kube's default 2m).
	CacheTTL time.Duration
}

// ServiceAccountConfig is kube-apiserver's --service-account-* flags.
type ServiceAccountConfig struct {
	// DataDir keeps the generated signing key (DataDir/pki/sa.key) when SigningKeyFile is "".
	DataDir string
	// SigningKeyFile is a PEM private key (RSA or ECDSA) tokens are signed with.
	SigningKeyFile string
	// KeyFiles are PEM files of public (or private) keys that also verify tokens.
	KeyFiles []string
	// Issuers are the accepted "iss" of bound tokens; the first one issues. Empty: DefaultIssuer.
	Issuers []string
	// MaxTokenExpiration caps the expirationSeconds of a TokenRequest; 0 is no cap
	// (--service-account-max-token-expiration: 0, or between 1h and 2^32 s).
	MaxTokenExpiration time.Duration
	// ExtendExpiration: a Pod-bound token requested for 3607 s (what kubelet asks for) is valid
	// a year and warns after 3607 s (--service-account-extend-token-expiration; kube's default is
	// true).
	ExtendExpiration bool
}

// issuers returns the configured issuers, or kube's default one, checked as kube-apiserver
// checks --service-account-issuer.
func (c ServiceAccountConfig) issuers() ([]string, error) {
	if len(c.Issuers) == 0 {
		return []string{DefaultIssuer}, nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, issuer := range c.Issuers {
		if strings.Contains(issuer, ":") {
			if _, err := url.Parse(issuer); err != nil {
				errs = append(errs, fmt.Errorf("service-account-issuer %q contained a ':' but was not a valid URL: %v", issuer, err))
				continue
			}
		}
		switch {
		case issuer == "":
			errs = append(errs, errors.New("service-account-issuer should not be an empty string"))
		case seen[issuer]:
			errs = append(errs, fmt.Errorf("service-account-issuer %q is already specified", issuer))
		}
		seen[issuer] = true
	}
	return c.Issuers, errors.Join(errs...)
}

// checkMaxExpiration is kube-apiserver's check of --service-account-max-token-expiration.
func (c ServiceAccountConfig) checkMaxExpiration() error {
	if m := c.MaxTokenExpiration; m != 0 && (m < time.Hour || m > time.Duration(1<<32)*time.Second) {
		return errors.New("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds")
	}
	return nil
}
