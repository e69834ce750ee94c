// Package clusterroleaggregation fills aggregated ClusterRoles as kube-controller-manager's
// clusterrole-aggregation controller does, by running that controller
// (k8s.io/kubernetes/pkg/controller/clusterroleaggregation) over lapis's loopback client: a
// ClusterRole with an aggregationRule gets, by server-side apply as the field manager
// "clusterrole-aggregation-controller", the rules of every ClusterRole its selectors match
// (admin, edit and view of the bootstrap policy gather the system:aggregate-to-* roles and any
// role labelled to join them), and follows them as they change.
package clusterroleaggregation
