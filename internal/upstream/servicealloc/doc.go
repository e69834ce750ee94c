// Package servicealloc is kube-apiserver's allocation of a Service's cluster IPs and node ports
// around its create, update and delete, copied from k8s.io/kubernetes v1.37.2
// pkg/registry/core/service/storage: there the Allocators' methods are unexported and the REST
// storage that runs them (BeginCreate, BeginUpdate, AfterDelete) is a generic registry store.
//
// NewREST takes kube's allocators (ipallocator.Interface per family, a portallocator); what
// builds them from lapis's storage, and converts lapis's objects to kube's internal Service, is
// in internal/allocate. Each file's header names its origin and lists its local changes.
package servicealloc
