// Package serviceaccount keeps a ServiceAccount named "default" in every active namespace, as
// kube-controller-manager's serviceaccount controller does: it is created when the namespace
// appears and again whenever it is deleted, never in a Terminating namespace, and an existing
// one is left as it is.
package serviceaccount
