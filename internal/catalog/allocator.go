package catalog

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Allocator reserves and frees what objects of a resource hold from a pool shared by all of them
// (a Service's cluster IPs and node ports), as kube's service REST storage does around its
// writes.
type Allocator interface {
	// Allocate reserves what obj needs given the stored old (nil on create), filling obj in (a
	// Service's spec.clusterIPs, its node ports). The pipeline calls it after field tracking and
	// before the strategy, where kube-apiserver's BeginCreate and BeginUpdate run, and finishes
	// the Allocation once it knows whether the write landed. Errors are API errors.
	Allocate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (Allocation, error)
	// Release frees what a deleted object held.
	Release(ctx context.Context, obj *unstructured.Unstructured)
}

// Allocation is a reservation of Allocate in progress.
type Allocation interface {
	// Finish keeps the reservation when the write landed and undoes it otherwise; after an
	// update that landed it frees what the old object held and the new one does not.
	Finish(ctx context.Context, landed bool)
}

// NoAllocation is the Allocation of a write that reserved nothing.
type NoAllocation struct{}

// Finish implements Allocation.
func (NoAllocation) Finish(context.Context, bool) {}
