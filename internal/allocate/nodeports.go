package allocate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/lapis-dev/lapis/internal/storage"
)

// nodePortsKey is where kube-apiserver keeps its node port bitmap, below its etcd prefix.
const nodePortsKey = "ranges/servicenodeports"

// storeTimeout bounds one read-modify-write of the bitmap (kube's allocator interface has no
// context to carry a request's deadline).
const storeTimeout = 10 * time.Second

// rangeStore is allocator.Interface over a bitmap kept in etcd as a v1 RangeAllocation, as
// kube's allocator/storage.Etcd: every change restores the stored bitmap, applies the change and
// writes it back if nothing else wrote it since (retrying if something did).
type rangeStore struct {
	ctx   context.Context
	store *storage.Store
	key   string
	mu    sync.Mutex
	mem   *allocator.AllocationBitmap
}

var _ allocator.Interface = (*rangeStore)(nil)

func newRangeStore(ctx context.Context, store *storage.Store, key string, max int, rangeSpec string, offset int) *rangeStore {
	return &rangeStore{ctx: ctx, store: store, key: key, mem: allocator.NewAllocationMapWithOffset(max, rangeSpec, offset)}
}

// errUnchanged ends an update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// update applies fn to the stored bitmap and stores the result; fn returning errUnchanged
// writes nothing.
func (s *rangeStore) update(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, storeTimeout)
	defer cancel()
	for {
		kv, _, err := s.store.Get(ctx, s.key, 0)
		exists := err == nil
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if err := s.restore(kv, exists); err != nil {
			return err
		}
		if err := fn(); err != nil {
			if errors.Is(err, errUnchanged) {
				return nil
			}
			return err
		}
		spec, data := s.mem.Snapshot()
		value, err := json.Marshal(&corev1.RangeAllocation{TypeMeta: rangeAllocationType, Range: spec, Data: data})
		if err != nil {
			return err
		}
		if exists {
			_, _, err = s.store.Update(ctx, s.key, value, kv.ModRevision)
		} else {
			_, err = s.store.Create(ctx, s.key, value)
		}
		if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotFound) {
			continue // written meanwhile: start again from what is stored
		}
		return err
	}
}

var rangeAllocationType = metaType("v1", "RangeAllocation")

// restore loads the stored bitmap into memory (an empty one when nothing is stored).
func (s *rangeStore) restore(kv storage.KeyValue, exists bool) error {
	spec, _ := s.mem.Snapshot()
	if !exists {
		return s.mem.Restore(spec, nil)
	}
	var ra corev1.RangeAllocation
	if err := json.Unmarshal(kv.Value, &ra); err != nil {
		return fmt.Errorf("%s: %w", s.key, err)
	}
	if ra.Range != spec {
		// Another range was configured before: what Services hold is put back by repair.
		return s.mem.Restore(spec, nil)
	}
	return s.mem.Restore(spec, ra.Data)
}

// read refreshes the bitmap from storage without writing.
func (s *rangeStore) read(fn func()) {
	_ = s.update(func() error { fn(); return errUnchanged })
}

func (s *rangeStore) Allocate(offset int) (bool, error) {
	var ok bool
	err := s.update(func() error {
		var err error
		if ok, err = s.mem.Allocate(offset); err != nil {
			return err
		}
		if !ok {
			return errUnchanged
		}
		return nil
	})
	return ok && err == nil, err
}

func (s *rangeStore) AllocateNext() (int, bool, error) {
	var offset int
	var ok bool
	err := s.update(func() error {
		var err error
		if offset, ok, err = s.mem.AllocateNext(); err != nil {
			return err
		}
		if !ok {
			return errUnchanged
		}
		return nil
	})
	return offset, ok && err == nil, err
}

func (s *rangeStore) Release(offset int) error {
	return s.update(func() error {
		if !s.mem.Has(offset) {
			return errUnchanged
		}
		return s.mem.Release(offset)
	})
}

func (s *rangeStore) ForEach(fn func(int)) { s.read(func() { s.mem.ForEach(fn) }) }

func (s *rangeStore) Has(offset int) bool {
	var has bool
	s.read(func() { has = s.mem.Has(offset) })
	return has
}

func (s *rangeStore) Free() int {
	var free int
	s.read(func() { free = s.mem.Free() })
	return free
}

func (s *rangeStore) Destroy() {}
