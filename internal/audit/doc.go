// Package audit owns lapis's audit logging, kube-apiserver's --audit-* log backend: it loads the
// audit.k8s.io/v1 Policy (kube's policy package), builds kube's log backend over a file (rotated
// as kube rotates it) or standard output, and wraps a handler chain in kube's audit filters
// (WithAuditInit, WithAudit, WithFailedAuthenticationAudit), so that events, stages, levels and
// the Audit-Id header are kube's own. What a resource handler adds (request and response
// objects) it adds through k8s.io/apiserver/pkg/audit directly.
package audit
