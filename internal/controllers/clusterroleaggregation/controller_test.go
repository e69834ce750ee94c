package clusterroleaggregation

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// TestRun: kube's admin, edit and view gather the rules of the roles labelled to join them
// (the bootstrap system:aggregate-to-* roles and one of our own), each rule once, and follow
// a new labelled role and the deletion of one.
func TestRun(t *testing.T) {
	widgets := rbacv1helpers.NewRule("get", "list", "watch").Groups("example.com").Resources("widgets").RuleOrDie()
	gadgets := rbacv1helpers.NewRule("update").Groups("example.com").Resources("gadgets").RuleOrDie()
	labelled := func(name string, label string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: "true"}}, Rules: rules}
	}
	var objects []runtime.Object
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range bootstrappolicy.ClusterRoles() {
		roles[r.Name] = r
		objects = append(objects, r.DeepCopy())
	}
	// view's widgets, again in a second role: aggregated once.
	objects = append(objects,
		labelled("widget-viewer", "rbac.authorization.k8s.io/aggregate-to-view", widgets),
		labelled("widget-viewer-again", "rbac.authorization.k8s.io/aggregate-to-view", widgets),
	)
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { Run(ctx, client, factory) })
	defer func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}()

	// kube's own order: each selector's roles sorted by name, each rule once. Aggregation is
	// transitive: view is labelled to join edit, and edit to join admin.
	rules := func(names ...string) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, n := range names {
			out = append(out, roles[n].Rules...)
		}
		return out
	}
	join := func(lists ...[]rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	wantView := join(rules("system:aggregate-to-view"), []rbacv1.PolicyRule{widgets})
	wantEdit := join(rules("system:aggregate-to-edit"), wantView)
	wantAdmin := join(wantEdit, rules("system:aggregate-to-admin"))
	waitFor(t, client, map[string][]rbacv1.PolicyRule{"view": wantView, "edit": wantEdit, "admin": wantAdmin})

	view, _ := client.RbacV1().ClusterRoles().Get(context.Background(), "view", metav1.GetOptions{})
	applied := slices.ContainsFunc(view.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == "clusterrole-aggregation-controller" && e.Operation == metav1.ManagedFieldsOperationApply
	})
	if !applied {
		t.Errorf("view's rules not applied by clusterrole-aggregation-controller: %+v", view.ManagedFields)
	}

	if _, err := client.RbacV1().ClusterRoles().Create(context.Background(), labelled("gadget-editor", "rbac.authorization.k8s.io/aggregate-to-edit", gadgets), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// gadget-editor sorts before system:aggregate-to-edit.
	withGadgets := join([]rbacv1.PolicyRule{gadgets}, wantEdit)
	waitFor(t, client, map[string][]rbacv1.PolicyRule{"edit": withGadgets, "admin": join(withGadgets, rules("system:aggregate-to-admin"))})
	if err := client.RbacV1().ClusterRoles().Delete(context.Background(), "gadget-editor", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, client, map[string][]rbacv1.PolicyRule{"edit": wantEdit, "admin": wantAdmin})
}

// waitFor waits until each named ClusterRole has the rules wanted.
func waitFor(t *testing.T, client *fake.Clientset, want map[string][]rbacv1.PolicyRule) {
	t.Helper()
	got := map[string][]rbacv1.PolicyRule{}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for name, rules := range want {
			r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got[name] = r.Rules
			if !equality.Semantic.DeepEqual(r.Rules, rules) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for name := range want {
			if !equality.Semantic.DeepEqual(got[name], want[name]) {
				t.Errorf("%s: rules %+v\nwant %+v", name, got[name], want[name])
			}
		}
	}
}
