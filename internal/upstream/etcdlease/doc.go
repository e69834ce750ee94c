// Package etcdlease is the lease manager of kube-apiserver's etcd3 store, copied from
// k8s.io/apiserver v0.37.2 pkg/storage/etcd3/lease_manager.go, where it is unexported: the etcd
// leases objects with a TTL (Events, --event-ttl) are written with, one lease reused by the
// writes of a short window (5% of the TTL, at most a minute, at most 1000 objects) instead of a
// lease per write. internal/storage attaches values to them. lease_manager.go's header lists
// the local changes.
package etcdlease
