package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestStartServeShutdown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.Shutdown(context.Background())
		}
	}()

	// The kubeconfig names the real address and works as it is.
	info, err := os.Stat(KubeconfigPath(dir))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v %v", info, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://"+srv.Addr().String() {
		t.Errorf("kubeconfig server %s, listening on %s", cfg.Host, srv.Addr())
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	nss, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nss.Items) != 4 {
		t.Fatalf("namespaces: %v %v", nss, err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major != "1" || v.GitVersion != Version.GitVersion {
		t.Errorf("version %+v %v", v, err)
	}

	// As kube-apiserver: anonymous requests are system:anonymous, which RBAC lets read health
	// (system:public-info-viewer) and nothing else.
	anonymous := rest.AnonymousClientConfig(cfg)
	client, err := rest.HTTPClientFor(anonymous)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/livez": 200, "/version": 200, "/api/v1/namespaces": 403, "/nope": 403} {
		resp, err := client.Get(cfg.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	// Shutdown ends open watches and stops serving.
	w, err := cs.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for range w.ResultChan() {
	}
	if _, err := http.Get("http://" + srv.Addr().String()); err == nil {
		t.Error("still serving after Shutdown")
	}
}

// TestDataDirInUse: a second lapis on a data directory in use is refused at once, saying so;
// once the first has stopped, the directory is free again.
func TestDataDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	if second, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"}, log); err == nil {
		second.Shutdown(context.Background())
		t.Fatal("a second lapis started on a data directory in use")
	} else if !strings.Contains(err.Error(), "is in use by another lapis") {
		t.Errorf("second start: %v, want it to say the directory is in use", err)
	}
	if took := time.Since(begun); took > 5*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatalf("restart after the first stopped: %v", err)
	}
	again.Shutdown(context.Background())
}
