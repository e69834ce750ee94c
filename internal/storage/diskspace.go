package storage

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal"
)

// etcd treats a failed WAL or database write as fatal: on a full disk it exits. So lapis refuses
// writes before etcd can meet a full disk. What etcd still needs once writes stop:
//   - its next WAL segment: each is preallocated whole (wal.SegmentSizeBytes, 64 MB) as soon as
//     the previous one is cut, and if that preallocation fails etcd exits at the next cut, even
//     when space has come back since;
//   - room for its database to grow (bbolt writes every commit to new pages of a sparse file,
//     and writes accepted since the last look at the disk), snapshots and their WAL records.
const spaceMargin = 32 << 20

// writeReserve is the free space below which writes are refused.
func writeReserve() uint64 { return uint64(wal.SegmentSizeBytes) + spaceMargin }

// spaceCheckInterval is how long a look at the free space is trusted: statfs is cheap, but
// writes come by the thousand.
const spaceCheckInterval = 100 * time.Millisecond

// spaceGuard refuses writes while the filesystem holding etcd's data has less than reserve
// bytes free, and logs once when it starts and stops refusing.
type spaceGuard struct {
	dir     string
	reserve uint64
	free    func(dir string) (uint64, error)
	now     func() time.Time
	log     *slog.Logger
	// walBlocked: etcd started with no room for its next WAL segment and will exit when it
	// needs one, whatever the free space by then; only a restart with room mends that.
	walBlocked bool

	mu      sync.Mutex
	checked time.Time
	err     error
	low     bool
}

func newSpaceGuard(dir string, log *slog.Logger, walBlocked bool) *spaceGuard {
	return &spaceGuard{dir: dir, reserve: writeReserve(), free: freeSpace, now: time.Now, log: log, walBlocked: walBlocked}
}

// check returns nil when a write may go ahead, an ErrNoSpace otherwise.
func (g *spaceGuard) check() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if !g.checked.IsZero() && now.Sub(g.checked) < spaceCheckInterval {
		return g.err
	}
	g.checked = now
	if g.walBlocked {
		if g.err == nil {
			g.err = fmt.Errorf("%w: lapis started with too little free disk space for etcd to write safely; writes are refused until lapis is restarted with at least %d MiB free", ErrNoSpace, g.reserve>>20)
			g.log.Error("disk nearly full at start: etcd has no room for its next WAL segment; refusing writes until lapis is restarted with more free space",
				"dir", g.dir, "neededMiB", g.reserve>>20)
		}
		return g.err
	}
	free, err := g.free(g.dir)
	if err != nil {
		// Not knowing is no reason to refuse: etcd reports its own failures.
		g.err = nil
		return nil
	}
	low := free < g.reserve
	switch {
	case low && !g.low:
		g.log.Error("disk nearly full: refusing writes until space is freed (etcd exits if it runs out of disk)",
			"dir", g.dir, "freeMiB", free>>20, "neededMiB", g.reserve>>20)
	case !low && g.low:
		g.log.Info("disk space available again: accepting writes", "dir", g.dir, "freeMiB", free>>20)
	}
	g.low, g.err = low, nil
	if low {
		g.err = fmt.Errorf("%w: the disk holding lapis's data has %d MiB free, less than the %d MiB etcd needs to write safely; writes are refused until space is freed",
			ErrNoSpace, free>>20, g.reserve>>20)
	}
	return g.err
}

// Store returns a Store on the backend that, for an embedded etcd, refuses writes while the
// disk holding its data is nearly full (see spaceGuard), logging to log.
func (b *Backend) Store(log *slog.Logger) *Store {
	s := NewStore(b.Client)
	if b.embedded != nil {
		s.space = newSpaceGuard(b.embedded.Config().Dir, log, b.walBlocked)
		_ = s.space.check() // say now, not at the first write, that the disk is full
	}
	return s
}
