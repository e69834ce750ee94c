package lapistest

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The lapis of this repository: $LAPIS_BIN, or built from the parent directory.
var opts = Options{SourceDir: ".."}

func TestStart(t *testing.T) {
	s := Start(t, opts)
	client := kubernetes.NewForConfigOrDie(s.Config)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"color": "blue"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || got.Data["color"] != "blue" {
		t.Fatalf("get: %+v %v", got, err)
	}

	// Stopping removes the kubeconfig (lapis writes it only while it serves).
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig after stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

// Each server is on its own data directory and port.
func TestTwoServers(t *testing.T) {
	a, b := Start(t, opts), Start(t, opts)
	if a.Config.Host == b.Config.Host || a.DataDir == b.DataDir {
		t.Errorf("shared: %s %s, %s %s", a.Config.Host, b.Config.Host, a.DataDir, b.DataDir)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-a"}}
	if _, err := kubernetes.NewForConfigOrDie(a.Config).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(b.Config).CoreV1().Namespaces().Get(context.Background(), "only-a", metav1.GetOptions{}); err == nil {
		t.Error("b sees a's namespace")
	}
}

func TestFindBinaryWithoutSource(t *testing.T) {
	t.Setenv(BinEnv, "")
	t.Setenv("PATH", t.TempDir())
	if _, err := FindBinary(context.Background(), Options{}); err == nil {
		t.Error("no error without a binary or source")
	}
	if bin, err := FindBinary(context.Background(), Options{Bin: "/x/lapis"}); err != nil || bin != "/x/lapis" {
		t.Errorf("Options.Bin: %s %v", bin, err)
	}
}
