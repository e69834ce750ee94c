// Package tokens fills legacy ServiceAccount token Secrets as kube-controller-manager's
// serviceaccount-token controller does, by running that controller
// (k8s.io/kubernetes/pkg/controller/serviceaccount's TokensController) over lapis's loopback
// client: a Secret of type kubernetes.io/service-account-token that names a ServiceAccount
// (annotation kubernetes.io/service-account.name) gets data token (a legacy JWT, issuer
// "kubernetes/serviceaccount"), ca.crt and namespace; it is deleted when its ServiceAccount is
// gone, and a ServiceAccount loses its reference to such a Secret when the Secret is deleted.
package tokens
