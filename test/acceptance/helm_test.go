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

	"github.com/lapis-dev/lapis/internal/testkit/poll"
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
	h := newHelmDemo(t, helm, startLapis(t))
	uid := h.install(t)
	h.upgrade(t, uid)
	h.rollback(t)
	h.uninstall(t)
}

// helmDemo is TestHelm's helm, with its own home, and the release demo of the chart helm
// create makes, in namespace web. The steps run in order: install, upgrade, rollback, uninstall.
type helmDemo struct {
	l     *lapisProc
	helm  string
	env   []string
	chart string
}

const helmNS = "web"

func newHelmDemo(t *testing.T, helm string, l *lapisProc) *helmDemo {
	home := t.TempDir()
	h := &helmDemo{l: l, helm: helm, chart: filepath.Join(home, "demo"), env: append(l.env(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))}
	h.run(t, "create", h.chart)
	return h
}

// run runs helm with args and returns its output; it fails the test if helm fails.
func (h *helmDemo) run(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runCmd(h.env, "", h.helm, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (h *helmDemo) deployment(t *testing.T) (replicas, image, uid string) {
	t.Helper()
	out := h.l.must(t, "-n", helmNS, "get", "deployment", "demo", "-o",
		`jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.uid}`)
	f := strings.Fields(out)
	if len(f) != 3 {
		t.Fatalf("deployment demo: %q", out)
	}
	return f[0], f[1], f[2]
}

func (h *helmDemo) servicePort(t *testing.T) string {
	t.Helper()
	return h.l.must(t, "-n", helmNS, "get", "service", "demo", "-o", "jsonpath={.spec.ports[0].port}")
}

// releaseSecrets answers "vN=status" for each release Secret helm keeps, in revision order.
func (h *helmDemo) releaseSecrets(t *testing.T) []string {
	t.Helper()
	out := h.l.must(t, "-n", helmNS, "get", "secrets", "-l", "owner=helm,name=demo", "-o",
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

func (h *helmDemo) history(t *testing.T) []string {
	t.Helper()
	var revs []helmRelease
	if err := json.Unmarshal([]byte(h.run(t, "history", "demo", "-n", helmNS, "-o", "json")), &revs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range revs {
		got = append(got, fmt.Sprintf("%v %s %s", r.Revision, r.Status, r.Description))
	}
	return got
}

func wantList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got: %q\nwant: %q", what, got, want)
	}
}

// install: helm discovers the server's API, renders the chart and creates its objects. It
// returns the Deployment's uid.
func (h *helmDemo) install(t *testing.T) string {
	l, ns := h.l, helmNS
	out := h.run(t, "install", "demo", h.chart, "-n", ns, "--create-namespace")
	wantContains(t, "helm install", out, "STATUS: deployed")
	var list []helmRelease
	if err := json.Unmarshal([]byte(h.run(t, "list", "-n", ns, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "demo" || list[0].Status != "deployed" || list[0].Chart != "demo-0.1.0" || fmt.Sprint(list[0].Revision) != "1" {
		t.Errorf("helm list: %+v, want demo revision 1 deployed, chart demo-0.1.0", list)
	}
	replicas, image, uid := h.deployment(t)
	wantEqual(t, "replicas after install", replicas, "1")
	wantEqual(t, "image after install", image, "nginx:1.16.0") // the chart's appVersion
	wantEqual(t, "Deployment's helm labels and annotations",
		l.must(t, "-n", ns, "get", "deployment", "demo", "-o",
			`jsonpath={.metadata.labels.app\.kubernetes\.io/managed-by} {.metadata.annotations.meta\.helm\.sh/release-name} {.metadata.annotations.meta\.helm\.sh/release-namespace}`),
		"Helm demo "+ns)
	wantEqual(t, "service port after install", h.servicePort(t), "80")
	svc := l.must(t, "-n", ns, "get", "service", "demo", "-o", "jsonpath={.spec.type} {.spec.clusterIP}")
	if f := strings.Fields(svc); len(f) != 2 || f[0] != "ClusterIP" || !strings.HasPrefix(f[1], "10.0.0.") {
		t.Errorf("service demo: %q, want a ClusterIP Service with an IP from 10.0.0.0/24", svc)
	}
	wantEqual(t, "the chart's ServiceAccount", l.must(t, "-n", ns, "get", "serviceaccount", "demo", "-o", "name"), "serviceaccount/demo")
	// The test hook (a Pod) is made only by `helm test`.
	if out, _, err := l.kubectl("-n", ns, "get", "pod", "demo-test-connection"); err == nil {
		t.Errorf("the chart's test Pod exists after install: %s", out)
	}
	wantList(t, "release secrets after install", h.releaseSecrets(t), []string{"v1=deployed"})
	wantContains(t, "helm get values --all", h.run(t, "get", "values", "demo", "-n", ns, "--all"), "replicaCount: 1")
	return uid
}

// upgrade with changed values: the Deployment (uid before) and Service are patched in place.
func (h *helmDemo) upgrade(t *testing.T, uid string) {
	out := h.run(t, "upgrade", "demo", h.chart, "-n", helmNS, "--set", "replicaCount=3", "--set", "service.port=8080")
	wantContains(t, "helm upgrade", out, "REVISION: 2")
	replicas, _, uid2 := h.deployment(t)
	wantEqual(t, "replicas after upgrade", replicas, "3")
	wantEqual(t, "service port after upgrade", h.servicePort(t), "8080")
	if uid2 != uid {
		t.Errorf("upgrade replaced the Deployment (uid %s, was %s), want it patched", uid2, uid)
	}
	wantList(t, "release secrets after upgrade", h.releaseSecrets(t), []string{"v1=superseded", "v2=deployed"})
}

// rollback to revision 1: its values come back, as revision 3.
func (h *helmDemo) rollback(t *testing.T) {
	wantContains(t, "helm rollback", h.run(t, "rollback", "demo", "1", "-n", helmNS), "Rollback was a success")
	replicas, _, _ := h.deployment(t)
	wantEqual(t, "replicas after rollback", replicas, "1")
	wantEqual(t, "service port after rollback", h.servicePort(t), "80")
	wantList(t, "release secrets after rollback", h.releaseSecrets(t), []string{"v1=superseded", "v2=superseded", "v3=deployed"})
	wantList(t, "helm history", h.history(t), []string{
		"1 superseded Install complete", "2 superseded Upgrade complete", "3 deployed Rollback to 1"})
}

// uninstall: helm deletes what it made and its release Secrets.
func (h *helmDemo) uninstall(t *testing.T) {
	wantContains(t, "helm uninstall", h.run(t, "uninstall", "demo", "-n", helmNS), `release "demo" uninstalled`)
	for _, obj := range []string{"deployment/demo", "service/demo", "serviceaccount/demo"} {
		poll.Eventually(t, 20*time.Second, obj+" deleted", func() (bool, string) {
			out, errOut, err := h.l.kubectl("-n", helmNS, "get", obj)
			return err != nil && strings.Contains(errOut, "NotFound"), out + errOut
		})
	}
	wantList(t, "release secrets after uninstall", h.releaseSecrets(t), nil)
	wantEqual(t, "helm list after uninstall", h.run(t, "list", "-n", helmNS, "-q"), "")
}
