package authz

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestDecisionsFollowRBAC: remembered answers never outlive a change to RBAC's objects — a
// binding created, changed or deleted changes the next answer at once.
func TestDecisionsFollowRBAC(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	a, err := New([]string{"RBAC"}, factory)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "get", Namespace: "ns", Resource: "configmaps",
		APIVersion: "v1", Name: "x", ResourceRequest: true}
	wait := func(what string, want authorizer.Decision) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			d, _, err := a.Authorize(ctx, attrs)
			if err == nil && d == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v %v, want %v", what, d, err, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for range 3 { // asked again: remembered
		if d, _, _ := a.Authorize(ctx, attrs); d != authorizer.DecisionNoOpinion {
			t.Fatalf("alice without a role: %v", d)
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}
	if _, err := client.RbacV1().Roles("ns").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().RoleBindings("ns").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("bound", authorizer.DecisionAllow)
	role.Rules[0].Verbs = []string{"list"}
	if _, err := client.RbacV1().Roles("ns").Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("the role no longer grants get", authorizer.DecisionNoOpinion)
	role.Rules[0].Verbs = []string{"get"}
	if _, err := client.RbacV1().Roles("ns").Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("granted again", authorizer.DecisionAllow)
	if err := client.RbacV1().RoleBindings("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("unbound", authorizer.DecisionNoOpinion)
	// Another user, other groups, another verb are other questions.
	other := attrs
	other.User = &user.DefaultInfo{Name: "alice", Groups: []string{user.SystemPrivilegedGroup}}
	if d, _, _ := a.Authorize(ctx, other); d != authorizer.DecisionAllow {
		t.Errorf("alice in system:masters: %v", d)
	}
}
