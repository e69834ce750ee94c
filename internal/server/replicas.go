package server

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/lapis-dev/lapis/internal/allocate"
	"github.com/lapis-dev/lapis/internal/apiserverid"
)

// membership is this replica's place among the API servers sharing the storage: its identity
// Lease (kube's APIServerIdentity) and its endpoint in the kubernetes Service.
type membership struct {
	id      *apiserverid.Identity
	service *allocate.KubernetesService
	cancel  context.CancelFunc
	done    chan struct{}
}

// startIdentity keeps this replica's identity Lease and makes the kubernetes Service's
// endpoints list every replica whose Lease is live, as kube-apiserver's lease endpoint
// reconciler lists every API server. Call it before the Service's Run.
func startIdentity(ctx context.Context, client kubernetes.Interface, k *allocate.KubernetesService) *membership {
	ctx, cancel := context.WithCancel(ctx)
	m := &membership{id: apiserverid.New(client, k.Address()), service: k, cancel: cancel, done: make(chan struct{})}
	k.UsePeers(func(ctx context.Context) ([]string, error) { return apiserverid.Live(ctx, client) })
	k.UseMasterLeases() // and kube-apiservers on the same etcd
	go func() {
		defer close(m.done)
		m.id.Run(ctx)
	}()
	return m
}

// leaveTimeout bounds how long a stopping lapis spends taking itself out of the endpoints.
const leaveTimeout = time.Second

// leave takes this replica out at once on a graceful stop, as kube-apiserver's lease
// reconciler does: its identity Lease is deleted and the endpoints rewritten without it, while
// it still serves. A replica that dies goes when its Lease is no longer renewed.
func (m *membership) leave(log *slog.Logger) {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	m.cancel()
	select {
	case <-m.done:
	case <-ctx.Done():
	}
	if err := m.id.Remove(ctx); err != nil {
		log.Warn("deleting the identity Lease", "err", err)
	}
	if err := m.service.Leave(ctx); err != nil {
		log.Warn("taking this lapis out of the kubernetes Service's endpoints", "err", err)
	}
}
