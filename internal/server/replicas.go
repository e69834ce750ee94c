package server

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/lapis-dev/lapis/internal/allocate"
	"github.com/lapis-dev/lapis/internal/apiserverid"
)

// startIdentity keeps this replica's identity Lease (kube's APIServerIdentity) and makes the
// kubernetes Service's endpoints list every replica whose Lease is live, as kube-apiserver's
// lease endpoint reconciler lists every API server. Call it before the Service's Run.
func startIdentity(ctx context.Context, client kubernetes.Interface, k *allocate.KubernetesService) *apiserverid.Identity {
	id := apiserverid.New(client, k.Address())
	k.UsePeers(func(ctx context.Context) ([]string, error) { return apiserverid.Live(ctx, client) })
	go id.Run(ctx)
	return id
}
