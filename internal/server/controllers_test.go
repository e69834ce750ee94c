package server

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestKubeAPIServerOnly: as kube-apiserver alone (envtest's), lapis runs none of
// kube-controller-manager's controllers but the ServiceAccount one: no kube-root-ca.crt, a
// deleted namespace stays Terminating, owned objects are not collected.
func TestKubeAPIServerOnly(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(startInProcess(t, Config{KubeAPIServerOnly: true}, nil))
	ctx := context.Background()
	// Ready means the kubernetes Service is there: envtest's first list of Services finds it.
	if _, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Errorf("the kubernetes Service once lapis is ready: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := cs.CoreV1().ConfigMaps("alone").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps("alone").Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The default ServiceAccount still comes: kube's ServiceAccount admission needs it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := cs.CoreV1().ServiceAccounts("alone").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("default ServiceAccount: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cs.CoreV1().ConfigMaps("alone").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "alone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, err := cs.CoreV1().ConfigMaps("alone").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-root-ca.crt: %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("alone").Get(ctx, "owned", metav1.GetOptions{}); err != nil {
		t.Errorf("owned ConfigMap collected without kube-controller-manager: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "alone", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("deleted namespace: %v %v, want it Terminating", ns.Status.Phase, err)
	}
}

// TestServiceAccountAdmissionDisabled: with envtest's --disable-admission-plugins=ServiceAccount,
// kube-apiserver alone makes no default ServiceAccounts and a Pod gets none (nor a token
// volume), as under envtest with kube-apiserver.
func TestServiceAccountAdmissionDisabled(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(startInProcess(t, Config{KubeAPIServerOnly: true, DisableAdmissionPlugins: []string{"ServiceAccount"}}, nil))
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := cs.CoreV1().Pods("plain").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a Pod without ServiceAccount admission: %v", err)
	}
	if created.Spec.ServiceAccountName != "" || len(created.Spec.Volumes) != 0 {
		t.Errorf("Pod got serviceAccountName %q and volumes %v; ServiceAccount admission is disabled", created.Spec.ServiceAccountName, created.Spec.Volumes)
	}
	time.Sleep(time.Second)
	if sas, err := cs.CoreV1().ServiceAccounts("plain").List(ctx, metav1.ListOptions{}); err != nil || len(sas.Items) != 0 {
		t.Errorf("ServiceAccounts in a new namespace: %v (%v), want none", sas, err)
	}
}

// TestStepsAsideForKubeControllerManager: on an etcd other processes share, lapis's
// kube-controller-manager controllers stop while a kube-controller-manager holds its Lease, and
// resume once the Lease expires: here, kube-root-ca.crt is published in a new namespace only
// then.
func TestStepsAsideForKubeControllerManager(t *testing.T) {
	port := freeTCPPort(t)
	cfg := Config{EmbeddedEtcdClientURL: "https://127.0.0.1:" + port} // shared: not sole
	cs := kubernetes.NewForConfigOrDie(startInProcess(t, cfg, nil))
	ctx := context.Background()
	renewed := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kcm-elsewhere"), RenewTime: &renewed, LeaseDurationSeconds: ptr.To[int32](8)}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past a look at the Lease (leader.DefaultUnheldPoll)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "migrating"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, err := cs.CoreV1().ConfigMaps("migrating").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("kube-root-ca.crt while kube-controller-manager holds its Lease: %v, want NotFound", err)
	}
	// The holder stops renewing: 8 s after its last renewal lapis takes over.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps("migrating").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-root-ca.crt after kube-controller-manager's Lease expired: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
