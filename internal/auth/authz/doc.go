// Package authz owns authorization as kube-apiserver does it, with kube's own code:
//
//   - New builds kube-apiserver's authorizer union for an --authorization-mode list (RBAC by
//     default; AlwaysAllow and AlwaysDeny too): system:masters is allowed everything first, then
//     each mode decides in turn. RBAC is kube's authorizer
//     (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac) over the Roles, ClusterRoles and
//     bindings of a shared informer factory; the union of the modes' rule resolvers answers
//     SelfSubjectRulesReview.
//   - EnsureBootstrapPolicy is kube-apiserver's rbac/bootstrap-roles post-start hook: kube's
//     bootstrap policy (cluster-admin, admin, edit, view, the system:* and system:controller:*
//     roles and their bindings) created or reconciled with kube's reconciliation package. On a
//     first start (no RBAC object stored) its creates may go through a Creator, lapis's own
//     create path, instead of one loopback request each.
//   - CheckRBACWrite is the escalation check of kube's RBAC storage: a Role, ClusterRole or
//     binding write may grant only what its author holds, unless they may `escalate` roles or
//     `bind` the referenced role.
//
// It does not serve requests nor compute request attributes: the request path asks the
// Authorizer, and the RBAC write path calls CheckRBACWrite.
package authz
