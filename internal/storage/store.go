package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/lapis-dev/lapis/internal/upstream/etcdlease"
)

// KeyValue is one stored value and the revisions that created and last modified it.
type KeyValue struct {
	Key string
	// Value is what the Store's Values read from etcd: lapis's stored form.
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	// Corrupt, when set, says why the value in etcd could not be read; Value then holds the
	// bytes as etcd keeps them.
	Corrupt *CorruptError
}

// Values converts between the values etcd holds and the ones a Store's callers read and write
// (kube-apiserver's encodings and lapis's stored form: see storage/kubeencoding).
type Values interface {
	// FromStorage returns what callers read for the value stored at key.
	FromStorage(key string, stored []byte) ([]byte, error)
	// ToStorage returns what is stored at key for a value a caller writes.
	ToStorage(key string, value []byte) ([]byte, error)
}

// CorruptError says a value in etcd could not be read: kube-apiserver's "corrupt object".
type CorruptError struct {
	Key      string
	Revision int64 // the revision that wrote the value
	Err      error
}

func (e *CorruptError) Error() string { return e.StorageError(e.Key) }

// StorageError is kube-apiserver's message for the error, naming the key as key (its GETs name
// it below the etcd prefix, its lists in full): k8s.io/apiserver/pkg/storage's StorageError
// around etcd3's corruptObjectError, v0.37.2.
func (e *CorruptError) StorageError(key string) string {
	return fmt.Sprintf("StorageError: corrupt object, Code: 7, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=%d: %v",
		key, e.Revision, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Error kinds callers branch on; test with errors.Is.
var (
	ErrNotFound       = errors.New("not found")
	ErrExists         = errors.New("already exists")
	ErrConflict       = errors.New("modified since read")
	ErrCompacted      = errors.New("revision compacted")
	ErrFutureRevision = errors.New("revision is newer than the store's")
	// ErrNoSpace: writes are refused for want of space (a nearly full disk, or etcd's quota).
	ErrNoSpace = errors.New("insufficient storage")
	// ErrUnavailable: etcd cannot be reached or cannot serve now.
	ErrUnavailable = errors.New("etcd is unavailable")
	// ErrTimeout: etcd did not answer in time.
	ErrTimeout = errors.New("etcd did not answer in time")
	// ErrTooLarge: the value is more than etcd accepts in one request.
	ErrTooLarge = errors.New("too large for storage")
	// ErrCorrupt: a stored value could not be read (a *CorruptError says which and why).
	ErrCorrupt = errors.New("corrupt object")
)

// Store reads and writes values under a key prefix of one etcd.
type Store struct {
	client *clientv3.Client
	leases *etcdlease.LeaseManager // the leases of values written with a TTL
	space  *spaceGuard             // nil: writes are not held back for disk space
	values Values                  // nil: values are stored as written
	// written counts the bytes of values this Store has put, which etcd keeps as history until
	// compaction: the compactor bounds history by it.
	written atomic.Int64
}

// Every call gets a deadline, so no request or controller waits forever on an unreachable etcd
// (the etcd client waits for a connection as long as its context allows). callTimeout is longer
// than etcd's own request timeout (5s plus two election timeouts), so it ends only calls etcd
// cannot answer at all; a list of a large prefix may take longer than a single key.
const (
	callTimeout = 10 * time.Second
	listTimeout = 60 * time.Second
)

// bounded returns ctx with a deadline at most d away.
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// writable returns an ErrNoSpace when the disk is too full to write.
func (s *Store) writable() error { return s.space.check() }

// NewStore returns a Store on client.
func NewStore(client *clientv3.Client) *Store {
	return &Store{client: client, leases: etcdlease.NewDefaultLeaseManager(client, etcdlease.NewDefaultLeaseManagerConfig())}
}

// WriteOption changes how Create and Update write a value.
type WriteOption func(*writeOptions)

type writeOptions struct {
	ttlSeconds int64
}

// WithTTL has etcd delete the value ttlSeconds after the write (0: never), as kube-apiserver
// stores what its registry gives a TTL (Events): the value is attached to an etcd lease, shared
// with the values written with the same TTL within a short window (etcdlease), and a later write
// without a TTL detaches it.
func WithTTL(ttlSeconds int64) WriteOption {
	return func(o *writeOptions) { o.ttlSeconds = ttlSeconds }
}

// putOptions are the etcd options of a put as opts say: the lease to attach the value to.
func (s *Store) putOptions(ctx context.Context, opts []WriteOption) ([]clientv3.OpOption, error) {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.ttlSeconds <= 0 {
		return nil, nil
	}
	lease, err := s.leases.GetLease(ctx, o.ttlSeconds)
	if err != nil {
		return nil, s.failure(err)
	}
	return []clientv3.OpOption{clientv3.WithLease(lease)}, nil
}

// UseValues makes the Store read and write values through v. Call it before any other method.
func (s *Store) UseValues(v Values) { s.values = v }

// fromKV is what callers read of kv: its value through s.values, or why that failed.
func (s *Store) fromKV(kv *mvccpb.KeyValue) KeyValue {
	out := KeyValue{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	if s.values == nil {
		return out
	}
	value, err := s.values.FromStorage(out.Key, kv.Value)
	if err != nil {
		out.Corrupt = &CorruptError{Key: out.Key, Revision: kv.ModRevision, Err: err}
		return out
	}
	out.Value = value
	return out
}

// toStorage is what etcd keeps at key for value.
func (s *Store) toStorage(key string, value []byte) (string, error) {
	if s.values == nil {
		return string(value), nil
	}
	stored, err := s.values.ToStorage(key, value)
	if err != nil {
		return "", fmt.Errorf("encoding the value of %s: %w", key, err)
	}
	return string(stored), nil
}

// Create stores value at key if nothing is there, and returns the revision written.
func (s *Store) Create(ctx context.Context, key string, value []byte, opts ...WriteOption) (int64, error) {
	if err := s.writable(); err != nil {
		// Creating what exists fails anyway, and says so (lapis creates its system namespaces
		// at every start, also on a full disk).
		if _, _, gerr := s.Get(ctx, key, 0); gerr == nil {
			return 0, ErrExists
		}
		return 0, err
	}
	stored, err := s.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	put, err := s.putOptions(ctx, opts)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, stored, put...)).
		Commit()
	if err != nil {
		return 0, s.failure(err)
	}
	if !resp.Succeeded {
		return 0, ErrExists
	}
	s.written.Add(int64(len(stored)))
	return resp.Header.Revision, nil
}

// Update replaces the value at key if it was last modified at expected, and returns the
// revision written. On ErrConflict the current value is returned so callers can retry.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64, opts ...WriteOption) (int64, KeyValue, error) {
	if err := s.writable(); err != nil {
		return 0, KeyValue{}, err
	}
	stored, err := s.toStorage(key, value)
	if err != nil {
		return 0, KeyValue{}, err
	}
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	put, err := s.putOptions(ctx, opts)
	if err != nil {
		return 0, KeyValue{}, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
		Then(clientv3.OpPut(key, stored, put...)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, KeyValue{}, s.failure(err)
	}
	if resp.Succeeded {
		s.written.Add(int64(len(stored)))
		return resp.Header.Revision, KeyValue{}, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, KeyValue{}, ErrNotFound
	}
	return 0, s.fromKV(kvs[0]), ErrConflict
}

// Delete removes key if it was last modified at expected (0: whatever its revision) and returns
// the deleted value and the revision of the deletion.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (KeyValue, int64, error) {
	// Deleting frees no disk at once (etcd keeps history until compaction) and is a write.
	if err := s.writable(); err != nil {
		return KeyValue{}, 0, err
	}
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	cmp := clientv3.Compare(clientv3.ModRevision(key), "=", expected)
	if expected == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	resp, err := s.client.Txn(ctx).If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return KeyValue{}, 0, s.failure(err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return KeyValue{}, 0, ErrNotFound
		}
		return s.fromKV(kvs[0]), 0, ErrConflict
	}
	prev := resp.Responses[0].GetResponseDeleteRange().PrevKvs
	if len(prev) == 0 {
		return KeyValue{}, 0, ErrNotFound
	}
	return s.fromKV(prev[0]), resp.Header.Revision, nil
}

// Move puts value at to and deletes from in one transaction, if nothing is at to and from was
// last modified at expected: a move cut short anywhere leaves the value at one key or the
// other. It fails with ErrExists when to holds a value, ErrConflict when from has changed.
func (s *Store) Move(ctx context.Context, from, to string, value []byte, expected int64) (int64, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	stored, err := s.toStorage(to, value)
	if err != nil {
		return 0, err
	}
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(to), "=", 0),
			clientv3.Compare(clientv3.ModRevision(from), "=", expected)).
		Then(clientv3.OpPut(to, stored), clientv3.OpDelete(from)).
		Else(clientv3.OpGet(to, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, s.failure(err)
	}
	if !resp.Succeeded {
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return 0, ErrExists
		}
		return 0, ErrConflict
	}
	s.written.Add(int64(len(stored)))
	return resp.Header.Revision, nil
}

// Get reads key at revision (0: the latest).
func (s *Store) Get(ctx context.Context, key string, revision int64) (KeyValue, int64, error) {
	opts := []clientv3.OpOption{}
	if revision > 0 {
		opts = append(opts, clientv3.WithRev(revision))
	}
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	resp, err := s.client.Get(ctx, key, opts...)
	if err != nil {
		return KeyValue{}, 0, s.failure(err)
	}
	if len(resp.Kvs) == 0 {
		return KeyValue{}, resp.Header.Revision, ErrNotFound
	}
	kv := s.fromKV(resp.Kvs[0])
	if kv.Corrupt != nil {
		return kv, resp.Header.Revision, kv.Corrupt
	}
	return kv, resp.Header.Revision, nil
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
	timeout := callTimeout
	if o.Limit <= 0 {
		timeout = listTimeout // a whole prefix may be large
	}
	ctx, cancel := bounded(ctx, timeout)
	defer cancel()
	resp, err := s.client.Get(ctx, start, opts...)
	if err != nil {
		return ListResult{}, s.failure(err)
	}
	out := ListResult{Items: make([]KeyValue, len(resp.Kvs)), Revision: resp.Header.Revision, More: resp.More}
	if o.Revision > 0 {
		out.Revision = o.Revision
	}
	for i, kv := range resp.Kvs {
		out.Items[i] = s.fromKV(kv)
	}
	if resp.More {
		out.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return out, nil
}

// Revision returns the store's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	resp, err := s.client.Get(ctx, revisionProbeKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, s.failure(err)
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
				e := Event{KV: s.fromKV(ev.Kv)}
				if ev.PrevKv != nil {
					e.Previous = s.fromKV(ev.PrevKv)
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
	// Compaction goes through etcd's WAL too; it can wait for space.
	if err := s.writable(); err != nil {
		return err
	}
	ctx, cancel := bounded(ctx, listTimeout)
	defer cancel()
	_, err := s.client.Compact(ctx, revision, clientv3.WithCompactPhysical())
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.failure(err)
	}
	return nil
}

// failure is translate, telling an etcd that cannot be reached (no connection: it is down or
// refuses connections) from one that does not answer: the etcd client waits for a connection
// until the deadline, which alone would make both a timeout.
func (s *Store) failure(err error) error {
	err = translate(err)
	if errors.Is(err, ErrTimeout) {
		// nil for the embedded etcd, reached in-process.
		if conn := s.client.ActiveConnection(); conn != nil && conn.GetState() != connectivity.Ready {
			return fmt.Errorf("%w: not connected", ErrUnavailable)
		}
	}
	return err
}

// translate turns etcd's errors into the kinds callers branch on, keeping etcd's message.
// isMessageTooLarge is gRPC refusing to send a request over its size limit (kube's
// isTooLargeError checks for the same).
func isMessageTooLarge(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "trying to send message larger than max")
}

func translate(err error) error {
	if _, isStatus := status.FromError(err); isStatus {
		err = rpctypes.Error(err) // etcd's errors as gRPC sends them, as the client reports them
	}
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", ErrFutureRevision, err)
	case errors.Is(err, rpctypes.ErrNoSpace):
		return fmt.Errorf("%w: %v", ErrNoSpace, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge), isMessageTooLarge(err):
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(err, rpctypes.ErrTimeoutWaitAppliedIndex):
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	case errors.Is(err, context.Canceled):
		return err
	}
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		if etcdErr.Code() == codes.Unavailable || errors.Is(err, rpctypes.ErrTooManyRequests) {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return err
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable:
			// Also "connection reset by peer" and "transport is closing": etcd went away.
			return fmt.Errorf("%w: %v", ErrUnavailable, st.Message())
		case codes.DeadlineExceeded:
			return fmt.Errorf("%w: %v", ErrTimeout, st.Message())
		}
	}
	return err
}
