// Package apiserverid keeps this lapis's identity Lease, as kube-apiserver's APIServerIdentity
// does, and tells which lapis replicas sharing the etcd are alive.
//
// The Lease is kube's: named apiserver-<hash> in kube-system, labelled
// apiserver.kubernetes.io/identity=kube-apiserver and kubernetes.io/hostname, held by
// <name>_<uuid>, lasting 3600 s and renewed every 10 s by kube's own lease controller
// (k8s.io/component-helpers). Expired identity Leases are deleted by kube's apiserverleasegc
// controller, hourly as in kube. Two differences, both because several lapis may run on one
// host: the hash covers the replica's advertised address and port as well as the host name
// (kube's covers the host name alone), and the Lease always carries that address in kube's
// kubernetes.io/peer-advertise-address annotation (kube sets it only for its peer proxy).
//
// Live tells the addresses of the replicas whose Lease was renewed within the last 15 s: the
// time-to-live of the master leases kube-apiserver's lease endpoint reconciler keeps for the
// `kubernetes` Service's endpoints (pkg/controlplane/reconcilers/lease.go), which lapis keeps
// from these Leases instead of a key of its own in etcd. On a graceful stop a replica deletes
// its Lease (Remove), as the reconciler deletes its master lease, so that it stops counting at
// once.
package apiserverid
