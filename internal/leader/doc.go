// Package leader runs singleton work — the controllers kube-controller-manager would run, and
// etcd compaction — on one lapis replica at a time, as kube-controller-manager does: the replica
// holding a coordination.k8s.io/v1 Lease in kube-system (client-go's leader election over a
// LeaseLock) runs the work; the others wait. The timings are shorter than kube's so that a
// replica that dies is replaced within 15 s: a lease lasts 8 s, the holder renews it every 1 s
// and gives up when it could not for 5 s, cancelling the work's context, so the work has stopped
// 2 s before another replica may take over (8 s after it saw the last renewal); the others look
// every 1–2.2 s, so a killed holder is replaced 7–12.4 s after it dies. A replica that stops
// gracefully stops its work, then releases the lease, which another takes at its next look
// (within 2.2 s).
//
// A replica that loses the lease (etcd unreachable for 5 s, say) does not exit as
// kube-controller-manager would: once its work has returned it campaigns again, and the work
// starts afresh with a new context if it wins.
//
// A replica that can have no peers (its etcd embedded and not exposed: Config.Sole) runs the
// work at once and holds no Lease.
package leader
