package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/kubeapiserver/authorizer/modes"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

// Supported is what --authorization-mode accepts, in the order kube lists its modes.
var supported = []string{modes.ModeAlwaysAllow, modes.ModeAlwaysDeny, modes.ModeRBAC}

// Authorizer is kube-apiserver's authorizer union: members of system:masters first, then each
// mode in the order given. It is also the union of the modes' rule resolvers (for
// SelfSubjectRulesReview) and carries RBAC's rule resolver for escalation checks.
type Authorizer struct {
	union    authorizer.Authorizer
	rules    authorizer.RuleResolver
	resolver rbacregistryvalidation.AuthorizationRuleResolver // escalation checks' view of RBAC
	synced   []cache.InformerSynced
	// decisions remembers answers while RBAC's objects are unchanged (nil: not remembered).
	decisions *decisions
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New builds the authorizer for kube-apiserver's --authorization-mode list (RBAC when empty).
// factory's RBAC informers are registered here; the caller starts factory (and may wait for
// HasSynced) before serving.
func New(mode []string, factory informers.SharedInformerFactory) (*Authorizer, error) {
	if len(mode) == 0 {
		mode = []string{modes.ModeRBAC}
	}
	if err := validate(mode); err != nil {
		return nil, err
	}
	rbacInformers := factory.Rbac().V1()
	roles := rbacInformers.Roles()
	roleBindings := rbacInformers.RoleBindings()
	clusterRoles := rbacInformers.ClusterRoles()
	clusterRoleBindings := rbacInformers.ClusterRoleBindings()
	// Escalation checks read RBAC in every mode, as kube's RBAC storage does.
	a := &Authorizer{
		resolver: rbacregistryvalidation.NewDefaultRuleResolver(
			storageRoles{roles.Lister()},
			storageRoleBindings{roleBindings.Lister()},
			storageClusterRoles{clusterRoles.Lister()},
			storageClusterRoleBindings{clusterRoleBindings.Lister()},
		),
		synced: []cache.InformerSynced{
			roles.Informer().HasSynced,
			roleBindings.Informer().HasSynced,
			clusterRoles.Informer().HasSynced,
			clusterRoleBindings.Informer().HasSynced,
		},
	}

	// As kube-apiserver's reloadableAuthorizerResolver.newForConfig.
	authorizers := []union.NamedAuthorizer{{
		AuthorizerName: "kubernetes.io/system-privileged-group",
		Authorizer:     authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup),
	}}
	var resolvers []authorizer.RuleResolver
	for _, m := range mode {
		var (
			az authorizer.Authorizer
			rr authorizer.RuleResolver
		)
		switch m {
		case modes.ModeAlwaysAllow:
			allow := authorizerfactory.NewAlwaysAllowAuthorizer()
			az, rr = allow, allow
		case modes.ModeAlwaysDeny:
			deny := authorizerfactory.NewAlwaysDenyAuthorizer()
			az, rr = deny, deny
		case modes.ModeRBAC:
			r := rbac.New(
				&rbac.RoleGetter{Lister: roles.Lister()},
				&rbac.RoleBindingLister{Lister: roleBindings.Lister()},
				&rbac.ClusterRoleGetter{Lister: clusterRoles.Lister()},
				&rbac.ClusterRoleBindingLister{Lister: clusterRoleBindings.Lister()},
			)
			az, rr = r, r
		}
		// kube names each mode's authorizer by its lowercased mode (GetNameForAuthorizerMode).
		authorizers = append(authorizers, union.NamedAuthorizer{AuthorizerName: strings.ToLower(m), Authorizer: az})
		resolvers = append(resolvers, rr)
	}
	if slices.Contains(mode, modes.ModeRBAC) {
		a.decisions = &decisions{}
		forget := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { a.decisions.forget() },
			UpdateFunc: func(any, any) { a.decisions.forget() },
			DeleteFunc: func(any) { a.decisions.forget() },
		}
		for _, i := range []cache.SharedIndexInformer{roles.Informer(), roleBindings.Informer(), clusterRoles.Informer(), clusterRoleBindings.Informer()} {
			if _, err := i.AddEventHandler(forget); err != nil {
				return nil, err
			}
		}
	}
	u, err := union.New(authorizers...)
	if err != nil {
		return nil, err
	}
	a.union = u
	a.rules = union.NewRuleResolvers(resolvers...)
	return a, nil
}

// validate refuses what kube-apiserver's flag validation refuses, and the modes lapis does not
// implement.
func validate(mode []string) error {
	seen := map[string]bool{}
	for _, m := range mode {
		switch {
		case !modes.IsValidAuthorizationMode(m):
			return fmt.Errorf("authorization-mode %q is not a valid mode (supported: %s)", m, strings.Join(supported, ", "))
		case !slices.Contains(supported, m):
			return fmt.Errorf("authorization-mode %q is not supported by lapis (supported: %s)", m, strings.Join(supported, ", "))
		case seen[m]:
			return fmt.Errorf("authorization-mode %q has mode specified more than once", mode)
		}
		seen[m] = true
	}
	return nil
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.decisions == nil {
		return a.union.Authorize(ctx, attrs)
	}
	key, ok := decisionKey(attrs)
	if !ok {
		return a.union.Authorize(ctx, attrs)
	}
	remembered, ok, generation := a.decisions.get(key)
	if ok {
		return remembered.decision, remembered.reason, nil
	}
	d, reason, err := a.union.Authorize(ctx, attrs)
	if err == nil {
		a.decisions.put(generation, key, decision{d, reason})
	}
	return d, reason, err
}

// ConditionsAwareAuthorize implements authorizer.Authorizer.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return a.union.ConditionsAwareAuthorize(ctx, attrs)
}

// EvaluateConditions implements authorizer.Authorizer.
func (a *Authorizer) EvaluateConditions(ctx context.Context, decision authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return a.union.EvaluateConditions(ctx, decision, data)
}

// RulesFor implements authorizer.RuleResolver: the rules of every mode, as SelfSubjectRulesReview
// reports them.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return a.rules.RulesFor(ctx, u, namespace)
}

// RuleResolver is RBAC's rule resolver, over the same informers, as kube's RBAC storage uses it
// for escalation checks (whatever the authorization mode).
func (a *Authorizer) RuleResolver() rbacregistryvalidation.AuthorizationRuleResolver {
	return a.resolver
}

// HasSynced reports whether the RBAC informers hold their first list: until then RBAC denies
// what it would allow.
func (a *Authorizer) HasSynced() bool {
	for _, s := range a.synced {
		if !s() {
			return false
		}
	}
	return true
}
