package acceptance

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// servingAddresses lists the addresses lapis logged as "lapis is serving", oldest first.
func (l *lapisProc) servingAddresses() []string {
	var addrs []string
	for _, m := range regexp.MustCompile(`msg="lapis is serving" address=(\S+)`).FindAllStringSubmatch(l.log.String(), -1) {
		addrs = append(addrs, m[1])
	}
	return addrs
}

func TestPersistence(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "keep")
	l.applyCRD(t, widgetCRD, "widgets.acme.example.com")
	refs := [][]string{
		{"namespace", "keep"},
		{"configmap", "settings", "-n", "keep"},
		{"secret", "creds", "-n", "keep"},
		{"serviceaccount", "bot", "-n", "keep"},
		{"widget", "w1", "-n", "keep"},
		{"crd", "widgets.acme.example.com"},
	}
	l.must(t, "create", "configmap", "settings", "-n", "keep", "--from-literal=color=blue")
	l.must(t, "create", "secret", "generic", "creds", "-n", "keep", "--from-literal=pw=x")
	l.must(t, "create", "serviceaccount", "bot", "-n", "keep")
	l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: keep}\nspec: {size: 2}\n", "create", "-f", "-")
	snapshot := func(t *testing.T) map[string]string {
		t.Helper()
		m := map[string]string{}
		for _, ref := range refs {
			m[strings.Join(ref, " ")] = l.must(t, append([]string{"get"}, append(ref, "-o", "jsonpath={.metadata.uid} {.metadata.resourceVersion} {.data} {.spec}")...)...)
		}
		return m
	}
	before := snapshot(t)

	t.Run("SIGTERM then restart", func(t *testing.T) {
		oldServer := l.server
		oldKubeconfig, _ := os.ReadFile(l.kubeconfig)
		l.Restart(t)
		if l.server == oldServer {
			t.Errorf("restarted lapis serves on the old address %s", oldServer)
		}
		if newKubeconfig, _ := os.ReadFile(l.kubeconfig); string(newKubeconfig) == string(oldKubeconfig) {
			t.Errorf("restart did not write a fresh kubeconfig")
		}
		// lapis writes its kubeconfig just before it logs that it is serving.
		poll.Eventually(t, 5*time.Second, "the restart's serving address in the log", func() (bool, string) {
			addrs := l.servingAddresses()
			return len(addrs) == 2 && addrs[1] == l.server, fmt.Sprintf("logged serving addresses %q; the kubeconfig says %s", addrs, l.server)
		})
		after := snapshot(t)
		for _, ref := range refs {
			key := strings.Join(ref, " ")
			wantEqual(t, key+" after restart", after[key], before[key])
		}
		// New writes carry resourceVersions after the old ones.
		l.must(t, "create", "configmap", "later", "-n", "keep")
		newRV, _ := strconv.ParseUint(l.must(t, "get", "configmap", "later", "-n", "keep", "-o", "jsonpath={.metadata.resourceVersion}"), 10, 64)
		for key, v := range before {
			if old, _ := strconv.ParseUint(strings.Fields(v)[1], 10, 64); newRV <= old {
				t.Errorf("new object's resourceVersion %d is not after %s's %d", newRV, key, old)
			}
		}
	})

	t.Run("SIGKILL right after acknowledged writes", func(t *testing.T) {
		var docs []string
		for i := range 20 {
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: acked-%02d, namespace: keep}\ndata: {i: \"%d\"}\n", i, i))
		}
		l.mustIn(t, strings.Join(docs, "---\n"), "apply", "-f", "-")
		l.must(t, "patch", "configmap", "settings", "-n", "keep", "--type=merge", "-p", `{"data":{"color":"green"}}`)
		l.must(t, "delete", "serviceaccount", "bot", "-n", "keep")
		want := l.must(t, "get", "configmaps", "-n", "keep", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}/{.metadata.resourceVersion}/{.data}{"\n"}{end}`)
		l.Kill()
		l.Restart(t)
		got := l.must(t, "get", "configmaps", "-n", "keep", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}/{.metadata.resourceVersion}/{.data}{"\n"}{end}`)
		wantEqual(t, "configmaps after kill -9", got, want)
		if n := strings.Count(got, "acked-"); n != 20 {
			t.Errorf("%d of 20 acknowledged ConfigMaps survived", n)
		}
		wantEqual(t, "acknowledged delete", l.fails(t, "", "get", "serviceaccount", "bot", "-n", "keep"),
			`Error from server (NotFound): serviceaccounts "bot" not found`)
		wantEqual(t, "custom resource", l.must(t, "get", "widget", "w1", "-n", "keep", "-o", "jsonpath={.spec}"), `{"color":"blue","size":2}`)
	})
}

func TestSharedEtcd(t *testing.T) {
	t.Parallel()
	etcdURL := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	a := startLapis(t, "--embedded-etcd-listen", etcdURL)
	// The second lapis connects with the files the first wrote, as kube-apiserver would.
	caFile, certFile, keyFile := a.etcdClientFiles()
	b := startLapis(t, "--etcd-servers", etcdURL, "--etcd-cafile", caFile, "--etcd-certfile", certFile, "--etcd-keyfile", keyFile)
	if a.server == b.server {
		t.Fatalf("both serve on %s", a.server)
	}

	t.Run("the exposed etcd serves lapis's etcd client certificate only", func(t *testing.T) {
		testExposedEtcd(t, a, etcdURL)
	})

	t.Run("objects written through one are read through the other", func(t *testing.T) {
		a.must(t, "create", "ns", "shared")
		a.must(t, "create", "configmap", "from-a", "-n", "shared", "--from-literal=by=a")
		b.must(t, "create", "configmap", "from-b", "-n", "shared", "--from-literal=by=b")
		list := `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}/{.metadata.resourceVersion}/{.data.by}{"\n"}{end}`
		viaA := a.must(t, "get", "configmaps", "-n", "shared", "-o", list)
		viaB := b.must(t, "get", "configmaps", "-n", "shared", "-o", list)
		wantEqual(t, "same list through both", viaB, viaA)
		if !strings.Contains(viaA, "from-a=") || !strings.Contains(viaA, "from-b=") {
			t.Errorf("list through A: %q", viaA)
		}
		b.must(t, "patch", "configmap", "from-a", "-n", "shared", "--type=merge", "-p", `{"data":{"by":"b"}}`)
		wantEqual(t, "update through B seen by A", a.must(t, "get", "configmap", "from-a", "-n", "shared", "-o", "jsonpath={.data.by}"), "b")
	})

	t.Run("kube-root-ca.crt holds both lapis's CAs, and both leave it so", func(t *testing.T) {
		// Each lapis has its own CA: each publisher keeps the other's, or they would rewrite
		// the ConfigMap forever.
		var rv string
		poll.Eventually(t, 5*time.Second, "both CAs published", func() (bool, string) {
			out, errOut, _ := b.kubectl("get", "cm", "kube-root-ca.crt", "-n", "shared", "-o", `jsonpath={.metadata.resourceVersion} {.data.ca\.crt}`)
			rv, _, _ = strings.Cut(out, " ")
			return strings.Contains(out, strings.TrimSpace(string(a.caData))) && strings.Contains(out, strings.TrimSpace(string(b.caData))), out + errOut
		})
		time.Sleep(time.Second)
		wantEqual(t, "resourceVersion a second later", a.must(t, "get", "cm", "kube-root-ca.crt", "-n", "shared", "-o", "jsonpath={.metadata.resourceVersion}"), rv)
	})

	t.Run("a CRD created through one is served by the other", func(t *testing.T) {
		a.applyCRD(t, widgetCRD, "widgets.acme.example.com")
		poll.Eventually(t, 5*time.Second, "B serves widgets", func() (bool, string) {
			out, errOut, err := b.kubectlIn("apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: via-b, namespace: shared}\nspec: {size: 1}\n", "create", "-f", "-")
			return err == nil, out + errOut
		})
		wantEqual(t, "read through A", a.must(t, "get", "widget", "via-b", "-n", "shared", "-o", "jsonpath={.spec}"), `{"color":"blue","size":1}`)
		wantEqual(t, "B validates with the schema", b.fails(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: bad, namespace: shared}\nspec: {size: big}\n", "create", "-f", "-"),
			`The Widget "bad" is invalid: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`)
	})

	t.Run("deletions through one are carried out for both", func(t *testing.T) {
		b.must(t, "delete", "crd", "widgets.acme.example.com", "--timeout=20s")
		poll.Eventually(t, 5*time.Second, "A stops serving widgets", func() (bool, string) {
			out, errOut, _ := a.kubectl("api-resources", "--api-group=acme.example.com", "--no-headers")
			return strings.TrimSpace(out) == "", out + errOut
		})
		b.must(t, "delete", "ns", "shared", "--timeout=20s")
		wantEqual(t, "namespace through A", a.fails(t, "", "get", "ns", "shared"), `Error from server (NotFound): namespaces "shared" not found`)
		a.must(t, "create", "ns", "shared")
		out, errOut, err := b.kubectl("get", "configmaps", "-n", "shared", "-o", "name", "--field-selector", "metadata.name!=kube-root-ca.crt")
		if err != nil || out != "" {
			t.Errorf("recreated namespace is not empty through B: %q %q %v", out, errOut, err)
		}
	})
}

func TestBundledKubectl(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	env := []string{"KUBECONFIG=" + l.kubeconfig, "KUBECACHEDIR=" + t.TempDir()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "LAPIS_DATA_DIR=") {
			env = append(env, kv)
		}
	}
	out, errOut, err := runCmd(env, "", lapisBin, "kubectl", "get", "ns", "-o", "name")
	if err != nil {
		t.Fatalf("lapis kubectl get ns: %v\n%s", err, errOut)
	}
	wantEqual(t, "lapis kubectl get ns -o name", out, "namespace/default\nnamespace/kube-node-lease\nnamespace/kube-public\nnamespace/kube-system")
	out, _, _ = runCmd(env, "", lapisBin, "kubectl", "get", "ns")
	var first []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		first = append(first, strings.Fields(line)[0])
	}
	wantEqual(t, "lapis kubectl get ns, first column", strings.Join(first, " "), "NAME default kube-node-lease kube-public kube-system")

	// Without KUBECONFIG the bundled kubectl finds DIR/kubeconfig through LAPIS_DATA_DIR.
	noKubeconfig := append([]string{"LAPIS_DATA_DIR=" + l.dataDir}, env[1:]...)
	out, errOut, err = runCmd(noKubeconfig, "", lapisBin, "kubectl", "get", "ns", "default", "-o", "name")
	if err != nil {
		t.Fatalf("LAPIS_DATA_DIR: %v\n%s", err, errOut)
	}
	wantEqual(t, "LAPIS_DATA_DIR", out, "namespace/default")

	// `kubectl version` works with a released kubectl; the bundled one must report a version too.
	out, errOut, err = runCmd(env, "", lapisBin, "kubectl", "version")
	if err != nil || strings.Contains(out+errOut, "$Format") {
		t.Errorf("lapis kubectl version: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	wantContains(t, "lapis kubectl version", out, "Server Version: v1.37.2")
}
