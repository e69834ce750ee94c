package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// helmVersion is the helm CLI the test builds from the Go module proxy (helm 3.22 is built on
// client-go 0.37, the Kubernetes minor lapis serves).
const helmVersion = "v3.22.0"

// helmBinary returns a helm CLI to run: $LAPIS_HELM_BIN if set, else the one built earlier into
// the user cache dir, else, with LAPIS_HELM=1, builds it there (`go install
// helm.sh/helm/v3/cmd/helm@v3.22.0`: 2 to 6 minutes on 2 shared cores, once per machine). Without
// any of them the test skips: building helm in every CI run would cost more than the test.
func helmBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("LAPIS_HELM_BIN"); bin != "" {
		return bin
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache dir to keep helm in: %v", err)
	}
	dir := filepath.Join(cache, "lapis-test", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if os.Getenv("LAPIS_HELM") != "1" {
		t.Skipf("helm %s is not built in %s; LAPIS_HELM=1 builds it there (a few minutes, once)", helmVersion, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Build into a directory of its own and rename: a concurrent run never sees half a binary.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	cmd.Dir = tmp // outside lapis's module: helm's own go.mod decides its dependencies
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building helm %s: %v\n%s", helmVersion, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "helm"), bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built helm %s into %s in %v", helmVersion, bin, time.Since(start).Round(time.Second))
	return bin
}

// helmRelease is what `helm list -o json` and `helm history -o json` say of a release revision.
type helmRelease struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Revision    any    `json:"revision"` // a string in list, a number in history
	Status      string `json:"status"`
	Chart       string `json:"chart"`
	AppVersion  string `json:"app_version"`
	Description string `json:"description"`
}

// TestHelm installs the chart `helm create` makes, unmodified, then upgrades it with a changed
// value, rolls it back and uninstalls it, checking after each step the objects helm made
// (Deployment, Service with an allocated cluster IP, ServiceAccount), helm's view of the
// release, and its release Secrets (sh.helm.release.v1.NAME.vN).
func TestHelm(t *testing.T) {
	helm := helmBinary(t)
	t.Parallel()
	l := startLapis(t)
	home := t.TempDir()
	env := append(l.env(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := runCmd(env, "", helm, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	const ns = "web"
	run("create", filepath.Join(home, "demo"))
	chart := filepath.Join(home, "demo")

	deployment := func() (replicas, image, uid string) {
		t.Helper()
		out := l.must(t, "-n", ns, "get", "deployment", "demo", "-o",
			`jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.uid}`)
		f := strings.Fields(out)
		if len(f) != 3 {
			t.Fatalf("deployment demo: %q", out)
		}
		return f[0], f[1], f[2]
	}
	servicePort := func() string {
		t.Helper()
		return l.must(t, "-n", ns, "get", "service", "demo", "-o", "jsonpath={.spec.ports[0].port}")
	}
	// releaseSecrets answers "vN=status" for each release Secret helm keeps, in revision order.
	releaseSecrets := func() []string {
		t.Helper()
		out := l.must(t, "-n", ns, "get", "secrets", "-l", "owner=helm,name=demo", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.type} {.metadata.labels.version}={.metadata.labels.status}{"\n"}{end}`)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			v := strings.SplitN(f[2], "=", 2)[0]
			if f[0] != "sh.helm.release.v1.demo.v"+v || f[1] != "helm.sh/release.v1" {
				t.Errorf("release secret %q: want name sh.helm.release.v1.demo.v%s of type helm.sh/release.v1", line, v)
			}
			got = append(got, "v"+f[2])
		}
		slices.Sort(got)
		return got
	}
	history := func() []string {
		t.Helper()
		var revs []helmRelease
		if err := json.Unmarshal([]byte(run("history", "demo", "-n", ns, "-o", "json")), &revs); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range revs {
			got = append(got, fmt.Sprintf("%v %s %s", r.Revision, r.Status, r.Description))
		}
		return got
	}
	wantList := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got: %q\nwant: %q", what, got, want)
		}
	}

	// install: helm discovers the server's API, renders the chart and creates its objects.
	out := run("install", "demo", chart, "-n", ns, "--create-namespace")
	wantContains(t, "helm install", out, "STATUS: deployed")
	var list []helmRelease
	if err := json.Unmarshal([]byte(run("list", "-n", ns, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "demo" || list[0].Status != "deployed" || list[0].Chart != "demo-0.1.0" || fmt.Sprint(list[0].Revision) != "1" {
		t.Errorf("helm list: %+v, want demo revision 1 deployed, chart demo-0.1.0", list)
	}
	replicas, image, uid := deployment()
	wantEqual(t, "replicas after install", replicas, "1")
	wantEqual(t, "image after install", image, "nginx:1.16.0") // the chart's appVersion
	wantEqual(t, "Deployment's helm labels and annotations",
		l.must(t, "-n", ns, "get", "deployment", "demo", "-o",
			`jsonpath={.metadata.labels.app\.kubernetes\.io/managed-by} {.metadata.annotations.meta\.helm\.sh/release-name} {.metadata.annotations.meta\.helm\.sh/release-namespace}`),
		"Helm demo "+ns)
	wantEqual(t, "service port after install", servicePort(), "80")
	svc := l.must(t, "-n", ns, "get", "service", "demo", "-o", "jsonpath={.spec.type} {.spec.clusterIP}")
	if f := strings.Fields(svc); len(f) != 2 || f[0] != "ClusterIP" || !strings.HasPrefix(f[1], "10.0.0.") {
		t.Errorf("service demo: %q, want a ClusterIP Service with an IP from 10.0.0.0/24", svc)
	}
	wantEqual(t, "the chart's ServiceAccount", l.must(t, "-n", ns, "get", "serviceaccount", "demo", "-o", "name"), "serviceaccount/demo")
	// The test hook (a Pod) is made only by `helm test`.
	if out, _, err := l.kubectl("-n", ns, "get", "pod", "demo-test-connection"); err == nil {
		t.Errorf("the chart's test Pod exists after install: %s", out)
	}
	wantList("release secrets after install", releaseSecrets(), []string{"v1=deployed"})
	wantContains(t, "helm get values --all", run("get", "values", "demo", "-n", ns, "--all"), "replicaCount: 1")

	// upgrade with changed values: the Deployment and Service are patched in place.
	out = run("upgrade", "demo", chart, "-n", ns, "--set", "replicaCount=3", "--set", "service.port=8080")
	wantContains(t, "helm upgrade", out, "REVISION: 2")
	replicas, _, uid2 := deployment()
	wantEqual(t, "replicas after upgrade", replicas, "3")
	wantEqual(t, "service port after upgrade", servicePort(), "8080")
	if uid2 != uid {
		t.Errorf("upgrade replaced the Deployment (uid %s, was %s), want it patched", uid2, uid)
	}
	wantList("release secrets after upgrade", releaseSecrets(), []string{"v1=superseded", "v2=deployed"})

	// rollback to revision 1: its values come back, as revision 3.
	wantContains(t, "helm rollback", run("rollback", "demo", "1", "-n", ns), "Rollback was a success")
	replicas, _, _ = deployment()
	wantEqual(t, "replicas after rollback", replicas, "1")
	wantEqual(t, "service port after rollback", servicePort(), "80")
	wantList("release secrets after rollback", releaseSecrets(), []string{"v1=superseded", "v2=superseded", "v3=deployed"})
	wantList("helm history", history(), []string{
		"1 superseded Install complete", "2 superseded Upgrade complete", "3 deployed Rollback to 1"})

	// uninstall: helm deletes what it made and its release Secrets.
	wantContains(t, "helm uninstall", run("uninstall", "demo", "-n", ns), `release "demo" uninstalled`)
	for _, obj := range []string{"deployment/demo", "service/demo", "serviceaccount/demo"} {
		eventually(t, 20*time.Second, obj+" deleted", func() (bool, string) {
			out, errOut, err := l.kubectl("-n", ns, "get", obj)
			return err != nil && strings.Contains(errOut, "NotFound"), out + errOut
		})
	}
	wantList("release secrets after uninstall", releaseSecrets(), nil)
	wantEqual(t, "helm list after uninstall", run("list", "-n", ns, "-q"), "")
}
