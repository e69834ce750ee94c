package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
)

// The users of the tests: alice and bob are plain users, root is in system:masters.
var (
	alice = &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	bob   = &user.DefaultInfo{Name: "bob", Groups: []string{"devs", user.AllAuthenticated}}
	root  = &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
)

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func clusterBinding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects: subjects}
}

func binding(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName},
		Subjects: subjects}
}

// policy is the RBAC objects the authorizer tests run over.
func testPolicy() []runtime.Object {
	return []runtime.Object{
		role("a", "cm-reader", rbacv1helpers.NewRule("get").Groups("").Resources("configmaps").RuleOrDie()),
		binding("a", "alice-cm-reader", "Role", "cm-reader", userSubject("alice")),
		clusterRole("deploy-editor", rbacv1helpers.NewRule("get", "update").Groups("apps").Resources("deployments", "deployments/scale").RuleOrDie()),
		binding("b", "devs-deploy-editor", "ClusterRole", "deploy-editor", groupSubject("devs")),
		clusterRole("health", rbacv1helpers.NewRule("get").URLs("/healthz", "/readyz").RuleOrDie()),
		clusterBinding("authenticated-health", "health", groupSubject(user.AllAuthenticated)),
		clusterRole("node-reader", rbacv1helpers.NewRule("get", "list", "watch").Groups("").Resources("nodes").RuleOrDie()),
		clusterBinding("bob-node-reader", "node-reader", userSubject("bob")),
		// An aggregated role as the clusterrole-aggregation controller leaves it.
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"aggregate-to-monitoring": "true"}}}},
			Rules:           []rbacv1.PolicyRule{rbacv1helpers.NewRule("list").Groups("").Resources("pods").RuleOrDie()}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-lister", Labels: map[string]string{"aggregate-to-monitoring": "true"}},
			Rules: []rbacv1.PolicyRule{rbacv1helpers.NewRule("list").Groups("").Resources("pods").RuleOrDie()}},
		binding("c", "alice-monitoring", "ClusterRole", "monitoring", userSubject("alice")),
	}
}

// newTestAuthorizer runs New over fake informers holding objects.
func newTestAuthorizer(t *testing.T, mode []string, objects ...runtime.Object) *Authorizer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objects...), 0)
	a, err := New(mode, factory)
	if err != nil {
		t.Fatalf("New(%q): %v", mode, err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if !a.HasSynced() {
		cancel()
		t.Fatal("informers did not sync")
	}
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	return a
}

func resource(u user.Info, verb, group, res, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: res,
		Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func nonResource(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}

func TestAuthorize(t *testing.T) {
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	tests := []struct {
		name  string
		mode  []string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"masters may do anything", nil, resource(root, "delete", "", "secrets", "", "kube-system", "x"), authorizer.DecisionAllow},
		{"masters, non-resource", nil, nonResource(root, "get", "/metrics"), authorizer.DecisionAllow},
		{"role binding allows its namespace", nil, resource(alice, "get", "", "configmaps", "", "a", "x"), authorizer.DecisionAllow},
		{"role binding, other namespace", nil, resource(alice, "get", "", "configmaps", "", "b", "x"), authorizer.DecisionNoOpinion},
		{"role binding, other verb", nil, resource(alice, "list", "", "configmaps", "", "a", ""), authorizer.DecisionNoOpinion},
		{"role binding, cluster-wide", nil, resource(alice, "get", "", "configmaps", "", "", "x"), authorizer.DecisionNoOpinion},
		{"cluster role bound in a namespace, by group", nil, resource(bob, "update", "apps", "deployments", "scale", "b", "d"), authorizer.DecisionAllow},
		{"cluster role bound in a namespace, elsewhere", nil, resource(bob, "update", "apps", "deployments", "", "a", "d"), authorizer.DecisionNoOpinion},
		{"cluster role bound in a namespace, other subresource", nil, resource(bob, "update", "apps", "deployments", "status", "b", "d"), authorizer.DecisionNoOpinion},
		{"cluster role binding, cluster-wide", nil, resource(bob, "list", "", "nodes", "", "", ""), authorizer.DecisionAllow},
		{"cluster role binding, other user", nil, resource(alice, "list", "", "nodes", "", "", ""), authorizer.DecisionNoOpinion},
		{"non-resource URL allowed", nil, nonResource(alice, "get", "/healthz"), authorizer.DecisionAllow},
		{"non-resource URL, other verb", nil, nonResource(alice, "post", "/healthz"), authorizer.DecisionNoOpinion},
		{"non-resource URL, other path", nil, nonResource(alice, "get", "/metrics"), authorizer.DecisionNoOpinion},
		{"non-resource URL, anonymous", nil, nonResource(anonymous, "get", "/healthz"), authorizer.DecisionNoOpinion},
		{"aggregated role", nil, resource(alice, "list", "", "pods", "", "c", ""), authorizer.DecisionAllow},
		{"aggregated role, other verb", nil, resource(alice, "get", "", "pods", "", "c", "p"), authorizer.DecisionNoOpinion},
		{"RBAC named explicitly", []string{"RBAC"}, resource(alice, "get", "", "configmaps", "", "a", "x"), authorizer.DecisionAllow},
		{"AlwaysAllow", []string{"AlwaysAllow"}, resource(anonymous, "delete", "", "secrets", "", "x", "y"), authorizer.DecisionAllow},
		{"AlwaysAllow after RBAC", []string{"RBAC", "AlwaysAllow"}, nonResource(alice, "get", "/metrics"), authorizer.DecisionAllow},
		{"AlwaysDeny (no opinion, as kube's)", []string{"AlwaysDeny"}, resource(alice, "get", "", "configmaps", "", "a", "x"), authorizer.DecisionNoOpinion},
		{"AlwaysDeny, masters first", []string{"AlwaysDeny"}, resource(root, "get", "", "configmaps", "", "a", "x"), authorizer.DecisionAllow},
		{"RBAC before AlwaysDeny", []string{"RBAC", "AlwaysDeny"}, resource(alice, "get", "", "configmaps", "", "a", "x"), authorizer.DecisionAllow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAuthorizer(t, tc.mode, testPolicy()...)
			got, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil || got != tc.want {
				t.Errorf("Authorize = %v (%q, %v), want %v", got, reason, err, tc.want)
			}
			if cad := a.ConditionsAwareAuthorize(context.Background(), tc.attrs); cad.IsAllow() != (tc.want == authorizer.DecisionAllow) {
				t.Errorf("ConditionsAwareAuthorize allowed = %v, want %v", cad.IsAllow(), tc.want == authorizer.DecisionAllow)
			}
		})
	}
}

// TestAuthorizeReason: RBAC tells which binding allowed a request, as kube's does.
func TestAuthorizeReason(t *testing.T) {
	a := newTestAuthorizer(t, nil, testPolicy()...)
	_, reason, _ := a.Authorize(context.Background(), resource(alice, "get", "", "configmaps", "", "a", "x"))
	if want := `RBAC: allowed by RoleBinding "alice-cm-reader/a" of Role "cm-reader" to User "alice"`; reason != want {
		t.Errorf("reason %q, want %q", reason, want)
	}
}

func TestNewModes(t *testing.T) {
	tests := []struct {
		mode    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"RBAC", "AlwaysAllow"}, ""},
		{[]string{"Node", "RBAC"}, `authorization-mode "Node" is not supported by lapis (supported: AlwaysAllow, AlwaysDeny, RBAC)`},
		{[]string{"Webhook"}, `authorization-mode "Webhook" is not supported by lapis`},
		{[]string{"ABAC"}, `authorization-mode "ABAC" is not supported by lapis`},
		{[]string{"rbac"}, `authorization-mode "rbac" is not a valid mode (supported: AlwaysAllow, AlwaysDeny, RBAC)`},
		{[]string{"RBAC", "RBAC"}, `authorization-mode ["RBAC" "RBAC"] has mode specified more than once`},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.mode), func(t *testing.T) {
			_, err := New(tc.mode, informers.NewSharedInformerFactory(fake.NewClientset(), 0))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("New: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	tests := []struct {
		name        string
		mode        []string
		user        user.Info
		namespace   string
		resource    []string // verbs/groups/resources of each rule, as "verbs groups resources"
		nonResource []string // "verbs urls"
	}{
		{"role in its namespace", nil, alice, "a", []string{"get  configmaps"}, []string{"get /healthz,/readyz"}},
		{"aggregated role", nil, alice, "c", []string{"list  pods"}, []string{"get /healthz,/readyz"}},
		{"elsewhere", nil, alice, "b", nil, []string{"get /healthz,/readyz"}},
		{"cluster binding and group binding", nil, bob, "b", []string{"get,list,watch  nodes", "get,update apps deployments,deployments/scale"}, []string{"get /healthz,/readyz"}},
		{"AlwaysAllow", []string{"AlwaysAllow"}, alice, "b", []string{"* * *"}, []string{"* *"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAuthorizer(t, tc.mode, testPolicy()...)
			res, nonRes, incomplete, err := a.RulesFor(context.Background(), tc.user, tc.namespace)
			if err != nil || incomplete {
				t.Fatalf("RulesFor: incomplete %v, %v", incomplete, err)
			}
			var gotRes, gotNonRes []string
			for _, r := range res {
				gotRes = append(gotRes, strings.Join(r.GetVerbs(), ",")+" "+strings.Join(r.GetAPIGroups(), ",")+" "+strings.Join(r.GetResources(), ","))
			}
			for _, r := range nonRes {
				gotNonRes = append(gotNonRes, strings.Join(r.GetVerbs(), ",")+" "+strings.Join(r.GetNonResourceURLs(), ","))
			}
			slices.Sort(gotRes)
			slices.Sort(gotNonRes)
			if !slices.Equal(gotRes, tc.resource) || !slices.Equal(gotNonRes, tc.nonResource) {
				t.Errorf("RulesFor = %q, %q; want %q, %q", gotRes, gotNonRes, tc.resource, tc.nonResource)
			}
		})
	}
}
