package storage

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// KeyValue is one stored value and the revisions that created and last modified it.
type KeyValue struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
}

// Error kinds callers branch on; test with errors.Is.
var (
	ErrNotFound       = errors.New("not found")
	ErrExists         = errors.New("already exists")
	ErrConflict       = errors.New("modified since read")
	ErrCompacted      = errors.New("revision compacted")
	ErrFutureRevision = errors.New("revision is newer than the store's")
)

// Store reads and writes values under a key prefix of one etcd.
type Store struct {
	client *clientv3.Client
}

// NewStore returns a Store on client.
func NewStore(client *clientv3.Client) *Store { return &Store{client: client} }

func fromKV(kv *mvccpb.KeyValue) KeyValue {
	return KeyValue{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
}

// Create stores value at key if nothing is there, and returns the revision written.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, ErrExists
	}
	return resp.Header.Revision, nil
}

// Update replaces the value at key if it was last modified at expected, and returns the
// revision written. On ErrConflict the current value is returned so callers can retry.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, KeyValue, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, KeyValue{}, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, KeyValue{}, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, KeyValue{}, ErrNotFound
	}
	return 0, fromKV(kvs[0]), ErrConflict
}

// Delete removes key if it was last modified at expected (0: whatever its revision) and returns
// the deleted value and the revision of the deletion.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (KeyValue, int64, error) {
	cmp := clientv3.Compare(clientv3.ModRevision(key), "=", expected)
	if expected == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	resp, err := s.client.Txn(ctx).If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return KeyValue{}, 0, err
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return KeyValue{}, 0, ErrNotFound
		}
		return fromKV(kvs[0]), 0, ErrConflict
	}
	prev := resp.Responses[0].GetResponseDeleteRange().PrevKvs
	if len(prev) == 0 {
		return KeyValue{}, 0, ErrNotFound
	}
	return fromKV(prev[0]), resp.Header.Revision, nil
}

// Get reads key at revision (0: the latest).
func (s *Store) Get(ctx context.Context, key string, revision int64) (KeyValue, int64, error) {
	opts := []clientv3.OpOption{}
	if revision > 0 {
		opts = append(opts, clientv3.WithRev(revision))
	}
	resp, err := s.client.Get(ctx, key, opts...)
	if err != nil {
		return KeyValue{}, 0, translate(err)
	}
	if len(resp.Kvs) == 0 {
		return KeyValue{}, resp.Header.Revision, ErrNotFound
	}
	return fromKV(resp.Kvs[0]), resp.Header.Revision, nil
}

// ListOptions selects part of a prefix.
type ListOptions struct {
	// Revision reads the prefix as it was then (0: the latest).
	Revision int64
	// Limit caps the number of values (0: no cap).
	Limit int64
	// Start starts the list at this key (a continue token's start), After after this key.
	Start, After string
}

// ListResult is one page of a prefix.
type ListResult struct {
	Items []KeyValue
	// Revision is the revision the list was read at.
	Revision int64
	// Remaining counts the values after this page (0 when More is false).
	Remaining int64
	More      bool
}

// List reads the values under prefix in key order.
func (s *Store) List(ctx context.Context, prefix string, o ListOptions) (ListResult, error) {
	start := prefix
	if o.Start != "" {
		start = o.Start
	}
	if o.After != "" {
		start = o.After + "\x00"
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if o.Revision > 0 {
		opts = append(opts, clientv3.WithRev(o.Revision))
	}
	if o.Limit > 0 {
		opts = append(opts, clientv3.WithLimit(o.Limit))
	}
	resp, err := s.client.Get(ctx, start, opts...)
	if err != nil {
		return ListResult{}, translate(err)
	}
	out := ListResult{Items: make([]KeyValue, len(resp.Kvs)), Revision: resp.Header.Revision, More: resp.More}
	if o.Revision > 0 {
		out.Revision = o.Revision
	}
	for i, kv := range resp.Kvs {
		out.Items[i] = fromKV(kv)
	}
	if resp.More {
		out.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return out, nil
}

// Revision returns the store's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, "/lapis-revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// Event is one change under a watched prefix.
type Event struct {
	Type     EventType
	KV       KeyValue
	Previous KeyValue // the value before the change (for deletes, the deleted value)
}

// EventType says what a change did.
type EventType int

// The kinds of change.
const (
	Put EventType = iota
	Deleted
)

// WatchBatch is what one etcd watch response says: events, or (with no events) that the store
// has reached Revision with nothing new under the prefix (a progress notification).
type WatchBatch struct {
	Events   []Event
	Revision int64
}

// Watch streams changes under prefix strictly after revision. The channel closes when ctx ends
// or the watch fails; a compacted revision is reported as ErrCompacted on errc. Progress
// notifications (see RequestProgress) arrive as batches without events.
func (s *Store) Watch(ctx context.Context, prefix string, afterRevision int64) (<-chan WatchBatch, <-chan error) {
	out := make(chan WatchBatch, 16)
	errc := make(chan error, 1)
	wch := s.client.Watch(ctx, prefix, clientv3.WithPrefix(),
		clientv3.WithRev(afterRevision+1), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	go func() {
		defer close(out)
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if resp.CompactRevision > 0 {
					err = fmt.Errorf("%w: history before revision %d is gone", ErrCompacted, resp.CompactRevision)
				}
				errc <- err
				return
			}
			batch := WatchBatch{Events: make([]Event, 0, len(resp.Events)), Revision: resp.Header.Revision}
			for _, ev := range resp.Events {
				e := Event{KV: fromKV(ev.Kv)}
				if ev.PrevKv != nil {
					e.Previous = fromKV(ev.PrevKv)
				}
				if ev.Type == clientv3.EventTypeDelete {
					e.Type = Deleted
				}
				batch.Events = append(batch.Events, e)
			}
			if len(batch.Events) > 0 {
				batch.Revision = batch.Events[len(batch.Events)-1].KV.ModRevision
			}
			select {
			case out <- batch:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() == nil {
			errc <- errors.New("etcd watch closed")
		}
	}()
	return out, errc
}

// RequestProgress asks etcd to tell the watches opened with ctx how far the store has come,
// even when nothing changed under their prefixes.
func (s *Store) RequestProgress(ctx context.Context) error {
	return s.client.RequestProgress(ctx)
}

// Compact discards history before revision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	_, err := s.client.Compact(ctx, revision, clientv3.WithCompactPhysical())
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return err
	}
	return nil
}

func translate(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", ErrFutureRevision, err)
	}
	return err
}
