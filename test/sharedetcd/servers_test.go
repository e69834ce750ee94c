package sharedetcd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

// kcmControllers are kube-controller-manager's controllers that lapis runs itself: with them,
// kube's control plane keeps the same objects lapis's does (default ServiceAccounts,
// kube-root-ca.crt, aggregated ClusterRoles, quota status, garbage collection, ...), so that a
// server that reads the other's data has nothing to catch up on.
const kcmControllers = "serviceaccount-controller,root-ca-certificate-publisher-controller,namespace-controller," +
	"garbage-collector-controller,resourcequota-controller,clusterrole-aggregation-controller," +
	"serviceaccount-token-controller,validatingadmissionpolicy-status-controller"

// etcdServer is an etcd of lapis's own version (3.7, lapis's embedded etcd) in the test
// process, exposed on loopback for both servers.
type etcdServer struct {
	url     string
	backend *storage.Backend
	client  *clientv3.Client // over the network, as etcdctl is
}

// startEtcd starts etcd on dir/etcd (OpenEmbedded's layout), stopped when t ends.
func startEtcd(t *testing.T, dir string) *etcdServer {
	t.Helper()
	port, err := kubereference.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	e := &etcdServer{url: "http://127.0.0.1:" + strconv.Itoa(port)}
	if e.backend, err = storage.OpenEmbedded(t.Context(), dir, e.url); err != nil {
		t.Fatalf("starting etcd in %s: %v", dir, err)
	}
	e.client, err = clientv3.New(clientv3.Config{Endpoints: []string{e.url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}

func (e *etcdServer) stop() {
	e.client.Close()
	_ = e.backend.Close()
}

// revision is etcd's current revision.
func (e *etcdServer) revision(ctx context.Context) (int64, error) {
	resp, err := e.client.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// server is kube-apiserver or lapis, running or stopped.
type server struct {
	name   string // "kube-apiserver" or "lapis"
	config *rest.Config
	http   *http.Client
	dyn    dynamic.Interface
	stopFn func() error
	done   bool
	// stopControllers ends kube-apiserver's kube-controller-manager, leaving it running.
	stopControllers func() error
}

// stop stops the server (SIGTERM, SIGKILL after a while), failing t when it had to be killed.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if s.done {
		return
	}
	s.done = true
	s.http.CloseIdleConnections()
	if err := s.stopFn(); err != nil {
		t.Errorf("stopping %s: %v", s.name, err)
	}
}

func newServer(t *testing.T, name string, config *rest.Config) *server {
	t.Helper()
	config.QPS, config.Burst = -1, 0 // no client-side throttling
	hc, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfigAndClient(config, hc)
	if err != nil {
		t.Fatal(err)
	}
	return &server{name: name, config: config, http: hc, dyn: dyn}
}

// endpoint is where a server listens and the address it advertises; kube-apiserver and lapis
// taking turns on one etcd use the same one, as a control plane's servers do, so that the
// kubernetes Service (whose target port is the server's) and its endpoints are the same
// whichever serves. The advertised address is a documentation address (RFC 5737) nothing
// reaches: kube's endpoint reconciler refuses loopback addresses, and its leases are what is
// compared.
type endpoint struct {
	address, advertise string
	port               int
}

// startKube starts kube-apiserver in dir on e, with kube-controller-manager unless
// withoutControllers; it is stopped when owner ends.
func startKube(t, owner *testing.T, dir string, e *etcdServer, at endpoint, withoutControllers bool) *server {
	t.Helper()
	opts := kubereference.ServerOptions{Dir: dir, EtcdURL: e.url, Address: at.address, AdvertiseAddress: at.advertise, Port: at.port, Controllers: kcmControllers}
	if withoutControllers {
		opts.Controllers = ""
	}
	ks, err := kubereference.StartServer(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	s := newServer(t, "kube-apiserver", ks.Config)
	s.stopFn, s.stopControllers = ks.Stop, ks.StopControllers
	owner.Cleanup(func() {
		s.stop(owner)
		if owner.Failed() {
			owner.Logf("kube-apiserver log (%s):\n%s", dir, lapisproc.Tail(ks.Log(), 16<<10))
		}
	})
	return s
}

// startLapis starts lapis with its data in dataDir on e, with kube-apiserver's flags and the
// PKI's CA as its own (written into dataDir/pki before its first start); it is stopped when
// owner ends.
func startLapis(t, owner *testing.T, dataDir string, pki kubereference.PKI, e *etcdServer, at endpoint) *server {
	t.Helper()
	if err := shareCA(dataDir, pki); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("%s:%d", at.address, at.port)
	p := lapisproc.New(lapisproc.Options{Bin: lapisBin, DataDir: dataDir, WaitReady: true, LogTail: 32 << 10, Flags: []string{
		"--etcd-servers", e.url, "--listen", listen, "--advertise-address", at.advertise,
		"--client-ca-file", pki.CACert, "--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", pki.SAPub, "--service-account-signing-key-file", pki.SAKey,
		"--service-cluster-ip-range", "10.96.0.0/16", "--authorization-mode", "RBAC", "--allow-privileged=true",
	}})
	owner.Cleanup(func() {
		p.Close()
		if owner.Failed() {
			owner.Logf("lapis log (%s):\n%s", dataDir, lapisproc.Tail(p.Log().String(), 16<<10))
		}
	})
	if err := p.Start(t.Context()); err != nil {
		t.Fatalf("starting lapis: %v", err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, "lapis", config)
	s.stopFn = func() error { return p.Stop(context.Background()) }
	return s
}

// shareCA makes the PKI's CA lapis's own CA in dataDir, unless lapis has one there.
func shareCA(dataDir string, pki kubereference.PKI) error {
	dir := filepath.Join(dataDir, "pki")
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for from, to := range map[string]string{pki.CACert: "ca.crt", pki.CAKey: "ca.key"} {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// answer is a server's answer to one request.
type answer struct {
	code int
	body []byte
}

// Media types of the requests.
const (
	jsonType   = "application/json"
	mergeType  = "application/merge-patch+json"
	applyType  = "application/apply-patch+yaml"
	tableType  = "application/json;as=Table;v=v1;g=meta.k8s.io"
	fieldOwner = "sharedetcd" // the field manager of the corpus's writes
)

// do sends one request and reads the whole answer; a transport error fails t.
func (s *server) do(t *testing.T, method, path, contentType, accept string, body []byte) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.config.Host+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept == "" {
		accept = jsonType
	}
	req.Header.Set("Accept", accept)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", s.name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %s %s: reading the answer: %v", s.name, method, path, err)
	}
	return answer{code: resp.StatusCode, body: b}
}

// must is do, failing t (Fatal) unless the answer's code is one of want.
func (s *server) must(t *testing.T, method, path, contentType string, body []byte, want ...int) answer {
	t.Helper()
	a := s.do(t, method, path, contentType, "", body)
	for _, w := range want {
		if a.code == w {
			return a
		}
	}
	t.Fatalf("%s: %s %s: %d, want %v: %s", s.name, method, path, a.code, want, a.body)
	return a
}

// quietFor is how long etcd must see no write but the servers' own for them to count as settled.
const quietFor = 2 * time.Second

// quiet waits (30 s at most) until etcd has seen no write for quietFor but those the running
// servers keep making to their own objects (restless): the servers and controllers have done
// what starting, or the last writes, gave them to do.
func quiet(t *testing.T, e *etcdServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rev, err := e.revision(ctx)
	if err != nil {
		t.Fatalf("etcd revision: %v", err)
	}
	events := e.client.Watch(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	timer := time.NewTimer(quietFor)
	defer timer.Stop()
	last := ""
	for {
		select {
		case resp := <-events:
			for _, ev := range resp.Events {
				if key := string(ev.Kv.Key); !restless(key) {
					last = key
					timer.Reset(quietFor)
				}
			}
		case <-timer.C:
			return
		case <-ctx.Done():
			t.Logf("etcd still written to after 30 s (last %s); going on", last)
			return
		}
	}
}
