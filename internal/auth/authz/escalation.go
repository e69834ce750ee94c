package authz

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	kapihelper "k8s.io/kubernetes/pkg/apis/core/helper"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
)

// fullAuthority is what setting an aggregationRule requires (kube's clusterrole policybased
// storage): it can gather anything.
var fullAuthority = []rbac.PolicyRule{
	rbac.NewRule("*").Groups("*").Resources("*").RuleOrDie(),
	rbac.NewRule("*").URLs("*").RuleOrDie(),
}

// CheckRBACWrite refuses a create (old nil) or update (old the stored object) of a Role,
// ClusterRole, RoleBinding or ClusterRoleBinding that would grant what the user in ctx does
// not hold, as kube's RBAC "policybased" storage does, with kube's errors: allowed for
// system:masters, for users who may `escalate` roles or `bind` the referenced role, for updates
// touching only what the garbage collector changes (finalizers, ownerReferences), and when the
// user already holds every granted rule. obj and old are kube's internal rbac types (or rbac/v1,
// converted); any other object is allowed.
//
// ctx carries the user (request.WithUser) and, as kube's storage reads them, the request's
// namespace (request.WithNamespace) and RequestInfo (request.WithRequestInfo: the `escalate`
// check is made on its resource and name, and a missing role is NotFound in its resource's
// words). Without them, they are taken from the object: the namespace of a Role or
// RoleBinding, and a RequestInfo naming the object on update and nothing on create (as a POST).
func (a *Authorizer) CheckRBACWrite(ctx context.Context, obj, old runtime.Object) error {
	obj, err := internal(obj)
	if err != nil || obj == nil {
		return err
	}
	if old != nil {
		if old, err = internal(old); err != nil {
			return err
		}
	}
	ctx = requestContext(ctx, obj, old)
	if rbacregistry.EscalationAllowed(ctx) {
		return nil
	}
	switch o := obj.(type) {
	case *rbac.Role:
		if rbacregistry.RoleEscalationAuthorized(ctx, a) || onlyGCFields(obj, old) {
			return nil
		}
		if err := rbacregistryvalidation.ConfirmNoEscalationInternal(ctx, a.resolver, o.Rules); err != nil {
			return apierrors.NewForbidden(rbac.Resource("roles"), o.Name, err)
		}
	case *rbac.ClusterRole:
		if rbacregistry.RoleEscalationAuthorized(ctx, a) || onlyGCFields(obj, old) {
			return nil
		}
		if err := rbacregistryvalidation.ConfirmNoEscalationInternal(ctx, a.resolver, o.Rules); err != nil {
			return apierrors.NewForbidden(rbac.Resource("clusterroles"), o.Name, err)
		}
		oldRole, _ := old.(*rbac.ClusterRole)
		if hasAggregationRule(o) || (oldRole != nil && hasAggregationRule(oldRole)) {
			if err := rbacregistryvalidation.ConfirmNoEscalationInternal(ctx, a.resolver, fullAuthority); err != nil {
				return apierrors.NewForbidden(rbac.Resource("clusterroles"), o.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
	case *rbac.RoleBinding:
		namespace, ok := genericapirequest.NamespaceFrom(ctx)
		if !ok {
			return apierrors.NewBadRequest("namespace is required")
		}
		// kube's update checks the garbage collector's fields first, its create does not.
		if onlyGCFields(obj, old) {
			return nil
		}
		return a.checkBinding(ctx, o.RoleRef, namespace, rbac.Resource("rolebindings"), o.Name)
	case *rbac.ClusterRoleBinding:
		if onlyGCFields(obj, old) {
			return nil
		}
		return a.checkBinding(ctx, o.RoleRef, metav1.NamespaceNone, rbac.Resource("clusterrolebindings"), o.Name)
	}
	return nil
}

// checkBinding is the rest of kube's binding storages' check: the user may `bind` the role, or
// already holds all of its rules.
func (a *Authorizer) checkBinding(ctx context.Context, ref rbac.RoleRef, namespace string, resource schema.GroupResource, name string) error {
	if rbacregistry.BindingAuthorized(ctx, ref, namespace, a) {
		return nil
	}
	v1Ref := rbacv1.RoleRef{}
	if err := rbacv1helpers.Convert_rbac_RoleRef_To_v1_RoleRef(&ref, &v1Ref, nil); err != nil {
		return err
	}
	rules, err := a.resolver.GetRoleReferenceRules(ctx, v1Ref, namespace)
	if err != nil {
		return err
	}
	if err := rbacregistryvalidation.ConfirmNoEscalation(ctx, a.resolver, rules); err != nil {
		return apierrors.NewForbidden(resource, name, err)
	}
	return nil
}

// requestContext adds to ctx what kube's storage would find there and the caller left out: the
// namespace of a namespaced object, and a RequestInfo for the write.
func requestContext(ctx context.Context, obj, old runtime.Object) context.Context {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return ctx
	}
	var resource string
	switch obj.(type) {
	case *rbac.Role:
		resource = "roles"
	case *rbac.RoleBinding:
		resource = "rolebindings"
	case *rbac.ClusterRole:
		resource = "clusterroles"
	case *rbac.ClusterRoleBinding:
		resource = "clusterrolebindings"
	}
	namespaced := resource == "roles" || resource == "rolebindings"
	if _, ok := genericapirequest.NamespaceFrom(ctx); !ok {
		switch {
		case !namespaced:
			ctx = genericapirequest.WithNamespace(ctx, metav1.NamespaceNone)
		case accessor.GetNamespace() != "":
			ctx = genericapirequest.WithNamespace(ctx, accessor.GetNamespace())
		}
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	switch {
	case !ok:
		// A create is a POST to the collection: kube's RequestInfo names nothing.
		ns, _ := genericapirequest.NamespaceFrom(ctx)
		verb, name := "create", ""
		if old != nil {
			verb, name = "update", accessor.GetName()
		}
		return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
			IsResourceRequest: true, Verb: verb, APIPrefix: "apis", APIGroup: rbac.GroupName, APIVersion: "v1",
			Namespace: ns, Resource: resource, Name: name,
		})
	case info.Name == "" && old != nil:
		// An update is addressed to its object.
		named := *info
		named.Name = accessor.GetName()
		return genericapirequest.WithRequestInfo(ctx, &named)
	}
	return ctx
}

// onlyGCFields is kube's exemption for updates by the garbage collector.
func onlyGCFields(obj, old runtime.Object) bool {
	return old != nil && rbacregistry.IsOnlyMutatingGCFields(obj, old, kapihelper.Semantic)
}

func hasAggregationRule(r *rbac.ClusterRole) bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// internal returns obj as kube's internal rbac type, nil for other kinds.
func internal(obj runtime.Object) (runtime.Object, error) {
	var (
		out runtime.Object
		err error
	)
	switch o := obj.(type) {
	case *rbac.Role, *rbac.ClusterRole, *rbac.RoleBinding, *rbac.ClusterRoleBinding:
		return o, nil
	case *rbacv1.Role:
		r := &rbac.Role{}
		err, out = rbacv1helpers.Convert_v1_Role_To_rbac_Role(o, r, nil), r
	case *rbacv1.ClusterRole:
		r := &rbac.ClusterRole{}
		err, out = rbacv1helpers.Convert_v1_ClusterRole_To_rbac_ClusterRole(o, r, nil), r
	case *rbacv1.RoleBinding:
		r := &rbac.RoleBinding{}
		err, out = rbacv1helpers.Convert_v1_RoleBinding_To_rbac_RoleBinding(o, r, nil), r
	case *rbacv1.ClusterRoleBinding:
		r := &rbac.ClusterRoleBinding{}
		err, out = rbacv1helpers.Convert_v1_ClusterRoleBinding_To_rbac_ClusterRoleBinding(o, r, nil), r
	default:
		return nil, nil
	}
	return out, err
}
