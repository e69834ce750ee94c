// Package namespacequeue is the work queue of a controller that keeps something in every
// namespace (the root CA publisher's ConfigMap, the default ServiceAccount), as
// kube-controller-manager's controllers run theirs: namespace names are queued as the objects
// the controller follows change, synced one at a time, and a failed sync is retried after
// client-go's default controller rate limiter's delay.
package namespacequeue
