// Package authn decides who sent a request, as kube-apiserver's authenticator chain does, with
// kube's own authenticators (k8s.io/apiserver/pkg/authentication/...): front proxies (a client
// certificate of the request-header CA, with an allowed name, vouching for the user, UID,
// groups and extra in X-Remote-* or the configured headers, which are then removed), client
// certificates (CN the user, O the groups), bearer tokens — lapis's admin token (placed as
// kube-apiserver places its privileged loopback token, which it is to lapis), a static token file
// (--token-auth-file), ServiceAccount tokens, both bound tokens of the TokenRequest API and
// legacy tokens of kubernetes.io/service-account-token Secrets — and, when enabled, anonymous
// requests. An invalid bearer token is an error (401), never anonymous. Authenticated users
// carry system:authenticated. Successful token authentications are remembered for 10 s, as
// kube-apiserver remembers them.
//
// It also issues ServiceAccount tokens: bound tokens for the TokenRequest API (IssueToken, kube's
// TokenREST after its lookups) and the legacy generator kube-controller-manager's token
// controller fills Secrets with. Tokens are signed with one key: --service-account-signing-key-file,
// or a key generated once and kept in DATA/pki/sa.key; more public keys (--service-account-key-file)
// may verify tokens.
//
// ServiceAccount tokens are checked against the objects they name (ServiceAccount, bound Pod,
// Secret or Node) through a getter over informers, which exists only once lapis serves: until
// UseServiceAccounts is called they do not authenticate.
package authn
