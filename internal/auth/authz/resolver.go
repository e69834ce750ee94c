package authz

import (
	"cmp"
	"context"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
)

// The escalation checks' rule resolver reads RBAC as kube's RBAC storage answers it (kube's
// role.AuthorizerAdapter and friends over the REST storage), from the informers: a missing
// role is NotFound in the words of the storage, which names the resource of the request being
// served (kube's qualifiedResourceFromContext: binding a missing ClusterRole in a RoleBinding
// answers `rolebindings.rbac.authorization.k8s.io "x" not found`), and bindings are listed in
// storage order (by namespace and name), so resolution errors read as kube's.

func notFound(ctx context.Context, err error, resource, name string) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		gr = schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	}
	return apierrors.NewNotFound(gr, name)
}

type storageRoles struct{ lister rbaclisters.RoleLister }

func (s storageRoles) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	r, err := s.lister.Roles(namespace).Get(name)
	if err != nil {
		return nil, notFound(ctx, err, "roles", name)
	}
	return r, nil
}

type storageClusterRoles struct{ lister rbaclisters.ClusterRoleLister }

func (s storageClusterRoles) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	r, err := s.lister.Get(name)
	if err != nil {
		return nil, notFound(ctx, err, "clusterroles", name)
	}
	return r, nil
}

type storageRoleBindings struct{ lister rbaclisters.RoleBindingLister }

func (s storageRoleBindings) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	list, err := s.lister.RoleBindings(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b *rbacv1.RoleBinding) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return list, nil
}

type storageClusterRoleBindings struct {
	lister rbaclisters.ClusterRoleBindingLister
}

func (s storageClusterRoleBindings) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	list, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b *rbacv1.ClusterRoleBinding) int { return cmp.Compare(a.Name, b.Name) })
	return list, nil
}
