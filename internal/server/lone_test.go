package server

import (
	"context"
	"log/slog"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

// TestLoneServer: a lapis on its embedded etcd, not exposed, runs its singleton work without the
// controllers' Lease, and hands back its executable's start-up pages once ready.
func TestLoneServer(t *testing.T) {
	logs := &lapisproc.Log{}
	cs := kubernetes.NewForConfigOrDie(startInProcess(t, Config{},
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
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
