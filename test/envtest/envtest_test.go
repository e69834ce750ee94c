package envtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

var lapisBin string // the binary TestMain built, or $LAPIS_BIN

func TestMain(m *testing.M) {
	os.Exit(lapisproc.Main(context.Background(), func(bin string) int {
		lapisBin = bin
		return m.Run()
	}))
}

// assets runs `lapis envtest-assets` into a new directory.
func assets(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	if out, err := exec.Command(lapisBin, "envtest-assets", dir).CombinedOutput(); err != nil {
		t.Fatalf("lapis envtest-assets: %v\n%s", err, out)
	}
	return dir
}

// envtestAPIServerFlags are the flags controller-runtime v0.25.2's envtest passes
// kube-apiserver (its defaults, and the client CA of its admin user), and etcd.
var (
	envtestAPIServerFlags = []string{"allow-privileged", "authorization-mode", "bind-address", "cert-dir", "client-ca-file",
		"disable-admission-plugins", "etcd-servers", "secure-port", "service-account-issuer", "service-account-key-file",
		"service-account-signing-key-file", "service-cluster-ip-range"}
	envtestEtcdFlags = []string{"advertise-client-urls", "data-dir", "listen-client-urls", "listen-peer-urls"}
)

// TestHelp checks the flag lists envtest reads (process.CheckFlag runs BIN --help and looks
// for `^\s*--NAME\b`): the flags it passes are there; --insecure-port is not (envtest would
// pass --insecure-port=0 to a kube-apiserver older than 1.24), nor etcd's --unsafe-no-fsync
// (lapis's etcd keeps fsync).
func TestHelp(t *testing.T) {
	dir := assets(t)
	for _, c := range []struct {
		bin             string
		present, absent []string
	}{
		{"kube-apiserver", append(envtestAPIServerFlags, "tls-cert-file", "feature-gates", "enable-admission-plugins"), []string{"insecure-port", "insecure-bind-address"}},
		{"etcd", envtestEtcdFlags, []string{"unsafe-no-fsync"}},
	} {
		out, err := exec.Command(filepath.Join(dir, c.bin), "--help").CombinedOutput()
		if err != nil {
			t.Errorf("%s --help: %v\n%s", c.bin, err, out)
			continue
		}
		for _, f := range c.present {
			if !regexp.MustCompile(`(?m)^\s*--` + f + `\b`).Match(out) {
				t.Errorf("%s --help does not list --%s", c.bin, f)
			}
		}
		for _, f := range c.absent {
			if regexp.MustCompile(`(?m)^\s*--` + f + `\b`).Match(out) {
				t.Errorf("%s --help lists --%s", c.bin, f)
			}
		}
	}
	// The kubectl in the assets is the bundled kubectl.
	out, err := exec.Command(filepath.Join(dir, "kubectl"), "version", "--client").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Client Version: v1.37") {
		t.Errorf("kubectl version --client: %v\n%s", err, out)
	}
}

// TestProject runs the project's envtest suite, unchanged, with KUBEBUILDER_ASSETS pointing at
// lapis (or at LAPIS_ENVTEST_ASSETS when set).
func TestProject(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	dir := os.Getenv("LAPIS_ENVTEST_ASSETS")
	if dir == "" {
		dir = assets(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "./...", "-count=1", "-v")
	cmd.Dir = "testdata/project"
	cmd.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+dir, "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	err := cmd.Run()
	text := out.String()
	if err != nil && regexp.MustCompile(`(?m)^go: .*(dial tcp|proxy\.golang\.org|module lookup disabled)`).MatchString(text) {
		t.Skipf("the project's modules could not be downloaded:\n%s", text)
	}
	if err != nil {
		t.Fatalf("go test in testdata/project (KUBEBUILDER_ASSETS=%s): %v\n%s", dir, err, text)
	}
	for _, want := range []string{"--- PASS: TestReconcileCreatesPage", "--- PASS: TestValidatingWebhook", "--- PASS: TestGarbageCollectionOfPages"} {
		if !strings.Contains(text, want) {
			t.Errorf("the project's output lacks %q:\n%s", want, text)
		}
	}
	for _, line := range regexp.MustCompile(`(?m)^envtest (started|stopped) in .*$`).FindAllString(text, -1) {
		t.Log(line)
	}
	t.Logf("go test of the project (build included): %v", time.Since(started).Round(time.Millisecond))
}
