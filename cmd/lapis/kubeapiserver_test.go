package main

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/lapis-dev/lapis/internal/audit"
	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/server"
)

// envtestArgs is the command line controller-runtime v0.25.2's envtest gives kube-apiserver.
var envtestArgs = []string{
	"--allow-privileged=true", "--authorization-mode=RBAC", "--bind-address=127.0.0.1",
	"--cert-dir=/tmp/k8s_test_framework_1", "--client-ca-file=/tmp/k8s_test_framework_1/client-cert-auth-ca.crt",
	"--disable-admission-plugins=ServiceAccount", "--etcd-servers=http://127.0.0.1:39859", "--secure-port=42847",
	"--service-account-issuer=https://127.0.0.1:42847/", "--service-account-key-file=/tmp/k8s_test_framework_1/sa-signer.crt",
	"--service-account-signing-key-file=/tmp/k8s_test_framework_1/sa-signer.key", "--service-cluster-ip-range=10.0.0.0/24",
}

func TestParseKubeAPIServer(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		want    func(*server.Config)
		wantErr string
	}{
		{name: "envtest's flags", args: envtestArgs, want: func(c *server.Config) {
			c.Listen = "127.0.0.1:42847"
			c.CertDir = "/tmp/k8s_test_framework_1"
			c.ClientCAFile = "/tmp/k8s_test_framework_1/client-cert-auth-ca.crt"
			c.EtcdServers = []string{"http://127.0.0.1:39859"}
			c.AuthorizationModes = []string{"RBAC"}
			c.DisableAdmissionPlugins = []string{"ServiceAccount"}
			c.ServiceAccountIssuers = []string{"https://127.0.0.1:42847/"}
			c.ServiceAccountKeyFiles = []string{"/tmp/k8s_test_framework_1/sa-signer.crt"}
			c.ServiceAccountSigningKeyFile = "/tmp/k8s_test_framework_1/sa-signer.key"
		}},
		{name: "kube's defaults", want: func(c *server.Config) {
			c.Listen = "0.0.0.0:6443"
			c.AuthorizationModes = []string{"AlwaysAllow"}
		}},
		{name: "serving flags", args: []string{"--tls-cert-file=a.crt", "--tls-private-key-file=a.key", "--advertise-address=10.1.2.3",
			"--bind-address=::1", "--secure-port=0", "--anonymous-auth=false", "--max-requests-inflight=10", "-v=4"}, want: func(c *server.Config) {
			c.Listen = "[::1]:0"
			c.TLSCertFile, c.TLSPrivateKeyFile, c.AdvertiseAddress = "a.crt", "a.key", "10.1.2.3"
			c.NoAnonymousAuth, c.MaxRequestsInflight = true, 10
			c.AuthorizationModes = []string{"AlwaysAllow"}
		}},
		{name: "etcd prefix", args: []string{"--etcd-prefix=/tenant-a"}, want: func(c *server.Config) {
			c.Listen = "0.0.0.0:6443"
			c.AuthorizationModes = []string{"AlwaysAllow"}
			c.EtcdPrefix = "/tenant-a"
		}},
		{name: "event ttl", args: []string{"--event-ttl=0"}, want: func(c *server.Config) {
			c.Listen = "0.0.0.0:6443"
			c.AuthorizationModes = []string{"AlwaysAllow"}
			c.EventTTL = 0
		}},
		{name: "front proxy flags", args: []string{"--requestheader-client-ca-file=fp-ca.crt", "--requestheader-allowed-names=front-proxy-client,other",
			"--requestheader-username-headers=X-Remote-User", "--requestheader-uid-headers=X-Remote-Uid", "--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-", "--proxy-client-cert-file=fp.crt", "--proxy-client-key-file=fp.key",
			"--enable-aggregator-routing"}, want: func(c *server.Config) {
			c.Listen = "0.0.0.0:6443"
			c.AuthorizationModes = []string{"AlwaysAllow"}
			c.RequestHeader = server.RequestHeaderConfig{ClientCAFile: "fp-ca.crt", AllowedNames: []string{"front-proxy-client", "other"},
				UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"}, GroupHeaders: []string{"X-Remote-Group"},
				ExtraHeadersPrefix: []string{"X-Remote-Extra-"}}
			c.ProxyClientCertFile, c.ProxyClientKeyFile, c.EnableAggregatorRouting = "fp.crt", "fp.key", true
		}},
		{name: "unknown flag", args: []string{"--insecure-port=0"}, wantErr: "unknown flag: --insecure-port"},
		{name: "bind address not an IP", args: []string{"--bind-address=localhost"}, wantErr: `--bind-address "localhost" is not an IP address`},
		{name: "arguments", args: []string{"serve"}, wantErr: "no arguments are accepted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got, _, err := parseKubeAPIServer(fs, c.args)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := server.Config{
				EtcdPrefix: server.DefaultEtcdPrefix, EventTTL: server.DefaultEventTTL, EtcdCompactionInterval: server.DefaultCompactionInterval, RequestTimeout: server.DefaultRequestTimeout, StorageMediaType: "application/json",
				ServiceClusterIPRange: "10.0.0.0/24", ServiceNodePortRange: "30000-32767", KubeAPIServerOnly: true,
				TokenWebhook: authn.TokenWebhookConfig{Version: "v1beta1", CacheTTL: 2 * time.Minute},
			}
			audit.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError), &want.Audit)
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("config\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// Every shared flag has help in both commands' words.
func TestSharedFlagsHelp(t *testing.T) {
	for _, cmd := range []command{serveCommand, kubeAPIServerCommand} {
		fs := pflag.NewFlagSet("flags", pflag.ContinueOnError)
		addConfigFlags(fs, &server.Config{}, &kubeFlags{}, cmd)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("command %d: --%s has no help", cmd, f.Name)
			}
		})
	}
}

// The kube-apiserver flags of `lapis serve` change --listen's host or port only when given.
func TestServeKubeFlags(t *testing.T) {
	for _, c := range []struct {
		args       []string
		listen     string
		wantListen string
	}{
		{nil, "127.0.0.1:6443", "127.0.0.1:6443"},
		{[]string{"--secure-port=7443"}, "127.0.0.1:6443", "127.0.0.1:7443"},
		{[]string{"--bind-address=0.0.0.0"}, "127.0.0.1:0", "0.0.0.0:0"},
		{[]string{"--bind-address=::", "--secure-port=1"}, "127.0.0.1:0", "[::]:1"},
	} {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		cfg := server.Config{}
		fs.StringVar(&cfg.Listen, "listen", c.listen, "")
		var k kubeFlags
		addKubeFlags(fs, &cfg, &k, serveCommand)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := k.apply(fs, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Listen != c.wantListen {
			t.Errorf("%v with --listen %s: listen %s, want %s", c.args, c.listen, cfg.Listen, c.wantListen)
		}
	}
}

func TestKubeAPIServerHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := kubeAPIServer([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errOut.String())
	}
	for _, line := range []string{"      --secure-port int ", "      --etcd-servers strings ", "      --feature-gates mapStringBool "} {
		if !strings.Contains(out.String(), "\n"+line) {
			t.Errorf("--help lacks a line starting %q", line)
		}
	}
	out.Reset()
	if code := kubeAPIServer([]string{"--version"}, &out, &errOut); code != 0 || out.String() != "Kubernetes "+server.Version.GitVersion+"\n" {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	if code := kubeAPIServer([]string{"--nope"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "unknown flag: --nope") {
		t.Errorf("unknown flag: exit %d, %q", code, errOut.String())
	}
}

func TestParseEtcd(t *testing.T) {
	fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f, err := parseEtcd(fs, []string{"--advertise-client-urls=http://127.0.0.1:1", "--data-dir=/d", "--listen-client-urls=http://127.0.0.1:1", "--listen-peer-urls=http://127.0.0.1:2"})
	if err != nil || f.dataDir != "/d" || !reflect.DeepEqual(f.listenClientURLs, []string{"http://127.0.0.1:1"}) {
		t.Errorf("envtest's etcd flags: %+v %v", f, err)
	}
	for args, want := range map[string]string{
		"--listen-client-urls=https://127.0.0.1:1":                   "one http://HOST:PORT URL",
		"--listen-client-urls=http://127.0.0.1:1,http://127.0.0.1:2": "listens on one URL",
		"--unsafe-no-fsync": "unknown flag",
	} {
		fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if _, err := parseEtcd(fs, []string{args}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	fs = pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseEtcd(fs, []string{"--help"}); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}
