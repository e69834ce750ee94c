package server

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// lockedBuffer is a log destination safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLoneServer: a lapis on its embedded etcd, not exposed, runs its singleton work without the
// controllers' Lease, and hands back its executable's start-up pages once ready.
func TestLoneServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	logs := &lockedBuffer{}
	srv, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"},
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	cfg, err := clientcmd.BuildConfigFromFlags("", KubeconfigPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	// The singleton work runs: the serviceaccount controller makes a new namespace's default.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	released := regexp.MustCompile(`released the executable's start-up pages" bytes=([1-9][0-9]*)`)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, saErr := cs.CoreV1().ServiceAccounts("lone").Get(ctx, "default", metav1.GetOptions{})
		if saErr == nil && released.MatchString(logs.String()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("default ServiceAccount: %v; release logged: %v", saErr, released.MatchString(logs.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ... and no Lease was taken for it.
	if l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, ControllersLease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Lease %s: %v, %v; want none", ControllersLease, l, err)
	}
}
