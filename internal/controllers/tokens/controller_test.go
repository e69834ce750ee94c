package tokens

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lapis-dev/lapis/internal/auth/authn"
)

// TestRun: a token Secret of an existing ServiceAccount is filled with a legacy token that
// authenticates as it, the CA and the namespace; one of a missing ServiceAccount is deleted;
// other Secrets are left alone.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa1", Namespace: "ns1", UID: "sa-uid"}}
	tokenSecret := func(name, account string) *corev1.Secret {
		// A fake clientset sets no uid; the controller needs one.
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", UID: types.UID(name + "-uid"), Annotations: map[string]string{corev1.ServiceAccountNameKey: account}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	plain := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns1"}, Data: map[string][]byte{"k": []byte("v")}}
	client := fake.NewClientset(sa, tokenSecret("filled", "sa1"), tokenSecret("orphan", "nobody"), plain)
	a, err := authn.New(authn.Config{ServiceAccounts: authn.ServiceAccountConfig{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	a.UseServiceAccounts(authn.NewGetter(client, informers.NewSharedInformerFactory(client, 0)))
	rootCA := []byte("-----BEGIN CERTIFICATE-----\nroot\n-----END CERTIFICATE-----\n")
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, client, informers.NewSharedInformerFactory(client, 0), a.LegacyTokenGenerator(), rootCA)
	}()

	var filled *corev1.Secret
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Secrets("ns1").Get(ctx, "filled", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		filled = s
		_, orphanErr := client.CoreV1().Secrets("ns1").Get(ctx, "orphan", metav1.GetOptions{})
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0 && apierrors.IsNotFound(orphanErr), nil
	})
	if err != nil {
		t.Fatalf("secrets not handled: %v (%+v)", err, filled)
	}
	if !bytes.Equal(filled.Data[corev1.ServiceAccountRootCAKey], rootCA) || string(filled.Data[corev1.ServiceAccountNamespaceKey]) != "ns1" {
		t.Errorf("filled secret data: %q", filled.Data)
	}
	resp, ok, err := a.AuthenticateToken(ctx, string(filled.Data[corev1.ServiceAccountTokenKey]))
	if !ok || resp.User.GetName() != "system:serviceaccount:ns1:sa1" || resp.User.GetUID() != "sa-uid" {
		t.Errorf("the token does not authenticate as the ServiceAccount: %+v %v", resp, err)
	}
	if got, _ := client.CoreV1().Secrets("ns1").Get(ctx, "plain", metav1.GetOptions{}); len(got.Data) != 1 {
		t.Errorf("an ordinary secret was changed: %q", got.Data)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("Run did not return when its context ended")
	}
}
