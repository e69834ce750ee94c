package authn

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/util/uuid"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// tokenSuccessCacheTTL is how long kube-apiserver remembers a successful token authentication
// (its TokenSuccessCacheTTL); failures are not remembered.
const tokenSuccessCacheTTL = 10 * time.Second

// The admin token's user.
const (
	AdminUser  = "admin"
	AdminGroup = user.SystemPrivilegedGroup // system:masters
)

// Authenticator is lapis's authentication chain (an authenticator.Request) and its
// ServiceAccount token issuer. It is safe for concurrent use.
type Authenticator struct {
	request   authenticator.Request
	audiences authenticator.Audiences
	lookups   *lookups

	// Token issuing: the bound tokens' generator (the first issuer), the legacy one, and
	// kube's TokenREST settings.
	issuer               serviceaccount.TokenGenerator
	legacy               serviceaccount.TokenGenerator
	maxExpirationSeconds int64
	extendExpiration     bool

	// What ServiceAccount issuer discovery publishes: the issuer, and the keys its tokens are
	// verified with.
	issuerURL  string
	publicKeys serviceaccount.PublicKeysGetter
}

// New builds the chain kube-apiserver builds (pkg/kubeapiserver/authenticator and its loopback
// token): the admin token, then front proxies' headers, client certificates and bearer tokens
// (also as a websocket protocol) with system:authenticated added, then anonymous if enabled —
// reached only by requests that carry no credentials at all.
func New(cfg Config) (*Authenticator, error) {
	return build(cfg, tokenSuccessCacheTTL)
}

func build(cfg Config, cacheTTL time.Duration) (*Authenticator, error) {
	sa := cfg.ServiceAccounts
	issuers, err := sa.issuers()
	if err != nil {
		return nil, err
	}
	if err := sa.checkMaxExpiration(); err != nil {
		return nil, err
	}
	signing, err := sa.signingKey()
	if err != nil {
		return nil, err
	}
	publicKeys, err := sa.publicKeys(signing)
	if err != nil {
		return nil, err
	}
	keys, err := serviceaccount.StaticPublicKeysGetter(publicKeys)
	if err != nil {
		return nil, fmt.Errorf("failed to set up public service account keys: %w", err)
	}
	a := &Authenticator{
		issuerURL:  issuers[0],
		publicKeys: keys,
		// kube's default --api-audiences: the issuers.
		audiences:            authenticator.Audiences(issuers),
		lookups:              &lookups{},
		maxExpirationSeconds: int64(sa.MaxTokenExpiration.Seconds()),
		extendExpiration:     sa.ExtendExpiration,
	}
	if a.issuer, err = serviceaccount.JWTTokenGenerator(issuers[0], signing); err != nil {
		return nil, fmt.Errorf("failed to build token generator: %w", err)
	}
	if a.legacy, err = serviceaccount.JWTTokenGenerator(serviceaccount.LegacyIssuer, signing); err != nil {
		return nil, fmt.Errorf("failed to build token generator: %w", err)
	}

	tokenAuth, err := a.tokenAuthenticator(cfg, keys, issuers, cacheTTL)
	if err != nil {
		return nil, err
	}
	a.request = requestChain(cfg, tokenAuth, a.audiences)
	// The admin and loopback tokens go in front of the chain, as kube-apiserver's privileged
	// loopback token does (so a bad token's error reads as kube's, "[invalid bearer token, ...]").
	if privileged := privilegedUsers(cfg); len(privileged) > 0 {
		a.request = union.New(authenticatorfactory.NewFromTokens(privileged, a.audiences), a.request)
	}
	if cfg.RequestHeader != nil {
		a.request = clearingHeaders{Request: a.request, config: cfg.RequestHeader}
	}
	return a, nil
}

// tokenAuthenticator is kube's bearer token chain: the token file, legacy then bound
// ServiceAccount tokens, successes remembered for cacheTTL.
func (a *Authenticator) tokenAuthenticator(cfg Config, keys serviceaccount.PublicKeysGetter, issuers []string, cacheTTL time.Duration) (authenticator.Token, error) {
	var tokens []authenticator.Token
	if cfg.TokenAuthFile != "" {
		file, err := tokenfile.NewCSV(cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, authenticator.WrapAudienceAgnosticToken(a.audiences, file))
	}
	legacyValidator, err := serviceaccount.NewLegacyValidator(true, a.lookups, a.lookups)
	if err != nil {
		return nil, err
	}
	tokens = append(tokens,
		serviceaccount.JWTTokenAuthenticator([]string{serviceaccount.LegacyIssuer}, keys, a.audiences, legacyValidator),
		serviceaccount.JWTTokenAuthenticator(issuers, keys, a.audiences, serviceaccount.NewValidator(a.lookups)))
	if cfg.TokenWebhook.ConfigFile != "" {
		webhook, err := newTokenWebhook(cfg.TokenWebhook, a.audiences)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, webhook) // last, as kube's
	}
	tokenAuth := tokenunion.New(tokens...)
	if cacheTTL > 0 {
		tokenAuth = tokencache.New(tokenAuth, true, cacheTTL, 0)
	}
	return tokenAuth, nil
}

// requestChain is kube-apiserver's order (pkg/kubeapiserver/authenticator): front proxies'
// headers, client certificates, bearer tokens (also as a websocket protocol), with
// system:authenticated added; then anonymous if enabled.
func requestChain(cfg Config, tokenAuth authenticator.Token, audiences authenticator.Audiences) authenticator.Request {
	var requests []authenticator.Request
	if cfg.RequestHeader != nil {
		requests = append(requests, requestHeader(cfg.RequestHeader, audiences))
	}
	if cfg.ClientCAs != nil {
		opts := x509request.DefaultVerifyOptions()
		opts.Roots = cfg.ClientCAs
		requests = append(requests, x509request.New(opts, x509request.CommonNameUserConversion))
	}
	requests = append(requests, bearertoken.New(tokenAuth), websocket.NewProtocolAuthenticator(tokenAuth))
	chain := group.NewAuthenticatedGroupAdder(union.New(requests...))
	if cfg.Anonymous {
		// An error of the chain (a bad bearer token) is not anonymous.
		chain = union.NewFailOnError(chain, anonymous.NewAuthenticator(nil))
	}
	return chain
}

// privilegedUsers are the admin's and the loopback client's tokens.
func privilegedUsers(cfg Config) map[string]*user.DefaultInfo {
	privileged := map[string]*user.DefaultInfo{}
	if cfg.AdminToken != "" {
		privileged[cfg.AdminToken] = &user.DefaultInfo{Name: AdminUser, Groups: []string{AdminGroup, user.AllAuthenticated}}
	}
	if cfg.LoopbackToken != "" {
		// kube-apiserver's loopback user, with a UID new at every start as kube's.
		privileged[cfg.LoopbackToken] = &user.DefaultInfo{Name: user.APIServerUser, UID: string(uuid.NewUUID()),
			Groups: []string{user.AllAuthenticated, user.SystemPrivilegedGroup}}
	}
	return privileged
}

// AuthenticateRequest implements authenticator.Request: the response's user, false without
// credentials (when anonymous is off), or an error for credentials that are not valid.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	return a.request.AuthenticateRequest(req)
}

// AuthenticateToken authenticates a bearer token as kube's TokenReview does: a request that
// carries only that token goes through the chain (so the user gets system:authenticated).
// Audiences requested through authenticator.WithAudiences in ctx are checked; without them a
// token must be for the API audiences.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	req := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	req.Header.Add("Authorization", "Bearer "+token)
	return a.request.AuthenticateRequest(req)
}

// APIAudiences are the audiences the API server identifies as (kube's --api-audiences, which
// default to the issuers): tokens without audiences are for them, TokenRequests without
// audiences get them.
func (a *Authenticator) APIAudiences() authenticator.Audiences {
	return append(authenticator.Audiences(nil), a.audiences...)
}

// UseServiceAccounts lets ServiceAccount tokens authenticate, looking up what they name
// through getter (NewGetter); until it is called they do not. It may be called again.
func (a *Authenticator) UseServiceAccounts(getter serviceaccount.ServiceAccountTokenGetter) {
	a.lookups.set(getter)
}

// Issuer is the issuer of the tokens lapis signs (the first --service-account-issuer).
func (a *Authenticator) Issuer() string { return a.issuerURL }

// PublicKeys are the keys ServiceAccount tokens are verified with.
func (a *Authenticator) PublicKeys() serviceaccount.PublicKeysGetter { return a.publicKeys }

// LegacyTokenGenerator signs the tokens of kubernetes.io/service-account-token Secrets, as
// kube-controller-manager's token controller does (issuer "kubernetes/serviceaccount").
func (a *Authenticator) LegacyTokenGenerator() serviceaccount.TokenGenerator {
	return a.legacy
}

var _ authenticator.Request = (*Authenticator)(nil)
