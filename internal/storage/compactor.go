package storage

import (
	"context"
	"log/slog"
	"time"
)

// RunCompactor keeps interval's worth of history: every interval it compacts away what came
// before the revision it saw one interval earlier, as kube-apiserver does. Several lapis
// processes sharing one etcd may all run it; compacting an already compacted revision is a no-op.
// compacted, if not nil, learns each revision compacted away.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration, log *slog.Logger, compacted func(revision int64)) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var previous int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
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
	}
}
