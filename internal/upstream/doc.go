// Package upstream holds, in its subpackages, the code lapis copies from Kubernetes, and nothing
// else. lapis runs kube's own code as a library wherever it can; it copies only what kube keeps
// unexported or ties to its generic server (its registry stores, its storage factory), and then
// copies it here rather than writing it again.
//
// The rule for a copy:
//   - each file keeps kube's license header and names its origin: the path in
//     k8s.io/kubernetes v1.37.2 or k8s.io/apiserver v0.37.2 (the versions lapis builds with);
//   - its header lists every local change (beyond the package name), and the copied code is
//     otherwise left as kube wrote it, so that it can be compared with the next version;
//   - lapis's own code that uses a copy (conversions, storage, wiring) stays in lapis's packages.
//
// The copies:
//   - aggregator: kube-aggregator's proxy handler, discovery manager, APIService registration
//     controller and Service resolvers, from k8s.io/kube-aggregator v0.37.2 pkg/apiserver, and
//     the local APIServices' priorities and readiness check, from k8s.io/kubernetes
//     pkg/controlplane/apiserver and cmd/kube-apiserver/app (aggregator.go); used by
//     internal/aggregator and internal/discovery.
//   - etcdlease: the etcd leases objects with a TTL (Events) are written with, shared by the
//     writes of a short window, from k8s.io/apiserver pkg/storage/etcd3 (lease_manager.go);
//     used by internal/storage.
//   - requestheader: kube-apiserver's --requestheader-* options and their validation, from
//     k8s.io/apiserver pkg/server/options (authentication.go) and k8s.io/kubernetes
//     pkg/kubeapiserver/options (authentication.go); used by internal/server.
//   - servicealloc: a Service's cluster IP and node port allocation around its writes, from
//     k8s.io/kubernetes pkg/registry/core/service/storage (alloc.go, storage.go,
//     transaction.go); used by internal/allocate.
//   - storageprefix: the etcd prefix kube-apiserver stores a built-in resource under, from
//     k8s.io/kubernetes pkg/kubeapiserver (SpecialDefaultResourcePrefixes) and k8s.io/apiserver
//     pkg/server/storage (DefaultStorageFactory.ResourcePrefix); used by internal/objects.
package upstream
