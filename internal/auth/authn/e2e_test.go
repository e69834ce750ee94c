package authn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/builtin"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/handlers/special"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
	"github.com/lapis-dev/lapis/internal/storage"
)

// TestTokenRequestEndToEnd: client-go's CreateToken against lapis's handlers issuing with an
// Authenticator, whose getter reads through a client of the same server: the token
// authenticates as its ServiceAccount and Pod until the Pod is deleted.
func TestTokenRequestEndToEnd(t *testing.T) {
	ctx := context.Background()
	a, err := New(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir(), ExtendExpiration: true}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := storage.OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cat := catalog.New()
	cat.AddBuiltin(builtin.Resources(kube.Deps{})...)
	svc := objects.NewService(storage.NewStore(b.Client), objects.NewKeys(objects.DefaultPrefix), cat)
	h := handlers.New(svc).WithEndpoints(special.New(svc, special.Auth{Audiences: a.APIAudiences()}, a))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if info := routing.Parse(req); info.IsResource {
			h.Serve(w, req, info)
			return
		}
		http.NotFound(w, req)
	}))
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}))
	sa, err := client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa1"}}, metav1.CreateOptions{})
	must(sa, err)
	pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"},
		Spec: corev1.PodSpec{ServiceAccountName: "sa1", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	must(pod, err)
	a.UseServiceAccounts(NewGetter(client, informers.NewSharedInformerFactory(client, 0)))

	createToken := func(seconds int64) (*authenticationv1.TokenRequest, error) {
		return client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "sa1", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(seconds),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1", UID: pod.UID},
		}}, metav1.CreateOptions{})
	}
	first, err := createToken(3600)
	must(first, err)
	second, err := createToken(3607) // kubelet's: extended
	must(second, err)
	if first.UID != sa.UID || first.Spec.Audiences[0] != DefaultIssuer || first.CreationTimestamp.IsZero() ||
		first.Status.ExpirationTimestamp.Sub(first.CreationTimestamp.Time).Seconds() != 3600 {
		t.Errorf("answer %+v", first)
	}
	if cl := claims(t, second.Status.Token); cl["exp"].(float64)-cl["iat"].(float64) != float64(maxExtendedExpirationSeconds) {
		t.Errorf("kubelet's token not extended: %v", cl)
	}
	resp, ok, err := a.AuthenticateToken(ctx, first.Status.Token)
	if !ok || resp.User.GetName() != "system:serviceaccount:default:sa1" || resp.User.GetUID() != string(sa.UID) ||
		resp.User.GetExtra()["authentication.kubernetes.io/pod-uid"][0] != string(pod.UID) {
		t.Fatalf("token of the pod: %+v %v %v", resp, ok, err)
	}

	if err := client.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.AuthenticateToken(ctx, second.Status.Token); ok || err == nil || !strings.Contains(err.Error(), "invalidated") {
		t.Errorf("token of a deleted pod: %v %v", ok, err)
	}
	if _, err := createToken(3600); !apierrors.IsNotFound(err) {
		t.Errorf("token for a deleted pod: %v", err)
	}
}
