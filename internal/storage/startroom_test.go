package storage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const mib = 1 << 20

func TestOpenRoomPlan(t *testing.T) {
	seg := uint64(61 * mib) // ~wal.SegmentSizeBytes
	for _, c := range []struct {
		name    string
		room    openRoom
		full    bool // exits saying the disk is full
		plan    startPlan
		blocked bool // as measured after the plan (tail 0 once trimmed)
	}{
		{"plenty", openRoom{free: 200 * mib, next: seg}, false, startAsIs, false},
		{"room for the next segment and the margin", openRoom{free: seg + minFreeToStart, next: seg}, false, startAsIs, false},
		{"short of the next segment: trimmed, then blocked", openRoom{free: 30 * mib, next: seg}, false, startTrimmed, true},
		{"a whole 0.tmp left over: nothing to take", openRoom{free: 30 * mib}, false, startAsIs, false},
		{"the database's holes on tmpfs count", openRoom{free: seg + minFreeToStart, db: 16 * mib, next: seg}, false, startTrimmed, true},
		{"a sparse last segment takes room again", openRoom{free: seg + minFreeToStart, next: seg, tail: 10 * mib}, false, startTrimmed, false},
		{"full", openRoom{free: 1 * mib, next: seg}, true, 0, false},
		{"room only for the database's holes", openRoom{free: 18 * mib, db: 16 * mib, next: seg}, true, 0, false},
		{"new member with room for two segments", openRoom{free: 2*seg + minFreeToStart, next: seg, fresh: true}, false, startAsIs, false},
		{"new member with room for one segment only", openRoom{free: 2*seg + minFreeToStart - 1, next: seg, fresh: true}, true, 0, false},
		{"new member without room for its first segment", openRoom{free: 60 * mib, next: seg, fresh: true}, true, 0, false},
	} {
		p, err := c.room.plan()
		if c.full {
			if err == nil || !strings.Contains(err.Error(), "no space left on device") {
				t.Errorf("%s: plan() = %v, %v; want an error saying the disk is full", c.name, p, err)
			}
			continue
		}
		if err != nil || p != c.plan {
			t.Errorf("%s: plan() = %v, %v; want %v", c.name, p, err, c.plan)
		}
		after := c.room
		if p == startTrimmed {
			after.tail = 0
		}
		if got := after.blocked(); got != c.blocked {
			t.Errorf("%s: blocked() = %v, want %v", c.name, got, c.blocked)
		}
	}
}

// writeKeys puts n keys named prefix-i.
func writeKeys(t *testing.T, b *Backend, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, err := b.Client.Put(context.Background(), fmt.Sprintf("%s-%d", prefix, i), "v"); err != nil {
			t.Fatal(err)
		}
	}
}

// wantKeys fails unless every key of every prefix is there.
func wantKeys(t *testing.T, b *Backend, prefixes map[string]int) {
	t.Helper()
	for p, n := range prefixes {
		for i := range n {
			k := fmt.Sprintf("%s-%d", p, i)
			r, err := b.Client.Get(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Kvs) != 1 {
				t.Errorf("%s lost", k)
			}
		}
	}
}

func tailSize(t *testing.T, walDir string) int64 {
	t.Helper()
	path, err := lastSegment(walDir)
	if err != nil || path == "" {
		t.Fatalf("no WAL segment in %s: %v", walDir, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestTrimTail: the last segment cut where etcd cuts it keeps every record: etcd reopens it,
// appends to it and reopens it again with nothing lost; a torn tail is left to etcd.
func TestTrimTail(t *testing.T) {
	dir := t.TempDir()
	walDir := filepath.Join(dir, "etcd", "member", "wal")
	b, err := OpenEmbedded(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	writeKeys(t, b, "before", 300) // past two snapshots (every 128 entries)
	b.Close()
	if size := tailSize(t, walDir); size < 64_000_000 {
		t.Fatalf("last segment %d bytes after a clean stop, want it preallocated", size)
	}

	if err := trimTail(walDir); err != nil {
		t.Fatal(err)
	}
	trimmed := tailSize(t, walDir)
	if trimmed >= 64_000_000 || trimmed == 0 {
		t.Fatalf("last segment %d bytes after trimTail", trimmed)
	}
	if err := trimTail(walDir); err != nil || tailSize(t, walDir) != trimmed {
		t.Fatalf("trimTail again: %v, size %d, want %d unchanged", err, tailSize(t, walDir), trimmed)
	}

	b, err = OpenEmbedded(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	wantKeys(t, b, map[string]int{"before": 300})
	writeKeys(t, b, "after", 50)
	b.Close()
	b, err = OpenEmbedded(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	wantKeys(t, b, map[string]int{"before": 300, "after": 50})
	b.Close()

	// A torn record past the end: trimTail says so and changes nothing (etcd repairs it).
	if err := trimTail(walDir); err != nil {
		t.Fatal(err)
	}
	path, _ := lastSegment(walDir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := []byte{0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3} // a 64-byte record cut short
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()
	size := tailSize(t, walDir)
	if err := trimTail(walDir); err == nil {
		t.Errorf("trimTail of a torn segment: no error")
	}
	if got := tailSize(t, walDir); got != size {
		t.Errorf("trimTail of a torn segment changed its size %d → %d", size, got)
	}
}

// mountTmpfs mounts a tmpfs of size at a fresh directory, or skips the test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fillTo takes space on dir's filesystem in a new file until about leave bytes are free.
func fillTo(t *testing.T, dir string, leave uint64) string {
	t.Helper()
	free, err := freeSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "fill-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if free > leave {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(free-leave)); err != nil {
			t.Fatal(err)
		}
	}
	return f.Name()
}

// TestOpenNearlyFullTmpfs: an etcd stopped cleanly (its last segment preallocated) opens on a
// tmpfs with 30 MiB free every time, not only when its two preallocations happen in a lucky
// order; opened there again (nothing to free any more) it opens without a next segment,
// every time; on a full disk it is not opened. Nothing written is lost.
func TestOpenNearlyFullTmpfs(t *testing.T) {
	pristine := mountTmpfs(t, "200m")
	b, err := OpenEmbedded(context.Background(), pristine, "")
	if err != nil {
		t.Fatal(err)
	}
	writeKeys(t, b, "k", 20)
	b.Close()
	trials := mountTmpfs(t, "200m")
	dir := filepath.Join(trials, "data")
	for i := range 5 {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		// cp keeps the preallocated segment and the database's holes as they are.
		if out, err := exec.Command("cp", "-a", pristine, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		fill := fillTo(t, trials, 30*mib)
		b, err := OpenEmbedded(context.Background(), dir, "")
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		wantKeys(t, b, map[string]int{"k": 20})
		// The trimmed segment gave back room for the next one.
		if b.walBlocked {
			t.Errorf("trial %d: opened without a next segment", i)
		}
		b.Close()
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
	}

	for i := range 3 {
		fill := fillTo(t, trials, 30*mib)
		b, err := OpenEmbedded(context.Background(), dir, "")
		if err != nil {
			t.Fatalf("reopening %d: %v", i, err)
		}
		wantKeys(t, b, map[string]int{"k": 20})
		if !b.walBlocked {
			t.Errorf("reopening %d with 30 MiB free: etcd has a next segment", i)
		}
		b.Close()
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
	}

	fill := fillTo(t, trials, 0)
	if b, err := OpenEmbedded(context.Background(), dir, ""); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		if err == nil {
			b.Close()
		}
		t.Errorf("opened on a full disk: %v", err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	b, err = OpenEmbedded(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.walBlocked {
		t.Errorf("opened with space back: etcd has no next segment")
	}
	wantKeys(t, b, map[string]int{"k": 20})
	if _, err := b.Client.Put(context.Background(), "late", "v"); err != nil {
		t.Fatal(err)
	}
}

// TestStartFreshNearlyFullTmpfs: a new member starts where its first two WAL segments fit,
// and otherwise not at all, saying the disk is full. (Where only the first fitted, etcd's
// failing attempt at the second took all of the tmpfs for a moment, and a database commit
// landing then made it exit, in 2 of 5 starts under load; where none fitted, it panicked
// creating its WAL.)
func TestStartFreshNearlyFullTmpfs(t *testing.T) {
	mnt := mountTmpfs(t, "200m")
	for i, c := range []struct {
		free    uint64
		full    bool
		blocked bool
	}{
		{30 * mib, true, false},
		{100 * mib, true, false},
		{140 * mib, false, false},
	} {
		fill := fillTo(t, mnt, c.free)
		dir := filepath.Join(mnt, fmt.Sprint(i))
		b, err := OpenEmbedded(context.Background(), dir, "")
		switch {
		case c.full:
			if err == nil || !strings.Contains(err.Error(), "no space left on device") {
				t.Errorf("%d MiB free: %v, want an error saying the disk is full", c.free>>20, err)
			}
		case err != nil:
			t.Errorf("%d MiB free: %v", c.free>>20, err)
		default:
			if b.walBlocked != c.blocked {
				t.Errorf("%d MiB free: walBlocked %v, want %v", c.free>>20, b.walBlocked, c.blocked)
			}
			writeKeys(t, b, "k", 3)
		}
		if err == nil {
			b.Close()
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
	}
}
