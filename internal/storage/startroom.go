package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
)

// Opening an existing member on a nearly full disk. etcd's wal.Open starts a goroutine that
// preallocates the next segment (member/wal/0.tmp, a whole wal.SegmentSizeBytes) while ReadAll,
// on the caller's goroutine, cuts the last segment back to its last record and preallocates it
// again to its former size (fileutil.ZeroToEnd): it frees most of a segment and takes it back.
// With room for only one of the two, which gets the space freed in between is up to the
// scheduler: if the next segment takes it, etcd exits ("failed to read WAL, cannot be
// repaired: no space left on device"); if not, it opens without a next segment; page by page
// both can fail. Nothing is lost either way (the cut is past the last record), but whether lapis
// started was a race. So, when the room is short, lapis makes that cut itself before etcd
// opens: etcd then has nothing to free and take back, and only the next segment's
// preallocation is left to succeed or fail, by the free space alone.
//
// On tmpfs the database takes room as it opens, before the WAL: etcd maps it with
// MAP_POPULATE, and reading a hole of a tmpfs file allocates it (bbolt grows its file with
// ftruncate, 16 MiB at a time).

// openRoom is what starting etcd on its data takes from the disk, in bytes.
type openRoom struct {
	free uint64 // available now
	db   uint64 // the database's holes, allocated as it opens (tmpfs only)
	next uint64 // the next WAL segment beyond what a left-over 0.tmp holds
	tail uint64 // preallocating the last segment again beyond what it holds
	// fresh: a new member. etcd preallocates its first segment (and panics if it cannot),
	// then, as for any member, the next one, while it already writes its first entries.
	fresh bool
}

// startPlan is what to do before etcd opens.
type startPlan int

const (
	startAsIs    startPlan = iota // room for everything: no race
	startTrimmed                  // cut the last segment first, then measure again
)

// errDiskFull says the disk has no room for etcd to start at all.
func errDiskFull(free, need uint64) error {
	return fmt.Errorf("the disk holding lapis's data is full (no space left on device: %s free, etcd needs %s to start): free space on it and start lapis again", bytesString(free), bytesString(need))
}

func bytesString(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// plan decides from r, measured before etcd starts, whether it can start at all, and whether
// the last segment must be cut first.
func (r openRoom) plan() (startPlan, error) {
	if r.fresh {
		// Both segments, or not at all. Without room for the next one, etcd's attempt to
		// preallocate it (in a goroutine, as the new member writes its first entries) takes
		// every free page of a tmpfs before failing and giving them back: a database commit
		// landing then fails, and etcd exits. And a new member that could not write could not
		// take lapis's own start-up objects either.
		if need := 2*r.next + minFreeToStart; r.free < need {
			return 0, errDiskFull(r.free, need)
		}
		return startAsIs, nil // nothing is freed while etcd starts: no race
	}
	if need := r.db + minFreeToStart; r.free < need {
		return 0, errDiskFull(r.free, need)
	}
	if r.free >= r.db+r.next+r.tail+minFreeToStart {
		return startAsIs, nil
	}
	return startTrimmed, nil
}

// blocked says whether etcd, opening with r, gets no next segment: it would exit at its next
// cut whatever the free space by then (see spaceGuard.walBlocked). Only meaningful with nothing
// for the last segment to take back (startAsIs, or after trimTail).
func (r openRoom) blocked() bool {
	if r.fresh {
		return false // plan refuses a new member without room for its next segment
	}
	return r.free < r.db+r.next+minFreeToStart
}

// measureRoom measures what starting etcd on etcdDir takes from the disk holding dataDir.
func measureRoom(dataDir, etcdDir string) (r openRoom, err error) {
	if r.free, err = freeSpace(existingAncestor(dataDir)); err != nil {
		return r, err
	}
	walDir := filepath.Join(etcdDir, "member", "wal")
	tail, err := lastSegment(walDir)
	if err != nil {
		return r, err
	}
	r.next = uint64(wal.SegmentSizeBytes)
	if tail == "" { // as wal.Exist: no segment, a new log
		r.fresh = true
		return r, nil
	}
	if size, held, err := allocated(tail); err == nil && size > held {
		r.tail = uint64(size - held)
	}
	// etcd reuses a left-over 0.tmp: its first allocation is always 0.tmp, opened without
	// truncation, and preallocating what is already allocated takes nothing.
	if _, held, err := allocated(filepath.Join(walDir, "0.tmp")); err == nil {
		r.next = uint64(max(0, wal.SegmentSizeBytes-held))
	}
	if tmpfs, err := onTmpfs(etcdDir); err == nil && tmpfs {
		if size, held, err := allocated(filepath.Join(etcdDir, "member", "snap", "db")); err == nil && size > held {
			r.db = uint64(size - held)
		}
	}
	return r, nil
}

// existingAncestor is dir or its nearest ancestor that exists (etcd creates the rest).
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// allocated returns a regular file's size and the bytes its blocks hold.
func allocated(path string) (size, held int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, 0, fmt.Errorf("%s is not a regular file", path)
	}
	return st.Size(), blockBytes(st), nil
}

// lastSegment is the path of the last WAL segment in walDir, "" when there is none. Segment
// names are fixed-width hexadecimal, so their order is their names'.
func lastSegment(walDir string) (string, error) {
	names, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil || len(names) == 0 {
		return "", err
	}
	return names[len(names)-1], nil // Glob sorts
}

// trimTail cuts the last WAL segment back to the end of its last record, where etcd cuts it
// first when it opens the WAL (fileutil.ZeroToEnd, at the offset the same decoder finds),
// without preallocating it again. It changes nothing unless the segment's records read to a
// clean end (a torn or corrupt tail is etcd's to repair).
func trimTail(walDir string) error {
	path, err := lastSegment(walDir)
	if err != nil || path == "" {
		return err
	}
	// etcd's own lock on segments: no other etcd has this one open.
	f, err := fileutil.TryLockFile(path, os.O_RDWR, fileutil.PrivateFileMode)
	if err != nil {
		return err
	}
	defer f.Close()
	// As wal.Repair reads the last segment alone: its first record carries the previous
	// segments' CRC, which starts the chain.
	dec := wal.NewDecoder(fileutil.NewFileReader(f.File))
	rec := &walpb.Record{}
	for {
		err := dec.Decode(rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if rec.GetType() == wal.CrcType {
			if crc := dec.LastCRC(); crc != 0 && rec.Validate(crc) != nil {
				return fmt.Errorf("reading %s: %w", path, wal.ErrCRCMismatch)
			}
			dec.UpdateCRC(rec.GetCrc())
		}
	}
	end := dec.LastOffset()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() <= end {
		return nil
	}
	if err := f.Truncate(end); err != nil {
		return err
	}
	return fileutil.Fsync(f.File)
}

// prepareOpen readies etcd's data under etcdDir, in lapis's dataDir, for etcd to start with
// one possible outcome: an error when the disk has no room for it, otherwise whether etcd
// will have no next WAL segment (walBlocked).
func prepareOpen(dataDir, etcdDir string) (walBlocked bool, err error) {
	r, err := measureRoom(dataDir, etcdDir)
	if err != nil {
		return false, nil // nothing known: etcd reports its own failures
	}
	p, err := r.plan()
	if err != nil {
		return false, err
	}
	if p == startTrimmed {
		if err := trimTail(filepath.Join(etcdDir, "member", "wal")); err != nil {
			return false, fmt.Errorf("the disk holding lapis's data is nearly full (%d MiB free) and etcd's log could not be readied to open there (%w): free space on it and start lapis again", r.free>>20, err)
		}
		if r, err = measureRoom(dataDir, etcdDir); err != nil {
			return false, err
		}
	}
	return r.blocked(), nil
}
