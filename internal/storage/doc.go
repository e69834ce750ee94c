// Package storage keeps objects in etcd: an embedded, in-process etcd by default, or an
// external cluster. It knows keys, revisions and bytes, not Kubernetes objects: callers read and
// write the object's JSON without its resourceVersion (the etcd revision that last wrote it);
// a Store's Values (storage/kubeencoding) turn what etcd holds, kube-apiserver's encodings
// included, into that form as it is read, and flag what they cannot read as corrupt.
// Creates and updates are etcd transactions (create-if-absent, compare-mod-revision), so several
// lapis processes can share one etcd. A value may be written with a TTL (kube's Events): it is
// attached to an etcd lease, shared as kube's etcd3 store shares them (internal/upstream/etcdlease),
// and etcd deletes it when the lease ends. A Backend tells an observer of every etcd request, and
// the size of etcd's database, for /metrics. The embedded etcd is started only where it has room
// to, and on a nearly full disk with a single outcome (startroom.go); writes are refused before
// it can run out of disk (diskspace.go).
package storage
