package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	webappv1 "example.com/guestbook/api/v1"
	webhookv1 "example.com/guestbook/internal/webhook/v1"
)

var (
	cfg       *rest.Config
	k8sClient client.Client
	scheme    = runtime.NewScheme()
)

// TestMain starts envtest (the binaries in KUBEBUILDER_ASSETS), installs the CRDs and webhooks,
// and runs the manager with the reconciler and the webhook server for the tests.
func TestMain(m *testing.M) {
	logf.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := webappv1.AddToScheme(scheme); err != nil {
		panic(err)
	}

	started := time.Now()
	testEnv := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("..", "..", "config", "webhook")},
		},
	}
	var err error
	cfg, err = testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	fmt.Printf("envtest started in %v\n", time.Since(started).Round(time.Millisecond))
	var mgrDone chan struct{} // closed when the manager has stopped, once it runs
	defer func() {
		// The manager (and its webhook server) stop before envtest removes their certificates.
		cancel()
		if mgrDone != nil {
			<-mgrDone
		}
		stopped := time.Now()
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
		fmt.Printf("envtest stopped in %v\n", time.Since(stopped).Round(time.Millisecond))
	}()

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    opts.LocalServingHost,
			Port:    opts.LocalServingPort,
			CertDir: opts.LocalServingCertDir,
		}),
		LeaderElection: false,
		Metrics:        metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := (&GuestbookReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := webhookv1.SetupGuestbookWebhookWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgrDone = make(chan struct{})
	go func() {
		defer close(mgrDone)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	// Wait for the webhook server, as kubebuilder's scaffolded suite does.
	addr := net.JoinHostPort(opts.LocalServingHost, fmt.Sprint(opts.LocalServingPort))
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "webhook server not up:", err)
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
	return m.Run()
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestReconcileCreatesPage(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: ns}, Spec: webappv1.GuestbookSpec{Size: 3}}
	if err := k8sClient.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	// The mutating webhook defaulted the message.
	if gb.Spec.Message != "Hello from front" {
		t.Errorf("message after create: %q", gb.Spec.Message)
	}
	var cm corev1.ConfigMap
	eventually(t, "the page ConfigMap", func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front-page"}, &cm)
	})
	if cm.Data["message"] != "Hello from front" {
		t.Errorf("page: %v", cm.Data)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != gb.UID || cm.OwnerReferences[0].Controller == nil || !*cm.OwnerReferences[0].Controller {
		t.Errorf("owner references: %+v", cm.OwnerReferences)
	}
	eventually(t, "the status", func() error {
		var got webappv1.Guestbook
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(gb), &got); err != nil {
			return err
		}
		if got.Status.ConfigMap != "front-page" || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v at generation %d", got.Status, got.Generation)
		}
		return nil
	})

	// An update is reconciled too.
	eventually(t, "updating the message", func() error {
		var got webappv1.Guestbook
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(gb), &got); err != nil {
			return err
		}
		got.Spec.Message = "changed"
		return k8sClient.Update(ctx, &got)
	})
	eventually(t, "the page follows the update", func() error {
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front-page"}, &cm); err != nil {
			return err
		}
		if cm.Data["message"] != "changed" {
			return fmt.Errorf("page %v", cm.Data)
		}
		return nil
	})
}

func TestValidatingWebhook(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: ns}, Spec: webappv1.GuestbookSpec{Size: webhookv1.MaxSize + 1}}
	err := k8sClient.Create(ctx, gb)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "spec.size 11 is over 10") {
		t.Fatalf("create of an oversized guestbook: %v", err)
	}
	want := `admission webhook "vguestbook-v1.kb.io" denied the request: spec.size 11 is over 10`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	// The CRD's schema is checked by the API server itself.
	gb = &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "negative", Namespace: ns}, Spec: webappv1.GuestbookSpec{Size: -1}}
	if err := k8sClient.Create(ctx, gb); !apierrors.IsInvalid(err) {
		t.Errorf("create with size -1: %v", err)
	}
}

func TestGarbageCollectionOfPages(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	gb := &webappv1.Guestbook{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns}, Spec: webappv1.GuestbookSpec{Size: 1}}
	if err := k8sClient.Create(ctx, gb); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the page ConfigMap", func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gone-page"}, &corev1.ConfigMap{})
	})
	if err := k8sClient.Delete(ctx, gb, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	// envtest's kube-apiserver runs no garbage collector (kube-controller-manager's): the page
	// outlives the Guestbook there, not on lapis. The Guestbook goes on both.
	eventually(t, "the guestbook deleted", func() error {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(gb), &webappv1.Guestbook{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}
