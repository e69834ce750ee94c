package server

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"

	"github.com/lapis-dev/lapis/internal/auth/authz"
)

// What differs between two creates of one object: its identity, creation and write times.
var perWrite = regexp.MustCompile(`"(uid|creationTimestamp|time)":"[^"]*"`)

// TestBootstrapPolicyDirect: a first start writes kube's bootstrap policy without a request per
// object, and stores each object byte for byte as the loopback's POST does (the reconciliation
// of a later start recreates deleted ones that way); the watch cache and RBAC's informers have
// them when lapis is ready.
func TestBootstrapPolicyDirect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	// As the loopback client asks: protobuf, its user agent (which names the field manager).
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.UserAgent = loopbackUserAgent
	cs := kubernetes.NewForConfigOrDie(cfg)

	// Ready means all of it is in place, as the watch cache serves it.
	crs, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if want := len(bootstrappolicy.ClusterRoles()) + len(bootstrappolicy.ControllerRoles()); err != nil || len(crs.Items) != want {
		t.Fatalf("%d ClusterRoles in the watch cache, want %d: %v", len(crs.Items), want, err)
	}

	// Written as kube-apiserver writes them: under its field manager.
	if crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if mf := crb.ManagedFields; len(mf) != 1 || mf[0].Manager != "kube-apiserver" {
		t.Errorf("cluster-admin binding managed by %v, want kube-apiserver alone", mf)
	}

	// RBAC's informers, which watch, get them: anonymous users may read /version
	// (system:public-info-viewer).
	anonymous, err := kubernetes.NewForConfig(rest.AnonymousClientConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, err := anonymous.Discovery().ServerVersion()
		return err == nil, nil
	}); err != nil {
		t.Errorf("anonymous /version: %v", err)
	}

	// Some are deleted and recreated by the reconcile of a later start, through the loopback.
	keys := []string{
		"/registry/clusterroles/system:aggregate-to-edit",
		"/registry/clusterrolebindings/system:public-info-viewer",
		"/registry/roles/kube-system/system:controller:bootstrap-signer",
		"/registry/rolebindings/kube-public/system:controller:bootstrap-signer",
	}
	direct := map[string][]byte{}
	for _, key := range keys {
		kv, _, err := srv.objects.Store().Get(ctx, key, 0)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		direct[key] = kv.Value
		if _, _, err := srv.objects.Store().Delete(ctx, key, kv.ModRevision); err != nil {
			t.Fatal(err)
		}
	}
	if err := authz.EnsureBootstrapPolicy(ctx, cs, createDirect(srv.objects)); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		kv, _, err := srv.objects.Store().Get(ctx, key, 0)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		got, want := perWrite.ReplaceAll(direct[key], nil), perWrite.ReplaceAll(kv.Value, nil)
		if string(got) != string(want) {
			t.Errorf("%s stored on a first start:\n%s\nby the loopback's POST:\n%s", key, got, want)
		}
	}
}
