// Package leader runs singleton work — the controllers kube-controller-manager would run, and
// etcd compaction — on one lapis replica at a time, as kube-controller-manager does: the replica
// holding a coordination.k8s.io/v1 Lease in kube-system (client-go's leader election over a
// LeaseLock) runs the work; the others wait. kube's timings apply: a lease lasts 15 s, the
// holder renews it every 2 s and gives up when it could not for 10 s, cancelling the work's
// context, so the work has stopped well before another replica may take over (15 s after the
// last renewal). A replica that stops gracefully stops its work, then releases the lease, which
// another takes within one retry period (2 s).
//
// A replica that loses the lease (etcd unreachable for 10 s, say) does not exit as
// kube-controller-manager would: once its work has returned it campaigns again, and the work
// starts afresh with a new context if it wins.
package leader
