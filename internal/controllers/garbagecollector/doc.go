// Package garbagecollector is lapis's garbage collector, kube-controller-manager's generic garbage collector
// run in-process. It follows every resource in the catalogue (custom resources included, as
// their CRDs come and go), keeps an index from owner uid to the objects whose ownerReferences
// name it, and acts on it:
//
//   - an object whose owners are all gone (deleted, or never there) is deleted;
//     ownerReferences to gone owners are dropped from objects that still have another owner;
//   - an owner being deleted with the "orphan" finalizer has its ownerReferences removed from its
//     dependents, then loses the finalizer;
//   - an owner being deleted with the "foregroundDeletion" finalizer has its dependents deleted,
//     and loses the finalizer once no dependent with blockOwnerDeletion=true is left.
//
// The API server's half (which finalizers a DELETE sets for its propagationPolicy) lives in
// package objects. Before acting, the collector reads the objects involved from storage, so a
// lagging index only ever delays it.
package garbagecollector
