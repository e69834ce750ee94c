package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/capabilities"

	"github.com/lapis-dev/lapis/internal/allocate"
	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/server"
	"github.com/lapis-dev/lapis/internal/storage/kubeencoding"
)

// kubeFlags are kube-apiserver's flags that `lapis serve` shares with lapis started as
// kube-apiserver: where it serves and with which certificate, request limits, feature gates,
// etcd, Services' ranges, admission, authentication and authorization.
type kubeFlags struct {
	securePort      int
	bindAddress     string
	allowPrivileged bool
	anonymousAuth   bool
}

// command is the command a flag set is for; it chooses the words of the shared flags' help and
// the default authorization modes.
type command int

const (
	serveCommand         command = iota // lapis serve: lapis's words
	kubeAPIServerCommand                // lapis started as kube-apiserver: kube-apiserver's words
)

// addKubeFlags registers kubeFlags' flags, with kube-apiserver's names and meanings. The
// defaults of secure-port and bind-address are for lapis started as kube-apiserver; `lapis
// serve` takes them from --listen unless they are given.
func addKubeFlags(fs *pflag.FlagSet, cfg *server.Config, k *kubeFlags, cmd command) {
	addServingFlags(fs, cfg, k)
	addConfigFlags(fs, cfg, k, cmd)
}

// addServingFlags registers the flags of where and how lapis serves, with kube-apiserver's help
// for both commands.
func addServingFlags(fs *pflag.FlagSet, cfg *server.Config, k *kubeFlags) {
	fs.IntVar(&k.securePort, "secure-port", 6443, "The port on which to serve HTTPS with authentication and authorization. It cannot be switched off with 0.")
	fs.StringVar(&k.bindAddress, "bind-address", "0.0.0.0", "The IP address on which to listen for the --secure-port port.")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "The IP address on which to advertise the apiserver to members of the cluster (the kubernetes Service's endpoint). If blank, the --bind-address will be used.")
	fs.StringVar(&cfg.CertDir, "cert-dir", "", "The directory where the TLS certs are located (apiserver.crt and apiserver.key; written there when absent). If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "File containing the default x509 Certificate for HTTPS. (CA cert, if any, concatenated after server cert).")
	fs.StringVar(&cfg.TLSPrivateKeyFile, "tls-private-key-file", "", "File containing the default x509 private key matching --tls-cert-file.")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", 0, "The maximum number of non-mutating requests in flight at a given time. When the server exceeds this, it rejects requests (429). Zero for no limit.")
	fs.IntVar(&cfg.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", 0, "The maximum number of mutating requests in flight at a given time. When the server exceeds this, it rejects requests (429). Zero for no limit.")
	fs.BoolVar(&k.allowPrivileged, "allow-privileged", false, "If true, allow privileged containers.")
	// kube's own flag: the gates kube's code (which lapis runs) reads.
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
}

// addConfigFlags registers the shared flags whose help each command words its own way (see
// sharedHelp), and whose authorization modes default to `lapis serve`'s RBAC or to
// kube-apiserver's AlwaysAllow.
func addConfigFlags(fs *pflag.FlagSet, cfg *server.Config, k *kubeFlags, cmd command) {
	help := func(name string) string { return sharedHelp[name][cmd] }
	authorizationModes := []string{"RBAC"}
	if cmd == kubeAPIServerCommand {
		authorizationModes = []string{"AlwaysAllow"}
	}
	fs.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, help("etcd-servers"))
	fs.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", help("etcd-cafile"))
	fs.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", help("etcd-certfile"))
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", help("etcd-keyfile"))
	fs.StringVar(&cfg.EtcdPrefix, "etcd-prefix", server.DefaultEtcdPrefix, help("etcd-prefix"))
	fs.DurationVar(&cfg.EtcdCompactionInterval, "etcd-compaction-interval", server.DefaultCompactionInterval, help("etcd-compaction-interval"))
	fs.StringVar(&cfg.StorageMediaType, "storage-media-type", kubeencoding.JSON, help("storage-media-type"))
	fs.DurationVar(&cfg.EventTTL, "event-ttl", server.DefaultEventTTL, help("event-ttl"))
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", server.DefaultRequestTimeout, help("request-timeout"))
	fs.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", allocate.DefaultClusterIPRange, help("service-cluster-ip-range"))
	fs.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", allocate.DefaultNodePortRange, help("service-node-port-range"))
	fs.StringSliceVar(&cfg.EnableAdmissionPlugins, "enable-admission-plugins", nil, help("enable-admission-plugins"))
	fs.StringSliceVar(&cfg.DisableAdmissionPlugins, "disable-admission-plugins", nil, help("disable-admission-plugins"))
	fs.StringSliceVar(&cfg.AuthorizationModes, "authorization-mode", authorizationModes, help("authorization-mode"))
	fs.BoolVar(&k.anonymousAuth, "anonymous-auth", true, help("anonymous-auth"))
	fs.StringVar(&cfg.ClientCAFile, "client-ca-file", "", help("client-ca-file"))
	fs.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", help("token-auth-file"))
	fs.StringVar(&cfg.TokenWebhook.ConfigFile, "authentication-token-webhook-config-file", "", help("authentication-token-webhook-config-file"))
	fs.StringVar(&cfg.TokenWebhook.Version, "authentication-token-webhook-version", "v1beta1", help("authentication-token-webhook-version"))
	fs.DurationVar(&cfg.TokenWebhook.CacheTTL, "authentication-token-webhook-cache-ttl", 2*time.Minute, help("authentication-token-webhook-cache-ttl"))
	fs.StringVar(&cfg.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", help("service-account-signing-key-file"))
	fs.StringSliceVar(&cfg.ServiceAccountKeyFiles, "service-account-key-file", nil, help("service-account-key-file"))
	fs.StringSliceVar(&cfg.ServiceAccountIssuers, "service-account-issuer", nil, help("service-account-issuer"))
	fs.DurationVar(&cfg.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, help("service-account-max-token-expiration"))
	fs.StringVar(&cfg.ServiceAccountJWKSURI, "service-account-jwks-uri", "", help("service-account-jwks-uri"))
	addFrontProxyFlags(fs, cfg, help)
}

// addFrontProxyFlags registers kube-apiserver's flags of front proxies: those lapis trusts
// (--requestheader-*) and lapis as one, proxying to extension API servers.
func addFrontProxyFlags(fs *pflag.FlagSet, cfg *server.Config, help func(string) string) {
	rh := &cfg.RequestHeader
	fs.StringVar(&rh.ClientCAFile, "requestheader-client-ca-file", "", help("requestheader-client-ca-file"))
	fs.StringSliceVar(&rh.AllowedNames, "requestheader-allowed-names", nil, help("requestheader-allowed-names"))
	fs.StringSliceVar(&rh.UsernameHeaders, "requestheader-username-headers", nil, help("requestheader-username-headers"))
	fs.StringSliceVar(&rh.UIDHeaders, "requestheader-uid-headers", nil, help("requestheader-uid-headers"))
	fs.StringSliceVar(&rh.GroupHeaders, "requestheader-group-headers", nil, help("requestheader-group-headers"))
	fs.StringSliceVar(&rh.ExtraHeadersPrefix, "requestheader-extra-headers-prefix", nil, help("requestheader-extra-headers-prefix"))
	fs.StringVar(&cfg.ProxyClientCertFile, "proxy-client-cert-file", "", help("proxy-client-cert-file"))
	fs.StringVar(&cfg.ProxyClientKeyFile, "proxy-client-key-file", "", help("proxy-client-key-file"))
	fs.BoolVar(&cfg.EnableAggregatorRouting, "enable-aggregator-routing", false, help("enable-aggregator-routing"))
}

// sharedHelp is the help of addConfigFlags' flags, by command: `lapis serve`'s in lapis's
// words, kube-apiserver's in its own (which envtest's users and kube's docs know).
var sharedHelp = map[string][2]string{
	"etcd-servers": {
		"external etcd cluster to use instead of the embedded one",
		"List of etcd servers to connect with (scheme://ip:port), comma separated."},
	"etcd-cafile": {
		"SSL Certificate Authority file used to secure etcd communication",
		"SSL Certificate Authority file used to secure etcd communication."},
	"etcd-certfile": {
		"SSL certification file used to secure etcd communication",
		"SSL certification file used to secure etcd communication."},
	"etcd-keyfile": {
		"SSL key file used to secure etcd communication",
		"SSL key file used to secure etcd communication."},
	"storage-media-type": {
		"how built-in objects are written to etcd: application/json (served from etcd's bytes without decoding), application/vnd.kubernetes.protobuf (kube-apiserver's default) or application/yaml; all three, and custom resources' JSON, are read whatever it says",
		"The media type to use to store objects in storage. Some resources or storage backends may only support a specific media type and will ignore this setting. Supported media types: [application/json, application/yaml, application/vnd.kubernetes.protobuf]. lapis's default is application/json, which it serves without decoding; it reads every type whatever this says."},
	"etcd-prefix": {
		"prefix below which lapis keeps everything in etcd, as kube-apiserver's flag (servers with different prefixes share an etcd without seeing each other's objects)",
		"The prefix to prepend to all resource paths in etcd."},
	"etcd-compaction-interval": {
		"how long watch and continue history is kept",
		"The interval of compaction requests."},
	"event-ttl": {
		"how long an Event is kept after its last write, as kube-apiserver's flag (an etcd lease; 0 keeps events until deleted)",
		"Amount of time to retain events."},
	"request-timeout": {
		"how long a request other than a watch may take before it is answered 504 Timeout",
		"An optional field indicating the duration a handler must keep a request open before timing it out."},
	"service-cluster-ip-range": {
		"CIDR (or an IPv4 and an IPv6 CIDR, comma-separated) from which Services get cluster IPs; its first IP is the kubernetes Service's",
		"A CIDR notation IP range from which to assign service cluster IPs (one IPv4 and one IPv6 CIDR, comma-separated, for dual-stack)."},
	"service-node-port-range": {
		"port range (MIN-MAX, inclusive) from which NodePort and LoadBalancer Services get node ports",
		"A port range to reserve for services with NodePort visibility."},
	"enable-admission-plugins": {
		"kube-apiserver's default admission plugins to keep on (naming one lapis does not run is an error)",
		"admission plugins that should be enabled in addition to default enabled ones (lapis runs kube-apiserver's default plugins: naming another is an error)."},
	"disable-admission-plugins": {
		"kube-apiserver's default admission plugins to turn off (e.g. ServiceAccount, as envtest does)",
		"admission plugins that should be disabled although they are in the default enabled plugins list."},
	"authorization-mode": {
		"ordered list of authorization modes: RBAC, AlwaysAllow",
		"Ordered list of plug-ins to do authorization on secure port: AlwaysAllow, RBAC."},
	"anonymous-auth": {
		"let requests without credentials in as system:anonymous (group system:unauthenticated), allowed only what RBAC grants them",
		"Enables anonymous requests to the secure port of the API server (user system:anonymous, group system:unauthenticated)."},
	"client-ca-file": {
		"also accept client certificates signed by a CA in this file (CN is the user, O the groups)",
		"If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate."},
	"token-auth-file": {
		"static bearer tokens, in kube-apiserver's CSV format (token,user,uid,\"group1,group2\")",
		"If set, the file that will be used to secure the secure port of the API server via token authentication."},
	"service-account-signing-key-file": {
		"private key that signs ServiceAccount tokens (default: one generated in DIR/pki/sa.key)",
		"Path to the file that contains the current private key of the service account token issuer."},
	"service-account-key-file": {
		"more PEM keys that verify ServiceAccount tokens",
		"File containing PEM-encoded x509 RSA or ECDSA private or public keys, used to verify ServiceAccount tokens."},
	"service-account-issuer": {
		"issuer of ServiceAccount tokens; the first signs, all are accepted (default https://kubernetes.default.svc.cluster.local)",
		"Identifier of the service account token issuer. The first signs; all are accepted."},
	"service-account-max-token-expiration": {
		"longest validity a TokenRequest may ask for (0: no limit)",
		"The maximum validity duration of a token created by the service account token issuer."},
	"authentication-token-webhook-config-file": {
		"kubeconfig of a webhook asked about bearer tokens nothing else knows (TokenReview)",
		"File with webhook configuration for token authentication in kubeconfig format. The API server will query the remote service to determine authentication for bearer tokens."},
	"authentication-token-webhook-version": {
		"the TokenReview version sent to the webhook: v1 or v1beta1",
		"The API version of the authentication.k8s.io TokenReview to send to and expect from the webhook."},
	"authentication-token-webhook-cache-ttl": {
		"how long the webhook's answers are remembered",
		"The duration to cache responses from the webhook token authenticator."},
	"service-account-jwks-uri": {
		"the JWKS URI /.well-known/openid-configuration names (default: lapis's /openid/v1/jwks at its advertised address)",
		"Overrides the URI for the JSON Web Key Set in the discovery doc served at /.well-known/openid-configuration."},
	"requestheader-client-ca-file": {
		"trust front proxies with a client certificate of this CA to name the user in request headers (default: lapis's own front-proxy CA, DIR/pki/front-proxy-ca.crt, with kubeadm's header flags, unless --proxy-client-cert-file is given)",
		"Root certificate bundle to use to verify client certificates on incoming requests before trusting usernames in headers specified by --requestheader-username-headers. WARNING: generally do not depend on authorization being already done for incoming requests."},
	"requestheader-allowed-names": {
		"common names of the front proxies' client certificates that may name users in headers (empty: any certificate of --requestheader-client-ca-file)",
		"List of client certificate common names to allow to provide usernames in headers specified by --requestheader-username-headers. If empty, any client certificate validated by the authorities in --requestheader-client-ca-file is allowed."},
	"requestheader-username-headers": {
		"request headers naming the user, for front proxies (X-Remote-User is common)",
		"List of request headers to inspect for usernames. X-Remote-User is common."},
	"requestheader-uid-headers": {
		"request headers naming the user's UID, for front proxies (X-Remote-Uid is suggested; needs the RemoteRequestHeaderUID feature, on by default)",
		"List of request headers to inspect for UIDs. X-Remote-Uid is suggested. Requires the RemoteRequestHeaderUID feature to be enabled."},
	"requestheader-group-headers": {
		"request headers naming the user's groups, for front proxies (X-Remote-Group is suggested)",
		"List of request headers to inspect for groups. X-Remote-Group is suggested."},
	"requestheader-extra-headers-prefix": {
		"request header prefixes naming the user's extra, for front proxies (X-Remote-Extra- is suggested)",
		"List of request header prefixes to inspect. X-Remote-Extra- is suggested."},
	"proxy-client-cert-file": {
		"client certificate lapis presents to extension API servers it proxies to, of the --requestheader-client-ca-file CA (default: lapis's own, DIR/pki/front-proxy-client.crt)",
		"Client certificate used to prove the identity of the aggregator or kube-apiserver when it must call out during a request. This includes proxying requests to a user api-server and calling out to webhook admission plugins. It is expected that this cert includes a signature from the CA in the --requestheader-client-ca-file flag. That CA is published in the 'extension-apiserver-authentication' configmap in the kube-system namespace. Components receiving calls from kube-aggregator should use that CA to perform their half of the mutual TLS verification."},
	"proxy-client-key-file": {
		"private key of --proxy-client-cert-file",
		"Private key for the client certificate used to prove the identity of the aggregator or kube-apiserver when it must call out during a request. This includes proxying requests to a user api-server and calling out to webhook admission plugins."},
	"enable-aggregator-routing": {
		"proxy to extension API servers at an endpoint of their Service rather than at its cluster IP",
		"Turns on aggregator routing requests to endpoints IP rather than cluster IP."},
}

// apply sets what the flags say: the listen address (from --listen's unless secure-port or
// bind-address was given), anonymous authentication, and kube's process-wide capabilities.
func (k *kubeFlags) apply(fs *pflag.FlagSet, cfg *server.Config) error {
	if fs.Changed("secure-port") || fs.Changed("bind-address") || cfg.Listen == "" {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if cfg.Listen == "" || err != nil {
			host, port = k.bindAddress, strconv.Itoa(k.securePort)
		}
		if fs.Changed("secure-port") || cfg.Listen == "" {
			port = strconv.Itoa(k.securePort)
		}
		if fs.Changed("bind-address") || cfg.Listen == "" {
			host = k.bindAddress
		}
		if net.ParseIP(host) == nil {
			return fmt.Errorf("--bind-address %q is not an IP address", host)
		}
		cfg.Listen = net.JoinHostPort(host, port)
	}
	cfg.NoAnonymousAuth = !k.anonymousAuth
	// As kube-apiserver's main: pod validation reads it.
	capabilities.Setup(k.allowPrivileged, 0)
	return nil
}

// ignoredKubeFlags are kube-apiserver flags lapis accepts so that command lines made for
// kube-apiserver (envtest's, a user's Configure()) start it, but that change nothing in lapis:
// the name, its value type, and why.
var ignoredKubeFlags = []struct{ name, kind, why string }{
	{"admission-control-config-file", "string", "lapis runs the admission plugins without configuration"},
	{"runtime-config", "string", "lapis serves every built-in API version kube-apiserver serves by default"},
	{"endpoint-reconciler-type", "string", "lapis keeps the kubernetes Service's endpoints itself"},
	{"api-audiences", "strings", "ServiceAccount tokens' audience is the issuer"},
	{"profiling", "bool", "no profiling endpoints"},
	{"enable-priority-and-fairness", "bool", "lapis has no API Priority and Fairness queues"},
	{"kubelet-client-certificate", "string", "lapis runs no kubelets"},
	{"kubelet-client-key", "string", "lapis runs no kubelets"},
	{"watch-cache", "bool", "lapis always serves from its watch cache"},
	{"delete-collection-workers", "int", "DELETE of a collection runs in one worker"},
	{"min-request-timeout", "int", "watches last until their client or lapis ends them"},
}

// addIgnoredKubeFlags registers ignoredKubeFlags, each saying it is ignored.
func addIgnoredKubeFlags(fs *pflag.FlagSet) {
	for _, f := range ignoredKubeFlags {
		usage := "Accepted for kube-apiserver compatibility and ignored: " + f.why + "."
		switch f.kind {
		case "strings":
			fs.StringSlice(f.name, nil, usage)
		case "bool":
			fs.Bool(f.name, false, usage)
		case "int":
			fs.Int(f.name, 0, usage)
		case "duration":
			fs.Duration(f.name, 0, usage)
		default:
			fs.String(f.name, "", usage)
		}
	}
}

// controllerManagerEnv, set to true, makes lapis started as kube-apiserver also run the
// kube-controller-manager controllers `lapis serve` runs (garbage collection, namespace
// deletion, kube-root-ca.crt, ...), which envtest's kube-apiserver has not.
const controllerManagerEnv = "LAPIS_CONTROLLER_MANAGER"

// kubeAPIServer runs lapis as `kube-apiserver` with kube-apiserver's command line (the one
// envtest passes, among others). Its data is kept in a temporary directory removed on exit:
// kube-apiserver has no data directory of its own, only etcd.
func kubeAPIServer(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, k, err := parseKubeAPIServer(fs, args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		// envtest reads this list (process.CheckFlag): kube's format, exit 0.
		fmt.Fprintf(stdout, "The Kubernetes API server, served by lapis (Kubernetes API %s.%s).\n\nUsage:\n  kube-apiserver [flags]\n\nFlags:\n%s",
			server.Version.Major, server.Version.Minor, fs.FlagUsages())
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	if k.version {
		fmt.Fprintf(stdout, "Kubernetes %s\n", server.Version.GitVersion)
		return 0
	}
	// Under the cert dir when there is one: envtest removes it, even after a SIGKILL.
	if cfg.CertDir != "" {
		if err := os.MkdirAll(cfg.CertDir, 0o700); err != nil {
			fmt.Fprintln(stderr, "Error:", err)
			return 1
		}
	}
	dir, err := os.MkdirTemp(cfg.CertDir, "lapis-kube-apiserver-")
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg.DataDir = dir
	if on, _ := strconv.ParseBool(os.Getenv(controllerManagerEnv)); on {
		cfg.KubeAPIServerOnly = false
	}
	log, err := k.logs.apply(stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	if err := runServer(context.Background(), cfg, log); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}

// kubeAPIServerFlags is what kube-apiserver's command line says beyond server.Config.
type kubeAPIServerFlags struct {
	kubeFlags
	version bool
	logs    *logging
}

// parseKubeAPIServer reads kube-apiserver's command line into a Config, with kube-apiserver's
// defaults.
func parseKubeAPIServer(fs *pflag.FlagSet, args []string) (server.Config, *kubeAPIServerFlags, error) {
	cfg := server.Config{}
	k := &kubeAPIServerFlags{}
	addKubeFlags(fs, &cfg, &k.kubeFlags, kubeAPIServerCommand)
	fs.BoolVar(&k.version, "version", false, "Print version information and quit.")
	audit.AddFlags(fs, &cfg.Audit)
	k.logs = addLoggingFlags(fs)
	addIgnoredKubeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, k, err
	}
	if fs.NArg() > 0 {
		return cfg, k, fmt.Errorf("no arguments are accepted, got %q", fs.Args())
	}
	// As envtest's kube-apiserver, without kube-controller-manager: what passes there passes
	// here (no kube-root-ca.crt appears in namespaces, no garbage is collected, ...).
	cfg.KubeAPIServerOnly = true
	if err := k.apply(fs, &cfg); err != nil {
		return cfg, k, err
	}
	return cfg, k, nil
}
