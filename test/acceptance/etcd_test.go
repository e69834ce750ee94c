package acceptance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

// listeningPorts is what lapis's process listens on over TCP, as the kernel sees it.
func (l *lapisProc) listeningPorts(t *testing.T) []int {
	t.Helper()
	ports, err := lapisproc.ListeningPorts(l.proc.Process().Pid)
	if errors.Is(err, lapisproc.ErrNoProc) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

func (l *lapisProc) apiPort(t *testing.T) int {
	t.Helper()
	_, port, _ := strings.Cut(strings.TrimPrefix(l.server, "https://127.0.0.1"), ":")
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("server %s: %v", l.server, err)
	}
	return p
}

func TestEmbeddedEtcdOpensNoPort(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "listening")
	if got, want := l.listeningPorts(t), []int{l.apiPort(t)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lapis listens on TCP ports %v, want only the API's %v", got, want)
	}
}

func TestEmbeddedEtcdListenNeedsHTTPS(t *testing.T) {
	t.Parallel()
	if skipMessage != "" {
		t.Skip(skipMessage)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	_, errOut, err := runCmd(os.Environ(), "", lapisBin, "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--embedded-etcd-listen", url)
	if err == nil {
		t.Fatalf("lapis serve --embedded-etcd-listen %s started", url)
	}
	wantEqual(t, "error", errOut, fmt.Sprintf(`lapis: --embedded-etcd-listen %q: the embedded etcd is exposed only over https, to clients with a certificate of lapis's CA (e.g. https://127.0.0.1:2379)`, url))
}

// etcdClientFiles are the files another lapis uses to reach l's exposed etcd.
func (l *lapisProc) etcdClientFiles() (ca, cert, key string) {
	pki := filepath.Join(l.dataDir, "pki")
	return filepath.Join(pki, "ca.crt"), filepath.Join(pki, "etcd-client.crt"), filepath.Join(pki, "etcd-client.key")
}

// etcdGet reads key from etcd at endpoint with tlsConfig (nil: plain), within a few seconds.
func etcdGet(endpoint string, tlsConfig *tls.Config, key string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer c.Close()
	resp, err := c.Get(ctx, key, clientv3.WithPrefix())
	if err != nil {
		return "", err
	}
	return fmt.Sprint(resp.Count), nil
}

// testExposedEtcd checks that a's etcd at endpoint serves its etcd client certificate only.
func testExposedEtcd(t *testing.T, a *lapisProc, endpoint string) {
	caFile, certFile, keyFile := a.etcdClientFiles()
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(caFile); err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA %s: %v", caFile, err)
	}
	clientCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{keyFile, filepath.Join(a.dataDir, "pki", "etcd-server.key")} {
		if info, err := os.Stat(f); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, info, err)
		}
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(a.dataDir, "pki", "admin.crt"), filepath.Join(a.dataDir, "pki", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	plain := strings.Replace(endpoint, "https://", "http://", 1)
	for _, tc := range []struct {
		name     string
		endpoint string
		tls      *tls.Config
		ok       bool
	}{
		{"etcd client certificate", endpoint, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}, true},
		{"no client certificate", endpoint, &tls.Config{RootCAs: pool}, false},
		{"lapis's admin certificate (same CA)", endpoint, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}, false},
		{"plain http", plain, nil, false},
	} {
		got, err := etcdGet(tc.endpoint, tc.tls, "/registry/configmaps/")
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: read %s configmaps from the exposed etcd, want refused", tc.name, got)
		}
	}
	_, etcdPort, _ := strings.Cut(strings.TrimPrefix(endpoint, "https://"), ":")
	want := []string{strconv.Itoa(a.apiPort(t)), etcdPort}
	sort.Strings(want)
	var got []string
	for _, p := range a.listeningPorts(t) {
		got = append(got, strconv.Itoa(p))
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lapis listens on TCP ports %v, want the API's and the exposed etcd's %v", got, want)
	}
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	l := startLapis(t, "--request-timeout", "1s")

	// A request that cannot finish in time is answered as kube-apiserver does.
	code, body := l.do(t, "GET", "/api/v1/namespaces?timeout=1ns", "", "", true)
	var status struct{ Kind, Status, Message, Reason string }
	_ = json.Unmarshal([]byte(body), &status)
	if code != 504 || status.Kind != "Status" || status.Reason != "Timeout" || status.Message != "Timeout: request did not complete within the allotted timeout" {
		t.Errorf("expired request: %d %s", code, body)
	}
	code, body = l.do(t, "GET", "/api/v1/namespaces?timeout=later", "", "", true)
	wantEqual(t, "invalid timeout", fmt.Sprint(code, " ", body), `400 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid timeout specified in the request URL - time: invalid duration \"later\"","reason":"BadRequest","code":400}`)

	// A watch lasts longer than --request-timeout: until its own timeoutSeconds.
	start := time.Now()
	code, body = l.do(t, "GET", "/api/v1/namespaces?watch=true&timeoutSeconds=3", "", "", true)
	if took := time.Since(start); code != 200 || took < 2900*time.Millisecond || !strings.Contains(body, `"ADDED"`) {
		t.Errorf("watch: %d after %v: %.200s", code, took, body)
	}
}
