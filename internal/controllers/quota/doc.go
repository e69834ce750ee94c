// Package quota keeps every ResourceQuota's status as kube-controller-manager's resourcequota
// controller does, by running that controller (k8s.io/kubernetes/pkg/controller/resourcequota)
// with kube's quota evaluators over lapis's loopback client: status.hard follows spec.hard,
// status.used is computed for every quota and recomputed whenever objects it counts are deleted
// or change what they count (replenishment), and in full every five minutes. kube's
// ResourceQuota admission refuses writes to a namespace whose quota has no status yet.
//
// The controller watches every namespaced resource through informers, as kube's does. To hold
// less than kube-controller-manager, only Pods, Services, PersistentVolumeClaims and
// ResourceClaims (whose usage depends on their content) are held whole, in the informers
// admission shares; every other resource is held as metadata without managedFields.
package quota
