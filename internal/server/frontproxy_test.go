package server

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/lapis-dev/lapis/internal/pki"
)

// TestFrontProxy: which client certificate lapis presents to extension API servers and whom
// it trusts as a front proxy, for each combination of --proxy-client-* and
// --requestheader-client-ca-file.
func TestFrontProxy(t *testing.T) {
	given, err := pki.LoadOrCreateFrontProxy(t.TempDir()) // stands for files an operator made
	if err != nil {
		t.Fatal(err)
	}
	flagsRH := RequestHeaderConfig{ClientCAFile: given.CAFile, UsernameHeaders: []string{"X-Remote-User", "X-Proxy-User"},
		GroupHeaders: []string{"X-Remote-Group"}, ExtraHeadersPrefix: []string{"X-Remote-Extra-"}, AllowedNames: []string{"aggregator"}}
	type want struct {
		ownCert     bool // lapis's own front-proxy-client certificate, not the flags'
		trustOwnCA  bool // request headers trusted with lapis's own CA and kubeadm's flags
		trustFlags  bool // request headers trusted as the flags say
		errContains string
	}
	for _, c := range []struct {
		name    string
		cfg     Config
		uidGate bool
		want    want
	}{
		{name: "no flags", uidGate: true, want: want{ownCert: true, trustOwnCA: true}},
		{name: "no flags, RemoteRequestHeaderUID off", want: want{ownCert: true, trustOwnCA: true}},
		{name: "all flags", uidGate: true, cfg: Config{ProxyClientCertFile: given.ClientCert, ProxyClientKeyFile: given.ClientKey, RequestHeader: flagsRH},
			want: want{trustFlags: true}},
		{name: "proxy client only: no front proxy trusted", uidGate: true, cfg: Config{ProxyClientCertFile: given.ClientCert, ProxyClientKeyFile: given.ClientKey}},
		{name: "request-header CA only", uidGate: true, cfg: Config{RequestHeader: flagsRH}, want: want{ownCert: true, trustFlags: true}},
		{name: "a proxy client certificate without its key", uidGate: true, cfg: Config{ProxyClientCertFile: given.ClientCert},
			want: want{ownCert: true, trustOwnCA: true}},
		{name: "a missing proxy client certificate", uidGate: true, cfg: Config{ProxyClientCertFile: "/nonexistent.crt", ProxyClientKeyFile: given.ClientKey},
			want: want{errContains: "--proxy-client-cert-file"}},
		{name: "a missing request-header CA", uidGate: true, cfg: Config{RequestHeader: RequestHeaderConfig{ClientCAFile: "/nonexistent.crt"}},
			want: want{errContains: "--requestheader-client-ca-file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.RemoteRequestHeaderUID, c.uidGate)
			c.cfg.DataDir = t.TempDir()
			fp, err := newFrontProxy(c.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if c.want.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), c.want.errContains) {
					t.Fatalf("error %v, want %q", err, c.want.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(c.cfg.DataDir, "pki")
			certPEM, keyPEM := fp.CurrentCertKeyContent()
			wantCert, wantKey := readPair(t, given.ClientCert, given.ClientKey)
			if c.want.ownCert {
				wantCert, wantKey = readPair(t, filepath.Join(own, "front-proxy-client.crt"), filepath.Join(own, "front-proxy-client.key"))
			} else if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("lapis made front-proxy credentials it does not use (%v)", err)
			}
			if !bytes.Equal(certPEM, wantCert) || !bytes.Equal(keyPEM, wantKey) {
				t.Errorf("the proxy client certificate is not the one wanted (own: %v)", c.want.ownCert)
			}
			checkTrust(t, fp, c.want.trustOwnCA, c.want.trustFlags, c.uidGate, filepath.Join(own, "front-proxy-ca.crt"), given.CAFile, flagsRH)
		})
	}
}

// checkTrust compares fp's request-header configuration with the one wanted.
func checkTrust(t *testing.T, fp *frontProxy, ownCA, flags, uidGate bool, ownCAFile, flagsCAFile string, flagsRH RequestHeaderConfig) {
	t.Helper()
	rh := fp.requestHeader
	if !ownCA && !flags {
		if rh != nil || fp.requestHeaderCA != nil {
			t.Errorf("front proxies trusted: %+v", rh)
		}
		return
	}
	if rh == nil {
		t.Fatal("no front proxy trusted")
	}
	caFile, wantRH := flagsCAFile, flagsRH
	if ownCA {
		caFile, wantRH = ownCAFile, RequestHeaderConfig{UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"},
			ExtraHeadersPrefix: []string{"X-Remote-Extra-"}, AllowedNames: []string{"front-proxy-client"}}
		if uidGate {
			wantRH.UIDHeaders = []string{"X-Remote-Uid"}
		}
	}
	wantCA, _ := readPair(t, caFile, caFile)
	if !bytes.Equal(fp.requestHeaderCA.CurrentCABundleContent(), wantCA) || !bytes.Equal(rh.CAContentProvider.CurrentCABundleContent(), wantCA) {
		t.Errorf("request-header CA is not %s", caFile)
	}
	for _, f := range []struct {
		name      string
		got, want []string
	}{
		{"username headers", rh.UsernameHeaders.Value(), wantRH.UsernameHeaders},
		{"uid headers", rh.UIDHeaders.Value(), wantRH.UIDHeaders},
		{"group headers", rh.GroupHeaders.Value(), wantRH.GroupHeaders},
		{"extra headers prefixes", rh.ExtraHeaderPrefixes.Value(), wantRH.ExtraHeadersPrefix},
		{"allowed names", rh.AllowedClientNames.Value(), wantRH.AllowedNames},
	} {
		if !slices.Equal(f.got, f.want) {
			t.Errorf("%s %q, want %q", f.name, f.got, f.want)
		}
	}
}

func readPair(t *testing.T, certFile, keyFile string) ([]byte, []byte) {
	t.Helper()
	cert, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestValidateRequestHeader: Config.validate refuses what kube-apiserver refuses.
func TestValidateRequestHeader(t *testing.T) {
	for _, c := range []struct {
		rh   RequestHeaderConfig
		want string
	}{
		{RequestHeaderConfig{UIDHeaders: []string{"X-Remote-Uid"}}, ""},
		{RequestHeaderConfig{UIDHeaders: []string{"X-Uid"}}, "--requestheader-uid-headers is set without specifying the standard X-Remote-Uid header"},
		{RequestHeaderConfig{GroupHeaders: []string{" "}}, `empty value in "requestheader-group-headers"`},
	} {
		err := Config{RequestHeader: c.rh}.withDefaults().validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.rh, err, c.want)
		}
	}
}

// listener counts the times it is told of a change.
type listener chan struct{}

func (l listener) Enqueue() {
	select {
	case l <- struct{}{}:
	default:
	}
}

// TestFrontProxyReload: the flags' certificate files, replaced while lapis runs, are what
// lapis presents from then on, and listeners are told.
func TestFrontProxyReload(t *testing.T) {
	dir := t.TempDir()
	first, err := pki.LoadOrCreateFrontProxy(filepath.Join(dir, "first"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := pki.LoadOrCreateFrontProxy(filepath.Join(dir, "second"))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "proxy.crt"), filepath.Join(dir, "proxy.key")
	copyPair := func(from pki.FrontProxyFiles) {
		cert, key := readPair(t, from.ClientCert, from.ClientKey)
		if err := pki.WriteFileAtomic(keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := pki.WriteFileAtomic(certFile, cert, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyPair(first)
	fp, err := newFrontProxy(Config{DataDir: dir, ProxyClientCertFile: certFile, ProxyClientKeyFile: keyFile}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	changed := make(listener, 1)
	fp.AddListener(changed)
	fp.run(t.Context())
	time.Sleep(100 * time.Millisecond) // the watch is set
	copyPair(second)
	want, _ := readPair(t, second.ClientCert, second.ClientKey)
	deadline := time.Now().Add(10 * time.Second)
	for cert, _ := fp.CurrentCertKeyContent(); !bytes.Equal(cert, want); cert, _ = fp.CurrentCertKeyContent() {
		if time.Now().After(deadline) {
			t.Fatal("the replaced certificate was not read")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-changed:
	case <-time.After(time.Second):
		t.Error("the listener was not told")
	}
}
