package acceptance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdClient is a client of l's embedded etcd exposed at endpoint, closed when the test ends.
func (l *lapisProc) etcdClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	caFile, certFile, keyFile := l.etcdClientFiles()
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(caFile); err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA %s: %v", caFile, err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 3 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// etcdHas tells which of keys etcd holds.
func etcdHas(t *testing.T, c *clientv3.Client, keys ...string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	has := map[string]bool{}
	for _, k := range keys {
		resp, err := c.Get(ctx, k, clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		has[k] = resp.Count == 1
	}
	return has
}

// TestEtcdKeysAreKubes: objects are stored under kube-apiserver 1.37's keys (no group for
// built-in resources, kube's older names for some), and an older lapis's keys move there.
func TestEtcdKeysAreKubes(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	l := startLapis(t, "--embedded-etcd-listen", endpoint)
	l.must(t, "create", "ns", "keys")
	l.applyCRD(t, widgetCRD, "widgets.acme.example.com")
	l.must(t, "create", "deployment", "web", "-n", "keys", "--image=nginx")
	l.must(t, "create", "service", "clusterip", "web", "-n", "keys", "--tcp=80:80")
	l.mustIn(t, "apiVersion: v1\nkind: Node\nmetadata: {name: keys-node}\n", "create", "-f", "-")
	l.must(t, "create", "clusterrole", "keys-reader", "--verb=get", "--resource=pods")
	l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: keys}\nspec: {size: 2}\n", "create", "-f", "-")

	c := l.etcdClient(t, endpoint)
	want := []string{
		"/registry/namespaces/keys",
		"/registry/deployments/keys/web",
		"/registry/services/specs/keys/web",
		"/registry/minions/keys-node",
		"/registry/clusterroles/keys-reader",
		"/registry/acme.example.com/widgets/keys/w1",
		"/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.acme.example.com",
	}
	gone := []string{
		"/registry/apps/deployments/keys/web",
		"/registry/services/keys/web",
		"/registry/nodes/keys-node",
		"/registry/rbac.authorization.k8s.io/clusterroles/keys-reader",
	}
	has := etcdHas(t, c, append(want, gone...)...)
	for _, k := range want {
		if !has[k] {
			t.Errorf("no key %s", k)
		}
	}
	for _, k := range gone {
		if has[k] {
			t.Errorf("key %s, in lapis's older layout", k)
		}
	}

	// Metrics still name the resource a key belongs to, though built-in keys carry no group.
	code, metrics := l.do(t, "GET", "/metrics", "", "", true)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, series := range []string{
		`etcd_requests_total{group="apps",operation="create",resource="deployments"}`,
		`etcd_requests_total{group="",operation="create",resource="services"}`,
		`etcd_requests_total{group="",operation="create",resource="nodes"}`,
		`etcd_requests_total{group="rbac.authorization.k8s.io",operation="create",resource="clusterroles"}`,
		`etcd_requests_total{group="acme.example.com",operation="create",resource="widgets"}`,
	} {
		wantContains(t, "metrics", metrics, series)
	}

	// An older lapis's deployment (its key without the group) is served after a restart, at
	// kube's key.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/registry/deployments/keys/web")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("deployment web: %v", err)
	}
	value := strings.Replace(string(resp.Kvs[0].Value), `"name":"web"`, `"name":"older"`, 1)
	if _, err := c.Put(ctx, "/registry/apps/deployments/keys/older", value); err != nil {
		t.Fatal(err)
	}
	c.Close()
	l.Restart(t)
	wantEqual(t, "older deployment", l.must(t, "get", "deployment", "older", "-n", "keys", "-o", "name"), "deployment.apps/older")
	has = etcdHas(t, l.etcdClient(t, endpoint), "/registry/deployments/keys/older", "/registry/apps/deployments/keys/older")
	if !has["/registry/deployments/keys/older"] || has["/registry/apps/deployments/keys/older"] {
		t.Errorf("after restart: %v, want only kube's key", has)
	}
	wantContains(t, "log", l.log.String(), "moved objects to kube's etcd keys")
}

// TestEtcdKeysBelowPrefix: two lapis on one etcd with different --etcd-prefix keep everything
// below their own prefix and never see each other's objects, even of the same name.
func TestEtcdKeysBelowPrefix(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	a := startLapis(t, "--embedded-etcd-listen", endpoint)
	caFile, certFile, keyFile := a.etcdClientFiles()
	b := startLapis(t, "--etcd-servers", endpoint, "--etcd-cafile", caFile, "--etcd-certfile", certFile, "--etcd-keyfile", keyFile,
		"--etcd-prefix", "tenant-b/")
	a.must(t, "create", "configmap", "only-a", "-n", "default")
	b.must(t, "create", "configmap", "only-b", "-n", "default")
	a.must(t, "create", "configmap", "same", "-n", "default", "--from-literal=by=a")
	b.must(t, "create", "configmap", "same", "-n", "default", "--from-literal=by=b")
	b.must(t, "create", "service", "nodeport", "np", "-n", "default", "--tcp=80:80")

	wantEqual(t, "a reads its own", a.must(t, "get", "configmap", "same", "-n", "default", "-o", "jsonpath={.data.by}"), "a")
	wantEqual(t, "b reads its own", b.must(t, "get", "configmap", "same", "-n", "default", "-o", "jsonpath={.data.by}"), "b")
	wantEqual(t, "a's objects through b", b.fails(t, "", "get", "configmap", "only-a", "-n", "default"),
		`Error from server (NotFound): configmaps "only-a" not found`)
	wantEqual(t, "b's objects through a", a.fails(t, "", "get", "configmap", "only-b", "-n", "default"),
		`Error from server (NotFound): configmaps "only-b" not found`)
	wantEqual(t, "a's Services", a.must(t, "get", "services", "-A", "-o", "name"), "service/kubernetes")

	// A watch through b sees b's writes only: a's, made first, would come first.
	_, events := b.watch(t, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+
		b.must(t, "get", "configmaps", "-n", "default", "-o", "jsonpath={.metadata.resourceVersion}"))
	a.must(t, "create", "configmap", "later-a", "-n", "default")
	b.must(t, "create", "configmap", "later-b", "-n", "default")
	for e := nextEvents(t, events, 1)[0]; ; e = nextEvents(t, events, 1)[0] {
		if name := e.meta(t).Name; strings.HasPrefix(name, "later-") { // not b's kube-root-ca.crt
			wantEqual(t, "b's watch: the first later-* event", e.Type+" "+name, "ADDED later-b")
			break
		}
	}

	c := a.etcdClient(t, endpoint)
	has := etcdHas(t, c, "/tenant-b/configmaps/default/only-b", "/tenant-b/namespaces/default",
		"/tenant-b/services/specs/default/np", "/tenant-b/ranges/servicenodeports",
		"/registry/configmaps/default/only-a", "/registry/configmaps/default/only-b", "/tenant-b/configmaps/default/only-a")
	for key, want := range map[string]bool{
		"/tenant-b/configmaps/default/only-b": true, "/tenant-b/namespaces/default": true,
		"/tenant-b/services/specs/default/np": true, "/tenant-b/ranges/servicenodeports": true,
		"/registry/configmaps/default/only-a": true,
		"/registry/configmaps/default/only-b": false, "/tenant-b/configmaps/default/only-a": false,
	} {
		if has[key] != want {
			t.Errorf("etcd key %s present %v, want %v", key, has[key], want)
		}
	}

	// b's metrics name the resources of its keys below its prefix.
	code, metrics := b.do(t, "GET", "/metrics", "", "", true)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	wantContains(t, "b's metrics", metrics, `etcd_requests_total{group="",operation="create",resource="configmaps"}`)
	wantContains(t, "b's metrics", metrics, `apiserver_resource_objects{group="",resource="configmaps"}`)
}
