package clientgo

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceFinalizedByClient: a client that deletes a namespace, reads it and finalizes it
// itself (controller-runtime's test helpers do) succeeds every time, as on kube-apiserver with
// kube-controller-manager, whose namespace controller leaves a Terminating namespace alone for
// 5 s before it writes to it (a client a second late still finds it untouched).
func TestNamespaceFinalizedByClient(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, time.Minute)
	cs := clientset(t, servers.stable)
	for i := range 3 {
		name := namespace(t, cs)
		if _, err := cs.CoreV1().ConfigMaps(name).Create(ctx, configMap(fmt.Sprint("c", i), nil, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// However slow the client, within the grace period the controller has not touched it.
		time.Sleep(time.Second)
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("try %d: reading the deleted namespace: %v", i, err)
		}
		if ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Status.Conditions) != 0 {
			t.Errorf("try %d: the namespace just deleted is %s with conditions %v; want Terminating, untouched", i, ns.Status.Phase, ns.Status.Conditions)
		}
		ns.Spec.Finalizers = nil
		if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("try %d: finalizing: %v", i, err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("try %d: after its finalizers are gone the namespace reads %v, want NotFound", i, err)
		}
	}
}
