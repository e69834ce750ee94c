package storage

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CompactionPolicy says how much history etcd keeps: a period ends after Interval, or once
// this Store has written HistoryBytes/2 bytes of values since it began, whichever comes
// first; each period's end compacts away what came before the previous period's start. History
// then spans one to two periods: at least Interval's worth when writes are light, and about
// HistoryBytes at most when they are heavy (etcd keeps every version of a value until
// compaction, on disk and in its memory-mapped database).
type CompactionPolicy struct {
	Interval     time.Duration // <= 0: no compaction
	HistoryBytes int64         // <= 0: no byte bound
}

// compactorPoll is how often the compactor looks at the bytes written.
const compactorPoll = 250 * time.Millisecond

// RunCompactor compacts etcd as policy says until ctx ends. Each period's end takes a turn
// through kube-apiserver's compact_rev_key (see claimCompaction), so that lapis replicas and
// kube-apiserver sharing the etcd compact once per period between them. compacted, if not nil,
// learns each revision this Store compacted away.
func (s *Store) RunCompactor(ctx context.Context, policy CompactionPolicy, log *slog.Logger, compacted func(revision int64)) {
	if policy.Interval <= 0 {
		return
	}
	poll := time.NewTicker(min(compactorPoll, policy.Interval))
	defer poll.Stop()
	var version, previous int64 // compact_rev_key's version as last seen; the period's start
	periodStart, writtenAtStart := time.Now(), s.written.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		byBytes := policy.HistoryBytes > 0 && s.written.Load()-writtenAtStart >= policy.HistoryBytes/2
		if time.Since(periodStart) < policy.Interval && !byBytes {
			continue
		}
		v, rev, won, err := s.claimCompaction(ctx, version, previous)
		if err != nil {
			continue
		}
		if won && previous > 0 {
			if err := s.Compact(ctx, previous); err != nil && ctx.Err() == nil {
				log.Warn("etcd compaction failed", "revision", previous, "err", err)
			} else if compacted != nil {
				compacted(previous)
			}
		}
		version, previous = v, rev
		periodStart, writtenAtStart = time.Now(), s.written.Load()
	}
}

// compactRevKey is kube-apiserver's compaction turn: its value the last revision compacted,
// its version a logical clock (k8s.io/apiserver/pkg/storage/etcd3/compact.go, v0.37.2).
const compactRevKey = "compact_rev_key"

// claimCompaction is kube's Compact step without the compaction: if compact_rev_key's version
// is still expectVersion, nobody took this period's turn, and this Store takes it by writing
// rev there (won). Either way it returns the key's version now and the revision the next
// period starts at.
func (s *Store) claimCompaction(ctx context.Context, expectVersion, rev int64) (version, next int64, won bool, err error) {
	if err := s.writable(); err != nil {
		return 0, 0, false, err
	}
	ctx, cancel := bounded(ctx, callTimeout)
	defer cancel()
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", expectVersion)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return 0, 0, false, s.failure(err)
	}
	if resp.Succeeded {
		return expectVersion + 1, resp.Header.Revision, true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, resp.Header.Revision, false, nil
	}
	return kvs[0].Version, resp.Header.Revision, false, nil
}
