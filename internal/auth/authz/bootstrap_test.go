package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

func ensure(t *testing.T, c *fake.Clientset) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureBootstrapPolicy(ctx, c, nil); err != nil {
		t.Fatalf("EnsureBootstrapPolicy: %v", err)
	}
}

func writes(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource)
		}
	}
	return out
}

// TestEnsureBootstrapPolicyCreates: every object of kube's bootstrap policy is created (with
// kube's rules and subjects), then a second start writes nothing.
func TestEnsureBootstrapPolicyCreates(t *testing.T) {
	c := fake.NewClientset()
	ensure(t, c)
	ctx := context.Background()
	p := bootstrapPolicy()

	crs, _ := c.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	byName := map[string]rbacv1.ClusterRole{}
	for _, r := range crs.Items {
		byName[r.Name] = r
	}
	if len(byName) != len(p.clusterRoles) {
		t.Errorf("%d ClusterRoles, want %d", len(byName), len(p.clusterRoles))
	}
	for _, want := range p.clusterRoles {
		got, ok := byName[want.Name]
		if !ok || !equality.Semantic.DeepEqual(got.Rules, want.Rules) || !equality.Semantic.DeepEqual(got.AggregationRule, want.AggregationRule) {
			t.Errorf("ClusterRole %s: %v, %+v; want %+v", want.Name, ok, got.Rules, want.Rules)
		}
	}
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:public-info-viewer", "system:controller:clusterrole-aggregation-controller", "system:controller:namespace-controller"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no ClusterRole %s", name)
		}
	}
	crbs, _ := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if len(crbs.Items) != len(p.clusterRoleBindings) {
		t.Errorf("%d ClusterRoleBindings, want %d", len(crbs.Items), len(p.clusterRoleBindings))
	}
	for ns, roles := range bootstrappolicy.NamespaceRoles() {
		for _, want := range roles {
			got, err := c.RbacV1().Roles(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
				t.Errorf("Role %s/%s: %v", ns, want.Name, err)
			}
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s of the roles: %v", ns, err)
		}
	}
	for ns, bindings := range bootstrappolicy.NamespaceRoleBindings() {
		for _, want := range bindings {
			got, err := c.RbacV1().RoleBindings(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || !equality.Semantic.DeepEqual(got.Subjects, want.Subjects) {
				t.Errorf("RoleBinding %s/%s: %v", ns, want.Name, err)
			}
		}
	}

	c.ClearActions()
	ensure(t, c)
	if w := writes(c); len(w) != 0 {
		t.Errorf("a second pass wrote %q", w)
	}
	if n := len(c.Actions()); n != 4 {
		t.Errorf("a second pass made %d requests, want 4 lists", n)
	}
}

// TestEnsureBootstrapPolicyReconciles: missing rules and subjects come back, what was added is
// kept, a protected object is left alone, a binding to another role is recreated, and a
// legacy role's own rules move to its aggregated-to role.
func TestEnsureBootstrapPolicyReconciles(t *testing.T) {
	extra := rbacv1helpers.NewRule("get").Groups("example.com").Resources("widgets").RuleOrDie()
	custom := rbacv1helpers.NewRule("list").Groups("example.com").Resources("gadgets").RuleOrDie()
	someone := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}
	protected := map[string]string{rbacv1.AutoUpdateAnnotationKey: "false"}
	c := fake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user", Labels: map[string]string{"mine": "yes"}}, Rules: []rbacv1.PolicyRule{extra}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:discovery", Annotations: protected}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"}, Rules: []rbacv1.PolicyRule{custom}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{someone}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}},
	)
	ensure(t, c)
	ctx := context.Background()
	want := func(name string) rbacv1.ClusterRole {
		for _, r := range bootstrapPolicy().clusterRoles {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no bootstrap role %s", name)
		return rbacv1.ClusterRole{}
	}

	basic, _ := c.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	// Reconciling adds the missing rules one by one (kube's Covers breaks them down).
	if covers, _ := validation.Covers(basic.Rules, want("system:basic-user").Rules); !covers || !equality.Semantic.DeepEqual(basic.Rules[0], extra) {
		t.Errorf("system:basic-user rules %+v, want %+v then kube's", basic.Rules, extra)
	}
	if basic.Labels["mine"] != "yes" || basic.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" {
		t.Errorf("system:basic-user labels %v", basic.Labels)
	}
	if discovery, _ := c.RbacV1().ClusterRoles().Get(ctx, "system:discovery", metav1.GetOptions{}); len(discovery.Rules) != 0 {
		t.Errorf("protected system:discovery was reconciled: %+v", discovery.Rules)
	}
	migrated, _ := c.RbacV1().ClusterRoles().Get(ctx, "system:aggregate-to-edit", metav1.GetOptions{})
	if !slices.ContainsFunc(migrated.Rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, custom) }) {
		t.Errorf("edit's own rule did not move to system:aggregate-to-edit: %+v", migrated.Rules)
	}
	if edit, _ := c.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{}); edit.AggregationRule == nil {
		t.Errorf("edit has no aggregationRule")
	}
	admins, _ := c.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if wantSubjects := []string{"someone", "system:masters"}; !slices.Equal(subjectNames(admins.Subjects), wantSubjects) {
		t.Errorf("cluster-admin subjects %v, want %v", subjectNames(admins.Subjects), wantSubjects)
	}
	if b, _ := c.RbacV1().ClusterRoleBindings().Get(ctx, "system:basic-user", metav1.GetOptions{}); b.RoleRef.Name != "system:basic-user" {
		t.Errorf("system:basic-user binding refers to %q", b.RoleRef.Name)
	}
}

func subjectNames(subjects []rbacv1.Subject) []string {
	var out []string
	for _, s := range subjects {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// TestEnsureBootstrapPolicyRetries: storage that does not answer yet is asked again a second
// later, conflicts are retried at once, and a ctx that ends first ends the attempt with the
// last failure.
func TestEnsureBootstrapPolicyRetries(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is starting")
	t.Run("storage not ready", func(t *testing.T) {
		c := fake.NewClientset()
		lists := 0
		c.PrependReactor("list", "clusterroles", func(k8stesting.Action) (bool, runtime.Object, error) {
			lists++
			return lists == 1, nil, unavailable
		})
		ensure(t, c)
		if _, err := c.RbacV1().ClusterRoles().Get(context.Background(), "cluster-admin", metav1.GetOptions{}); err != nil || lists != 2 {
			t.Errorf("cluster-admin after %d lists: %v", lists, err)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		c := fake.NewClientset(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"}})
		updates := 0
		c.PrependReactor("update", "clusterroles", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if r := a.(k8stesting.UpdateAction).GetObject().(*rbacv1.ClusterRole); r.Name != "view" {
				return false, nil, nil
			}
			updates++
			return updates == 1, nil, apierrors.NewConflict(rbacv1.Resource("clusterroles"), "view", errors.New("changed"))
		})
		ensure(t, c)
		if view, _ := c.RbacV1().ClusterRoles().Get(context.Background(), "view", metav1.GetOptions{}); view.AggregationRule == nil || updates != 2 {
			t.Errorf("view after %d updates: %+v", updates, view)
		}
	})
	t.Run("never ready", func(t *testing.T) {
		c := fake.NewClientset()
		c.PrependReactor("list", "clusterroles", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, unavailable
		})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := EnsureBootstrapPolicy(ctx, c, nil)
		if err == nil || !strings.Contains(err.Error(), "unable to initialize roles: unable to initialize clusterroles: etcd is starting") {
			t.Errorf("EnsureBootstrapPolicy: %v", err)
		}
	})
}

// creator is a Creator storing into c's tracker, counting its calls.
func creator(c *fake.Clientset, calls *atomic.Int32) Creator {
	return func(_ context.Context, resource schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) error {
		calls.Add(1)
		if obj.GetKind() != kinds[resource] || obj.GetAPIVersion() != "rbac.authorization.k8s.io/v1" || obj.GetNamespace() != namespace {
			return fmt.Errorf("%s %s in %q handed over as %s %s in %q", resource.Resource, obj.GetName(), namespace, obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace())
		}
		typed, err := scheme.Scheme.New(obj.GroupVersionKind())
		if err != nil {
			return err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
			return err
		}
		return c.Tracker().Create(resource, typed, namespace)
	}
}

// stored is every RBAC object of c, typed, by kind, namespace and name.
func stored(t *testing.T, c *fake.Clientset) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	for resource, kind := range kinds {
		list, err := c.Tracker().List(resource, rbacv1.SchemeGroupVersion.WithKind(kind), "")
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			m, _ := meta.Accessor(item)
			m.SetManagedFields(nil) // the fake's own, with the time of each write
			out[kind+" "+m.GetNamespace()+"/"+m.GetName()] = item
		}
	}
	return out
}

// TestEnsureBootstrapPolicyDirect: on a first start the objects go through the Creator, none
// through the client, and end up as the client would have stored them; the namespaces of
// namespaced ones are made through the client. Once anything is stored, the Creator is not used.
func TestEnsureBootstrapPolicyDirect(t *testing.T) {
	viaClient := fake.NewClientset()
	ensure(t, viaClient)

	c := fake.NewClientset()
	var calls atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureBootstrapPolicy(ctx, c, creator(c, &calls)); err != nil {
		t.Fatal(err)
	}
	want, got := stored(t, viaClient), stored(t, c)
	if int(calls.Load()) != len(want) {
		t.Errorf("%d objects created directly, want %d", calls.Load(), len(want))
	}
	for _, verb := range writes(c) {
		if verb != "create namespaces" {
			t.Errorf("a first start wrote %q through the client", verb)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d objects, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !equality.Semantic.DeepEqual(g, w) {
			t.Errorf("%s: %+v\nwant %+v", k, g, w)
		}
	}
	for ns := range bootstrappolicy.NamespaceRoles() {
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s of the roles: %v", ns, err)
		}
	}

	// A second start (everything stored) and a start with something stored use the client.
	for name, c := range map[string]*fake.Clientset{
		"restart":       c,
		"one role kept": fake.NewClientset(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}),
	} {
		calls.Store(0)
		if err := EnsureBootstrapPolicy(ctx, c, creator(c, &calls)); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 0 {
			t.Errorf("%s: %d objects created directly", name, calls.Load())
		}
	}
}

// TestEnsureBootstrapPolicyDirectFails: a Creator's failure fails the pass as a client's would,
// and the next pass, seeing some objects stored, creates the rest through the client.
func TestEnsureBootstrapPolicyDirectFails(t *testing.T) {
	c := fake.NewClientset()
	var calls atomic.Int32
	ok := creator(c, &calls)
	failing := func(ctx context.Context, resource schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) error {
		if obj.GetName() == "view" {
			return apierrors.NewInternalError(errors.New("disk on fire"))
		}
		return ok(ctx, resource, namespace, obj)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureBootstrapPolicy(ctx, c, failing); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{}); err != nil {
		t.Errorf("view after a failed first create: %v", err)
	}
	if !slices.Contains(writes(c), "create clusterroles") {
		t.Errorf("the second pass did not create through the client: %q", writes(c))
	}
}
