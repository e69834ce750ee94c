package authz

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
)

// escalationPolicy: alice reads configmaps in a; bob may escalate roles in a, escalate the
// role r1 in d, and bind the ClusterRole secret-admin in a; carol holds everything without
// being in system:masters.
func escalationPolicy() []runtime.Object {
	return []runtime.Object{
		role("a", "cm-reader", rbacv1helpers.NewRule("get").Groups("").Resources("configmaps").RuleOrDie()),
		binding("a", "alice-cm-reader", "Role", "cm-reader", userSubject("alice")),
		clusterRole("secret-admin", rbacv1helpers.NewRule("get", "list", "update").Groups("").Resources("secrets").RuleOrDie()),
		clusterRole("cluster-cm-reader", rbacv1helpers.NewRule("get").Groups("").Resources("configmaps").RuleOrDie()),
		role("a", "escalator", rbacv1helpers.NewRule("escalate").Groups(rbacv1.GroupName).Resources("roles").RuleOrDie()),
		binding("a", "bob-escalator", "Role", "escalator", userSubject("bob")),
		role("d", "escalate-r1", rbacv1helpers.NewRule("escalate").Groups(rbacv1.GroupName).Resources("roles").Names("r1").RuleOrDie()),
		binding("d", "bob-escalate-r1", "Role", "escalate-r1", userSubject("bob")),
		role("a", "secret-admin-binder", rbacv1helpers.NewRule("bind").Groups(rbacv1.GroupName).Resources("clusterroles").Names("secret-admin").RuleOrDie()),
		binding("a", "bob-binder", "Role", "secret-admin-binder", userSubject("bob")),
		clusterRole("everything", rbacv1helpers.NewRule("*").Groups("*").Resources("*").RuleOrDie(), rbacv1helpers.NewRule("*").URLs("*").RuleOrDie()),
		clusterBinding("carol-everything", "everything", userSubject("carol")),
	}
}

func toInternal(t *testing.T, obj runtime.Object) runtime.Object {
	t.Helper()
	if obj == nil {
		return nil
	}
	out, err := internal(obj)
	if err != nil || out == nil {
		t.Fatalf("internal(%T): %v", obj, err)
	}
	return out
}

func TestCheckRBACWrite(t *testing.T) {
	carol := &user.DefaultInfo{Name: "carol", Groups: []string{user.AllAuthenticated}}
	getCM := rbacv1helpers.NewRule("get").Groups("").Resources("configmaps").RuleOrDie()
	listCM := rbacv1helpers.NewRule("list").Groups("").Resources("configmaps").RuleOrDie()
	aggregated := func(name string) *rbacv1.ClusterRole {
		r := clusterRole(name)
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}
		return r
	}
	withFinalizer := func(b *rbacv1.RoleBinding) *rbacv1.RoleBinding {
		b = b.DeepCopy()
		b.Finalizers = []string{"example.com/keep"}
		return b
	}
	secretAdminInA := binding("a", "rb", "ClusterRole", "secret-admin", userSubject("eve"))

	tests := []struct {
		name     string
		user     user.Info
		obj, old runtime.Object
		v1       bool // pass the rbac/v1 objects as they are
		want     string
		notFound bool
	}{
		{name: "role granting what one holds", user: alice, obj: role("a", "r", getCM)},
		{name: "role granting more", user: alice, obj: role("a", "r", getCM, listCM),
			want: `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["list"]}`},
		{name: "role elsewhere", user: alice, obj: role("b", "r", getCM),
			want: `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}`},
		{name: "rbac/v1 role", user: alice, obj: role("a", "r", listCM), v1: true,
			want: `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["list"]}`},
		{name: "role by system:masters", user: root, obj: role("x", "r", listCM)},
		{name: "role with the escalate verb", user: bob, obj: role("a", "r", listCM)},
		{name: "role update with the escalate verb", user: bob, obj: role("a", "r", listCM), old: role("a", "r")},
		{name: "escalate elsewhere", user: bob, obj: role("b", "r", listCM),
			want: `roles.rbac.authorization.k8s.io "r" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["list"]}`},
		// kube checks escalate on the request's name: a create (POST) names nothing.
		{name: "create of a role one may escalate by name", user: bob, obj: role("d", "r1", listCM),
			want: `roles.rbac.authorization.k8s.io "r1" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["list"]}`},
		{name: "update of a role one may escalate by name", user: bob, obj: role("d", "r1", listCM), old: role("d", "r1")},
		{name: "cluster role granting what one holds in a namespace only", user: alice, obj: clusterRole("c", getCM),
			want: `clusterroles.rbac.authorization.k8s.io "c" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}`},
		{name: "aggregation rule", user: alice, obj: aggregated("c"),
			want: `clusterroles.rbac.authorization.k8s.io "c" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{name: "aggregation rule removed", user: alice, obj: clusterRole("c"), old: aggregated("c"),
			want: `clusterroles.rbac.authorization.k8s.io "c" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{name: "aggregation rule by one who holds everything", user: carol, obj: aggregated("c")},
		{name: "binding of a role one holds", user: alice, obj: binding("a", "rb", "Role", "cm-reader", userSubject("eve"))},
		{name: "binding of a cluster role one holds in the namespace", user: alice, obj: binding("a", "rb", "ClusterRole", "cluster-cm-reader", userSubject("eve"))},
		{name: "binding of more than one holds", user: alice, obj: secretAdminInA,
			want: `rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "update"]}`},
		{name: "binding with the bind verb", user: bob, obj: secretAdminInA},
		{name: "binding with the bind verb, update", user: bob, obj: secretAdminInA, old: binding("a", "rb", "ClusterRole", "secret-admin")},
		{name: "bind verb for another role", user: bob, obj: binding("a", "rb", "ClusterRole", "everything", userSubject("eve")),
			want: `rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`},
		{name: "bind verb in another namespace", user: bob, obj: binding("b", "rb", "ClusterRole", "secret-admin", userSubject("eve")),
			want: `rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "update"]}`},
		// As kube's storage words it: the resource of the request, the name of the role.
		{name: "binding of a missing role", user: alice, obj: binding("a", "rb", "ClusterRole", "nonexistent"),
			want: `rolebindings.rbac.authorization.k8s.io "nonexistent" not found`, notFound: true},
		{name: "binding by system:masters", user: root, obj: binding("a", "rb", "ClusterRole", "nonexistent")},
		{name: "only the garbage collector's fields", user: alice, obj: withFinalizer(secretAdminInA), old: secretAdminInA},
		{name: "garbage collector's fields do not exempt a create", user: alice, obj: withFinalizer(secretAdminInA),
			want: `rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "update"]}`},
		{name: "cluster binding of what one holds in a namespace only", user: alice, obj: clusterBinding("crb", "cluster-cm-reader", userSubject("eve")),
			want: `clusterrolebindings.rbac.authorization.k8s.io "crb" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}`},
		{name: "cluster binding by one who holds everything", user: carol, obj: clusterBinding("crb", "everything", userSubject("eve"))},
		{name: "cluster binding of a missing role", user: alice, obj: clusterBinding("crb", "nonexistent"),
			want: `clusterrolebindings.rbac.authorization.k8s.io "nonexistent" not found`, notFound: true},
		{name: "other kinds", user: alice, obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}, v1: true},
	}
	a := newTestAuthorizer(t, nil, escalationPolicy()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, old := tc.obj, tc.old
			if !tc.v1 {
				obj, old = toInternal(t, obj), toInternal(t, old)
			}
			ctx := genericapirequest.WithUser(context.Background(), tc.user)
			err := a.CheckRBACWrite(ctx, obj, old)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckRBACWrite: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("CheckRBACWrite allowed, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("CheckRBACWrite:\n%s\nwant\n%s", err, tc.want)
			case tc.want != "" && tc.notFound != apierrors.IsNotFound(err), tc.want != "" && !tc.notFound && !apierrors.IsForbidden(err):
				t.Errorf("CheckRBACWrite: %#v, want a NotFound %v, else Forbidden", err, tc.notFound)
			}
		})
	}
}

// TestCheckRBACWriteRequestContext: the namespace and RequestInfo the caller put in ctx are
// kube's, and win over the object's.
func TestCheckRBACWriteRequestContext(t *testing.T) {
	a := newTestAuthorizer(t, nil, escalationPolicy()...)
	listCM := rbacv1helpers.NewRule("list").Groups("").Resources("configmaps").RuleOrDie()
	obj := toInternal(t, role("", "r1", listCM)) // no namespace yet: the request's is used
	base := genericapirequest.WithNamespace(genericapirequest.WithUser(context.Background(), bob), "d")
	tests := []struct {
		name    string
		info    *genericapirequest.RequestInfo
		allowed bool
	}{
		{"POST", &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIGroup: rbacv1.GroupName, APIVersion: "v1", Namespace: "d", Resource: "roles"}, false},
		// Server-side apply creating the role is a PATCH to its name.
		{"PATCH", &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "patch", APIGroup: rbacv1.GroupName, APIVersion: "v1", Namespace: "d", Resource: "roles", Name: "r1"}, true},
		{"no RequestInfo", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := base
			if tc.info != nil {
				ctx = genericapirequest.WithRequestInfo(ctx, tc.info)
			}
			err := a.CheckRBACWrite(ctx, obj, nil)
			if (err == nil) != tc.allowed {
				t.Errorf("CheckRBACWrite: %v, want allowed %v", err, tc.allowed)
			}
		})
	}
	// A RoleBinding with neither a namespace in ctx nor one of its own is refused as kube does.
	ctx := genericapirequest.WithUser(context.Background(), alice)
	err := a.CheckRBACWrite(ctx, toInternal(t, binding("", "rb", "Role", "cm-reader")), nil)
	if !apierrors.IsBadRequest(err) || err.Error() != "namespace is required" {
		t.Errorf("binding without namespace: %v", err)
	}
}
