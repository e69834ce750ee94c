package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/pki"
	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

// listeningPorts is the set of TCP ports this process listens on, as the kernel sees them.
func listeningPorts(t *testing.T) map[int]bool {
	t.Helper()
	ports, err := lapisproc.ListeningPorts(os.Getpid())
	if errors.Is(err, lapisproc.ErrNoProc) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	set := map[int]bool{}
	for _, p := range ports {
		set[p] = true
	}
	return set
}

func TestEmbeddedOpensNoSocket(t *testing.T) {
	before := listeningPorts(t)
	b, err := OpenEmbedded(context.Background(), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Client.Put(context.Background(), "k", "v"); err != nil {
		t.Fatal(err)
	}
	for p := range listeningPorts(t) {
		if !before[p] {
			t.Errorf("the embedded etcd listens on TCP port %d", p)
		}
	}
}

func TestEmbeddedTLS(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.LoadOrCreate(dir, "127.0.0.1"); err != nil { // lapis's CA and admin certificate
		t.Fatal(err)
	}
	files, err := pki.LoadOrCreateEtcd(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	serving := &ServerTLS{CertFile: files.ServerCert, KeyFile: files.ServerKey, ClientCAFile: files.CAFile, ClientCNs: []string{pki.EtcdClientCN}}
	port := strconv.Itoa(freePort(t))

	for _, bad := range []struct {
		url     string
		serving *ServerTLS
	}{
		{"http://127.0.0.1:" + port, serving},
		{"https://127.0.0.1:" + port, nil},
		{"", serving},
	} {
		if b, err := OpenEmbeddedTLS(context.Background(), t.TempDir(), bad.url, bad.serving); err == nil {
			b.Close()
			t.Errorf("OpenEmbeddedTLS(%q, serving %v) succeeded", bad.url, bad.serving != nil)
		}
	}

	b, err := OpenEmbeddedTLS(context.Background(), dir, "https://127.0.0.1:"+port, serving)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Client.Put(context.Background(), "secret", "s3cr3t"); err != nil {
		t.Fatal(err)
	}

	pki := filepath.Join(dir, "pki")
	for _, tc := range []struct {
		name          string
		scheme        string
		ca, cert, key string
		wantOK        bool
	}{
		{"the etcd client certificate", "https", files.CAFile, files.ClientCert, files.ClientKey, true},
		{"no client certificate", "https", files.CAFile, "", "", false},
		{"another certificate of the same CA", "https", files.CAFile, filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), false},
		{"plain http", "http", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tlsCfg *tls.Config
			if tc.scheme == "https" {
				if tlsCfg, err = ClientTLSConfig(tc.ca, tc.cert, tc.key); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			c, err := OpenExternalTLS(ctx, []string{fmt.Sprintf("%s://127.0.0.1:%s", tc.scheme, port)}, tlsCfg)
			if err == nil {
				defer c.Close()
				resp, gerr := c.Client.Get(ctx, "secret")
				if gerr == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "s3cr3t" {
					if !tc.wantOK {
						t.Fatalf("read the secret without the etcd client certificate")
					}
					return
				}
				err = gerr
			}
			if tc.wantOK {
				t.Fatalf("connecting with the etcd client certificate: %v", err)
			}
		})
	}

	for _, key := range []string{files.ClientKey, files.ServerKey} {
		if info, err := os.Stat(key); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", key, info, err)
		}
	}
}
