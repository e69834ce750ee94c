package storage

import (
	"context"
	"log/slog"
	"time"
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

// RunCompactor compacts etcd as policy says until ctx ends, as kube-apiserver does on its
// interval. Several lapis processes sharing one etcd may all run it; compacting an already
// compacted revision is a no-op. compacted, if not nil, learns each revision compacted away.
func (s *Store) RunCompactor(ctx context.Context, policy CompactionPolicy, log *slog.Logger, compacted func(revision int64)) {
	if policy.Interval <= 0 {
		return
	}
	poll := time.NewTicker(min(compactorPoll, policy.Interval))
	defer poll.Stop()
	var previous int64 // the revision the current period began at
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
		if previous > 0 {
			if err := s.Compact(ctx, previous); err != nil && ctx.Err() == nil {
				log.Warn("etcd compaction failed", "revision", previous, "err", err)
			} else if compacted != nil {
				compacted(previous)
			}
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			continue
		}
		previous = rev
		periodStart, writtenAtStart = time.Now(), s.written.Load()
	}
}
