package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	lapisadmission "github.com/lapis-dev/lapis/internal/admission"
	"github.com/lapis-dev/lapis/internal/allocate"
	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/objects"
)

// Config is what `lapis serve` is told on its command line.
type Config struct {
	// DataDir holds embedded etcd data, TLS material, credentials and the admin kubeconfig.
	DataDir string
	// Listen is HOST:PORT; port 0 picks a free port.
	Listen string
	// EtcdServers, when set, selects an external etcd cluster instead of the embedded one.
	EtcdServers []string
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connection to EtcdServers: the CA to
	// trust, and the client certificate and key to present (kube-apiserver's flags of those names).
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdPrefix is kube-apiserver's --etcd-prefix: every key lapis writes is below it, so
	// servers with different prefixes share an etcd without seeing each other's objects.
	// Empty means DefaultEtcdPrefix; "/" is etcd's root.
	EtcdPrefix string
	// EventTTL is kube-apiserver's --event-ttl: Events (of both groups) are stored with an etcd
	// lease of this TTL from each write, and go when it ends. 0 keeps them until deleted, as kube
	// with --event-ttl=0; the flag's default is DefaultEventTTL.
	EventTTL time.Duration
	// EtcdCompactionInterval is how much watch and continue history is kept.
	EtcdCompactionInterval time.Duration
	// EtcdHistoryBytes bounds that history in bytes: etcd is compacted sooner when this lapis
	// writes that many bytes of objects within two intervals (0: DefaultEtcdHistoryBytes,
	// negative: no byte bound). WatchCacheHistoryBytes bounds the watch caches' histories
	// together (0: watchcache.DefaultHistoryBytes).
	EtcdHistoryBytes, WatchCacheHistoryBytes int64
	// EmbeddedEtcdClientURL, when set, also exposes the embedded etcd there (for other lapis
	// processes to share it): an https URL, served with a certificate of lapis's CA, accepting
	// only the client certificate lapis writes to DataDir/pki/etcd-client.{crt,key}.
	EmbeddedEtcdClientURL string
	// StorageMediaType is how built-in objects are written to etcd (kube-apiserver's
	// --storage-media-type; empty: JSON, see kubeencoding). Every encoding is read.
	StorageMediaType string
	// RequestTimeout bounds requests other than watches, as kube-apiserver's --request-timeout;
	// zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle that long; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ServiceClusterIPRange and ServiceNodePortRange are kube-apiserver's flags of those names;
	// empty means kube's defaults (allocate.DefaultClusterIPRange, allocate.DefaultNodePortRange).
	ServiceClusterIPRange, ServiceNodePortRange string
	// AuthorizationModes is kube-apiserver's --authorization-mode: RBAC (empty means RBAC) or
	// AlwaysAllow. system:masters may do everything whatever the mode.
	AuthorizationModes []string
	// NoAnonymousAuth refuses requests without credentials (401) instead of letting them in as
	// system:anonymous, whom RBAC allows little (kube's --anonymous-auth=false).
	NoAnonymousAuth bool
	// ClientCAFile adds a CA whose client certificates authenticate (CN user, O groups).
	ClientCAFile string
	// TokenAuthFile is a static token file in kube-apiserver's CSV format.
	TokenAuthFile string
	// TokenWebhook is kube-apiserver's --authentication-token-webhook-* flags: bearer tokens
	// nothing else knows are asked of the webhook its kubeconfig names.
	TokenWebhook authn.TokenWebhookConfig
	// ServiceAccountSigningKeyFile signs ServiceAccount tokens (default: DataDir/pki/sa.key,
	// generated once); ServiceAccountKeyFiles verify more; ServiceAccountIssuers are the
	// issuers (the first signs); ServiceAccountMaxTokenExpiration bounds TokenRequests.
	ServiceAccountSigningKeyFile     string
	ServiceAccountKeyFiles           []string
	ServiceAccountIssuers            []string
	ServiceAccountMaxTokenExpiration time.Duration
	// ServiceAccountJWKSURI is where issuer discovery says the keys are (kube's
	// --service-account-jwks-uri); empty: lapis's own /openid/v1/jwks at its advertised address.
	ServiceAccountJWKSURI string
	// Audit is kube-apiserver's --audit-log-* and --audit-policy-file: where audit events go
	// and which are recorded at what level.
	Audit audit.Options
	// TLSCertFile and TLSPrivateKeyFile are the serving certificate (kube-apiserver's
	// --tls-cert-file, --tls-private-key-file); without them CertDir's apiserver.crt and
	// apiserver.key (written there from lapis's own when absent, as kube does); without
	// CertDir lapis's own (DataDir/pki).
	TLSCertFile, TLSPrivateKeyFile, CertDir string
	// AdvertiseAddress is the kubernetes Service's endpoint address (kube's
	// --advertise-address); empty: derived from the listen address as kube does.
	AdvertiseAddress string
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the requests (other than
	// watches and health checks) served at once, reads and writes apart: one more is answered
	// 429 TooManyRequests, as kube-apiserver's --max-requests-inflight and
	// --max-mutating-requests-inflight (without API Priority and Fairness). 0: no limit.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// KubeAPIServerOnly runs lapis as kube-apiserver alone, as envtest starts it: none of the
	// kube-controller-manager controllers lapis otherwise runs (namespace deletion, garbage
	// collection, kube-root-ca.crt, legacy token Secrets, ClusterRole aggregation, ResourceQuota
	// and ValidatingAdmissionPolicy status). The default ServiceAccount is still made: lapis's
	// admission chain always has kube's ServiceAccount plugin, which needs it.
	KubeAPIServerOnly bool
	// EnableAdmissionPlugins and DisableAdmissionPlugins are kube-apiserver's flags of those
	// names (lapisadmission.PluginNames): envtest disables ServiceAccount, for instance.
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// RequestHeader is kube-apiserver's --requestheader-* flags: the front proxies whose
	// client certificates lapis trusts to say, in headers, who is asking.
	RequestHeader RequestHeaderConfig
	// ProxyClientCertFile and ProxyClientKeyFile are the client certificate the aggregator
	// presents to extension API servers (kube's --proxy-client-cert-file and
	// --proxy-client-key-file).
	ProxyClientCertFile, ProxyClientKeyFile string
	// EnableAggregatorRouting proxies to an extension API server at an endpoint of its
	// Service rather than at its cluster IP (kube's --enable-aggregator-routing).
	EnableAggregatorRouting bool
}

// RequestHeaderConfig is kube-apiserver's --requestheader-* flags.
type RequestHeaderConfig struct {
	ClientCAFile       string   // --requestheader-client-ca-file
	AllowedNames       []string // --requestheader-allowed-names
	UsernameHeaders    []string // --requestheader-username-headers
	UIDHeaders         []string // --requestheader-uid-headers
	GroupHeaders       []string // --requestheader-group-headers
	ExtraHeadersPrefix []string // --requestheader-extra-headers-prefix
}

// Defaults as documented for `lapis serve`.
const (
	DefaultDataDir            = "./lapis-data"
	DefaultListen             = "127.0.0.1:6443"
	DefaultCompactionInterval = 5 * time.Minute
	// DefaultEtcdPrefix is kube-apiserver's default --etcd-prefix.
	DefaultEtcdPrefix = objects.DefaultPrefix
	// DefaultEventTTL is kube-apiserver's default --event-ttl.
	DefaultEventTTL = time.Hour
	// DefaultEtcdHistoryBytes keeps etcd's history (every version of every value until it is
	// compacted, in its memory-mapped database) to about this many bytes under heavy writes.
	DefaultEtcdHistoryBytes = 128 << 20
	// DefaultRequestTimeout is kube-apiserver's default --request-timeout.
	DefaultRequestTimeout = 60 * time.Second
	// DefaultIdleTimeout is kube-apiserver's idle timeout (http.DefaultTransport's keep-alive).
	DefaultIdleTimeout = 90 * time.Second
	// readHeaderTimeout is kube-apiserver's: just short of its request timeout upper bound.
	readHeaderTimeout = 32 * time.Second
)

// withDefaults fills in the zero values that stand for a default.
func (c Config) withDefaults() Config {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.EtcdHistoryBytes == 0 {
		c.EtcdHistoryBytes = DefaultEtcdHistoryBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.EtcdPrefix == "" {
		c.EtcdPrefix = DefaultEtcdPrefix
	}
	return c
}

// validate refuses flag combinations that cannot work, before anything is started.
func (c Config) validate() error {
	if _, err := lapisadmission.PluginNames(c.EnableAdmissionPlugins, c.DisableAdmissionPlugins); err != nil {
		return err
	}
	if c.EmbeddedEtcdClientURL != "" {
		if len(c.EtcdServers) > 0 {
			return errors.New("--embedded-etcd-listen exposes the embedded etcd; with --etcd-servers there is none")
		}
		u, err := url.Parse(c.EmbeddedEtcdClientURL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" {
			return fmt.Errorf("--embedded-etcd-listen %q: the embedded etcd is exposed only over https, to clients with a certificate of lapis's CA (e.g. https://127.0.0.1:2379)", c.EmbeddedEtcdClientURL)
		}
	}
	if len(c.EtcdServers) == 0 && (c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != "") {
		return errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile apply to --etcd-servers")
	}
	if _, err := allocate.ParseConfig(c.ServiceClusterIPRange, c.ServiceNodePortRange); err != nil {
		return err
	}
	if _, err := storedValues(c); err != nil {
		return err
	}
	if c.AdvertiseAddress != "" && net.ParseIP(c.AdvertiseAddress) == nil {
		return fmt.Errorf("--advertise-address %q is not an IP address", c.AdvertiseAddress)
	}
	if c.MaxRequestsInflight < 0 || c.MaxMutatingRequestsInflight < 0 {
		return errors.New("--max-requests-inflight and --max-mutating-requests-inflight must not be negative")
	}
	if err := c.Audit.Validate(); err != nil {
		return err
	}
	if c.RequestTimeout < 0 || c.IdleTimeout < 0 {
		return errors.New("timeouts must not be negative")
	}
	if err := c.validateRequestHeader(); err != nil {
		return err
	}
	if c.EventTTL < 0 {
		return fmt.Errorf("--event-ttl %v must not be negative (0 keeps events until they are deleted)", c.EventTTL)
	}
	return nil
}
