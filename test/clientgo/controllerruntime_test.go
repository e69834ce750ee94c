package clientgo

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/lapis-dev/lapis/internal/testkit/poll"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// appLabel marks the ConfigMaps the test controller reconciles (not kube-root-ca.crt).
const appLabel = "lapis.dev/app"

// webReconciler makes, for each labelled ConfigMap, a Deployment and a Service of the same name
// that it controls (ownerReferences), as an operator does for its custom resource: the image
// comes from the ConfigMap's data.
type webReconciler struct {
	crclient.Client
	runs atomic.Int64
}

func (r *webReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.runs.Add(1)
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, crclient.IgnoreNotFound(err)
	}
	if cm.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	labels := map[string]string{"app": cm.Name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Spec.Replicas = ptr.To[int32](2)
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		dep.Spec.Template.Spec.Containers = []corev1.Container{{
			Name: "web", Image: cm.Data["image"], Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}
		return controllerutil.SetControllerReference(&cm, dep, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("deployment: %w", err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		svc.Spec.Selector = labels
		svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}
		return controllerutil.SetControllerReference(&cm, svc, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("service: %w", err)
	}
	return ctrl.Result{}, nil
}

// TestControllerRuntimeOwns runs a controller-runtime manager against lapis whose controller is
// For ConfigMaps and Owns Deployments and Services: its caches (informers over ConfigMaps,
// Deployments and Services) sync, creating the owner makes the reconciler create both children
// with controller ownerReferences, changing or deleting a child reconciles the owner again (the
// Owns watches), and deleting the owner lets lapis's garbage collector delete both children.
func TestControllerRuntimeOwns(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	logs := &logBuffer{}
	log.SetLogger(funcr.New(logs.add, funcr.Options{}))
	defer func() {
		if t.Failed() {
			t.Logf("controller-runtime's log:\n%s", logs)
		}
	}()
	mgr, r, stopManager := startWebController(t, ctx, ns)
	defer stopManager()

	w := &webApp{ctx: ctx, cs: cs, ns: ns}
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{appLabel: "web"}},
		Data:       map[string]string{"image": "nginx:1.27"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, svc := w.childrenOwnedBy(t, owner)
	w.cacheHasChildren(t, mgr, dep, svc)
	w.changesReconciled(t, owner, svc)
	w.ownerDeletionCollectsChildren(t)
	if r.runs.Load() == 0 {
		t.Error("the reconciler never ran")
	}
}

// startWebController starts a manager, caching namespace ns, whose controller makes a
// Deployment and a Service for each labelled ConfigMap and Owns them, and waits for its caches.
// stop stops the manager.
func startWebController(t *testing.T, ctx context.Context, ns string) (mgr ctrl.Manager, r *webReconciler, stop func()) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(servers.stable, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	r = &webReconciler{Client: mgr.GetClient()}
	hasLabel := predicate.NewPredicateFuncs(func(o crclient.Object) bool { return o.GetLabels()[appLabel] != "" })
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("web-"+ns).
		For(&corev1.ConfigMap{}, builder.WithPredicates(hasLabel)).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Complete(r); err != nil {
		t.Fatalf("building controller: %v", err)
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}

	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		select {
		case err := <-done:
			t.Fatalf("caches did not sync; manager stopped: %v", err)
		default:
			stop()
			t.Fatal("caches did not sync within 30s")
		}
	}
	// Each kind the controller watches has a synced informer in the manager's cache.
	for _, obj := range []crclient.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Service{}} {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil || !inf.HasSynced() {
			stop()
			t.Fatalf("informer for %T: synced=%v err=%v", obj, err == nil && inf.HasSynced(), err)
		}
	}
	return mgr, r, stop
}

// webApp is the namespace where the controller of TestControllerRuntimeOwns makes ConfigMap
// web's Deployment and Service.
type webApp struct {
	ctx context.Context
	cs  kubernetes.Interface
	ns  string
}

// deploymentWith waits for Deployment web to run image and returns it.
func (w *webApp) deploymentWith(t *testing.T, image string) *appsv1.Deployment {
	var dep *appsv1.Deployment
	poll.Eventually(t, 20*time.Second, "Deployment web with image "+image, func() (bool, string) {
		d, err := w.cs.AppsV1().Deployments(w.ns).Get(w.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if c := d.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Image != image {
			return false, fmt.Sprintf("containers %+v", c)
		}
		dep = d
		return true, ""
	})
	return dep
}

// childrenOwnedBy waits for the Deployment and the Service the controller makes for owner and
// checks they name it as their controller, and are defaulted and allocated as kube does.
func (w *webApp) childrenOwnedBy(t *testing.T, owner *corev1.ConfigMap) (*appsv1.Deployment, *corev1.Service) {
	wantRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web", UID: owner.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	checkRefs := func(kind string, refs []metav1.OwnerReference) string {
		if len(refs) != 1 || !reflect.DeepEqual(refs[0], wantRef) {
			got, _ := json.Marshal(refs)
			want, _ := json.Marshal(wantRef)
			return fmt.Sprintf("%s ownerReferences %s, want [%s]", kind, got, want)
		}
		return ""
	}
	dep := w.deploymentWith(t, "nginx:1.27")
	if why := checkRefs("Deployment", dep.OwnerReferences); why != "" {
		t.Error(why)
	}
	// lapis defaults the Deployment as kube does.
	if dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || dep.Spec.RevisionHistoryLimit == nil || *dep.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("Deployment not defaulted as kube: strategy %+v, revisionHistoryLimit %v", dep.Spec.Strategy, dep.Spec.RevisionHistoryLimit)
	}
	var svc *corev1.Service
	poll.Eventually(t, 20*time.Second, "Service web", func() (bool, string) {
		s, err := w.cs.CoreV1().Services(w.ns).Get(w.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		svc = s
		return true, ""
	})
	if why := checkRefs("Service", svc.OwnerReferences); why != "" {
		t.Error(why)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service has type %q clusterIP %q, want an allocated ClusterIP", svc.Spec.Type, svc.Spec.ClusterIP)
	}
	return dep, svc
}

// cacheHasChildren: the controller reads its children from its cache: once the cache has
// them, it agrees.
func (w *webApp) cacheHasChildren(t *testing.T, mgr ctrl.Manager, dep *appsv1.Deployment, svc *corev1.Service) {
	poll.Eventually(t, 10*time.Second, "Deployment and Service in the manager's cache", func() (bool, string) {
		var d appsv1.Deployment
		var s corev1.Service
		key := types.NamespacedName{Namespace: w.ns, Name: "web"}
		if err := mgr.GetClient().Get(w.ctx, key, &d); err != nil {
			return false, err.Error()
		}
		if err := mgr.GetClient().Get(w.ctx, key, &s); err != nil {
			return false, err.Error()
		}
		return d.UID == dep.UID && s.UID == svc.UID, fmt.Sprintf("cached uids %s %s, want %s %s", d.UID, s.UID, dep.UID, svc.UID)
	})
}

// changesReconciled: a change to the owner is reconciled into the child; with Owns, a change
// to a child reconciles its owner, which puts the child back, and a child (svc) deleted behind
// the controller's back is made again.
func (w *webApp) changesReconciled(t *testing.T, owner *corev1.ConfigMap, svc *corev1.Service) {
	cs, ctx, ns := w.cs, w.ctx, w.ns
	owner.Data["image"] = "nginx:1.28"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, owner, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.deploymentWith(t, "nginx:1.28")

	scale := `{"spec":{"replicas":5}}`
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(scale), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "Deployment web back at 2 replicas", func() (bool, string) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == 2, fmt.Sprintf("replicas %d", *d.Spec.Replicas)
	})
	if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "Service web made again", func() (bool, string) {
		s, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.UID != svc.UID, "still the old Service"
	})
}

// ownerDeletionCollectsChildren: deleting the owner (background propagation, the default) lets
// the garbage collector delete the children.
func (w *webApp) ownerDeletionCollectsChildren(t *testing.T) {
	cs, ctx, ns := w.cs, w.ctx, w.ns
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "Deployment and Service garbage-collected", func() (bool, string) {
		_, derr := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		_, serr := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(derr) && apierrors.IsNotFound(serr), fmt.Sprintf("deployment: %v; service: %v", derr, serr)
	})
}

// logBuffer keeps controller-runtime's log lines, shown when the test fails.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, prefix+" "+args)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
