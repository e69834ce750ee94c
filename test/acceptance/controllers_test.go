package acceptance

import (
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// TestNamespaceDefaults: as under kube-controller-manager, every new namespace gets the
// "default" ServiceAccount and the "kube-root-ca.crt" ConfigMap, whose ca.crt verifies lapis;
// both come back when deleted, the ConfigMap's data when changed, and neither keeps a deleted
// namespace from going.
func TestNamespaceDefaults(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "x")
	uidOf := func(kind, name string) func() (bool, string) {
		return func() (bool, string) {
			out, errOut, err := l.kubectl("-n", "x", "get", kind, name, "-o", "jsonpath={.metadata.uid}")
			return err == nil && out != "", out + errOut
		}
	}
	objects := []struct{ kind, name string }{{"serviceaccount", "default"}, {"configmap", "kube-root-ca.crt"}}
	for _, o := range objects {
		poll.Eventually(t, 5*time.Second, o.kind+" "+o.name+" in a new namespace", uidOf(o.kind, o.name))
	}

	t.Run("both are written as kube-controller-manager writes them", func(t *testing.T) {
		wantEqual(t, "ServiceAccount", l.must(t, "-n", "x", "get", "sa", "default", "--show-managed-fields", "-o",
			`go-template={{range $k, $v := .metadata}}{{$k}} {{end}}{{range $k, $v := .}}{{$k}} {{end}}`),
			"creationTimestamp name namespace resourceVersion uid apiVersion kind metadata")
		wantEqual(t, "ConfigMap", l.must(t, "-n", "x", "get", "cm", "kube-root-ca.crt", "--show-managed-fields", "-o",
			`jsonpath={.metadata.annotations}|{range .metadata.managedFields[*]}{.manager}/{.operation}/{.fieldsV1}{end}|{.data.ca\.crt}`),
			`{"kubernetes.io/description":"Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}|`+
				`kube-controller-manager/Update/{"f:data":{".":{},"f:ca.crt":{}},"f:metadata":{"f:annotations":{".":{},"f:kubernetes.io/description":{}}}}|`+
				string(l.caData))
	})

	t.Run("ca.crt verifies lapis's serving certificate", func(t *testing.T) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(l.must(t, "-n", "x", "get", "cm", "kube-root-ca.crt", "-o", `jsonpath={.data.ca\.crt}`))) {
			t.Fatal("ca.crt holds no certificate")
		}
		u, err := url.Parse(l.server)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
		if err != nil {
			t.Fatalf("TLS with ca.crt as the only root: %v", err)
		}
		conn.Close()
	})

	for _, o := range objects {
		t.Run("a deleted "+o.kind+" comes back", func(t *testing.T) {
			_, was := uidOf(o.kind, o.name)()
			l.must(t, "-n", "x", "delete", o.kind, o.name)
			poll.Eventually(t, 5*time.Second, "a new "+o.name, func() (bool, string) {
				ok, uid := uidOf(o.kind, o.name)()
				return ok && uid != was, uid
			})
		})
	}

	t.Run("changed data is put back", func(t *testing.T) {
		l.must(t, "-n", "x", "patch", "cm", "kube-root-ca.crt", "--type=merge", "-p", `{"data":{"ca.crt":"mine","extra":"x"}}`)
		poll.Eventually(t, 5*time.Second, "ca.crt published again", func() (bool, string) {
			out, errOut, _ := l.kubectl("-n", "x", "get", "cm", "kube-root-ca.crt", "-o", `jsonpath={.data}`)
			return strings.Contains(out, "BEGIN CERTIFICATE") && !strings.Contains(out, "extra"), out + errOut
		})
	})

	t.Run("a deleted namespace goes, and nothing comes back in it", func(t *testing.T) {
		l.must(t, "delete", "ns", "x", "--timeout=20s")
		wantEqual(t, "namespace", l.fails(t, "", "get", "ns", "x"), `Error from server (NotFound): namespaces "x" not found`)
	})
}

// waitNamespaceDefaults waits until each namespace has what lapis's controllers put in every
// namespace, as kube-controller-manager does (the default ServiceAccount, kube-root-ca.crt), so
// that the lists a test compares see them.
func (l *lapisProc) waitNamespaceDefaults(t testing.TB, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		poll.Eventually(t, 5*time.Second, "the default ServiceAccount and kube-root-ca.crt in "+ns, func() (bool, string) {
			out, errOut, err := l.kubectl("-n", ns, "get", "serviceaccount/default", "configmap/kube-root-ca.crt", "-o", "name")
			return err == nil, out + errOut
		})
	}
}
