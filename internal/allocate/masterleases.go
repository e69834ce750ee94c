package allocate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
)

// masterLeaseTTL is how long an API server stays among the kubernetes Service's endpoints
// after its last renewal (kube's DefaultEndpointReconcilerTTL).
const masterLeaseTTL = 15 * time.Second

// masterLeases are kube-apiserver's lease endpoint reconciler's record of the live API servers
// (pkg/controlplane/reconcilers/lease.go, v1.37.2): under <etcd prefix>/masterleases/<ip>, a v1
// Endpoints whose first address is the server's IP, kept alive by an etcd lease of
// masterLeaseTTL that every reconcile renews. lapis keeps its own there too, so that a
// kube-apiserver on the same etcd lists lapis, and lapis lists it.
type masterLeases struct {
	store  *storage.Store
	prefix string // <etcd prefix>/masterleases/
}

// leaseValue is the Endpoints kube's UpdateLease writes: no name, the IP, a generation bumped
// on every renewal.
func leaseValue(ip string, generation int64) ([]byte, error) {
	return codec.Encode(map[string]any{
		"apiVersion": "v1", "kind": "Endpoints",
		"metadata": map[string]any{"generation": generation},
		"subsets":  []any{map[string]any{"addresses": []any{map[string]any{"ip": ip}}}},
	})
}

// renew writes ip's lease with a fresh TTL, as kube's UpdateLease (a guaranteed update).
func (m masterLeases) renew(ctx context.Context, ip string) error {
	key := m.prefix + ip
	ttl := storage.WithTTL(int64(masterLeaseTTL / time.Second))
	for {
		kv, _, err := m.store.Get(ctx, key, 0)
		if errors.Is(err, storage.ErrNotFound) {
			value, _ := leaseValue(ip, 1)
			if _, err = m.store.Create(ctx, key, value, ttl); !errors.Is(err, storage.ErrExists) {
				return err
			}
			continue
		}
		var generation int64
		if err == nil {
			var old struct {
				Metadata struct{ Generation int64 } `json:"metadata"`
			}
			_ = json.Unmarshal(kv.Value, &old)
			generation = old.Metadata.Generation
		} else if !errors.Is(err, storage.ErrCorrupt) {
			return err
		}
		value, _ := leaseValue(ip, generation+1)
		if _, _, err = m.store.Update(ctx, key, value, kv.ModRevision, ttl); !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
}

// ips lists the IPs of the live leases, as kube's ListLeases (the first address of each).
func (m masterLeases) ips(ctx context.Context) ([]string, error) {
	list, err := m.store.List(ctx, m.prefix, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, kv := range list.Items {
		var e struct {
			Subsets []struct {
				Addresses []struct{ IP string } `json:"addresses"`
			} `json:"subsets"`
		}
		if kv.Corrupt == nil && json.Unmarshal(kv.Value, &e) == nil && len(e.Subsets) > 0 &&
			len(e.Subsets[0].Addresses) > 0 && e.Subsets[0].Addresses[0].IP != "" {
			ips = append(ips, e.Subsets[0].Addresses[0].IP)
		}
	}
	return ips, nil
}

// remove deletes ip's lease, as kube's RemoveLease on a graceful stop.
func (m masterLeases) remove(ctx context.Context, ip string) error {
	_, _, err := m.store.Delete(ctx, m.prefix+ip, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
