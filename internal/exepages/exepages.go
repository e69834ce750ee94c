package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mapping is one line of /proc/self/smaps with the fields Release needs.
type mapping struct {
	start, end uint64
	perms      string
	path       string
	anonymous  uint64 // bytes of privately modified (copy-on-write) pages
	rss        uint64 // bytes resident
}

// Range is a mapping of an executable's pages that can be dropped without losing anything.
type Range struct {
	Start, End uint64
	Resident   int64 // bytes resident when the mappings were read
}

// Release unmaps the resident read-only pages of this process's executable and returns how many
// bytes were resident in the mappings it released.
func Release() (int64, error) {
	ranges, err := Releasable("self")
	if err != nil {
		return 0, err
	}
	return release(ranges)
}

// release unmaps ranges of this process.
func release(ranges []Range) (int64, error) {
	var released int64
	for _, r := range ranges {
		// Not unix.Madvise: the range is an address read from /proc, and making a slice of it
		// takes a uintptr-to-pointer conversion that vet rightly flags.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(r.Start), uintptr(r.End-r.Start), unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("releasing %x-%x: %w", r.Start, r.End, errno)
		}
		released += r.Resident
	}
	return released, nil
}

// Releasable returns the resident mappings of process pid's executable ("self": this process)
// that are read-only and unmodified.
func Releasable(pid string) ([]Range, error) {
	exe, err := os.Readlink("/proc/" + pid + "/exe")
	if err != nil {
		return nil, fmt.Errorf("finding the executable: %w", err)
	}
	return releasableOf(pid, exe)
}

// releasableOf returns the mappings of the file at path that process pid may drop.
func releasableOf(pid, path string) ([]Range, error) {
	maps, err := readSmaps(pid)
	if err != nil {
		return nil, err
	}
	var ranges []Range
	for _, m := range maps {
		if m.path == path && releasable(m) {
			ranges = append(ranges, Range{Start: m.start, End: m.end, Resident: int64(m.rss)})
		}
	}
	return ranges, nil
}

// releasable says whether dropping m's pages loses nothing: a private mapping that cannot be
// written and holds no copy-on-write page reads the same bytes back from the file.
func releasable(m mapping) bool {
	return len(m.perms) == 4 && m.perms[1] != 'w' && m.perms[3] == 'p' && m.anonymous == 0 && m.rss > 0
}

// readSmaps reads the mappings of process pid.
func readSmaps(pid string) ([]mapping, error) {
	data, err := os.ReadFile("/proc/" + pid + "/smaps")
	if err != nil {
		return nil, fmt.Errorf("reading mappings: %w", err)
	}
	return parseSmaps(data)
}

// parseSmaps parses the text of /proc/PID/smaps.
func parseSmaps(data []byte) ([]mapping, error) {
	var maps []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if key, isField := strings.CutSuffix(fields[0], ":"); isField {
			if len(maps) == 0 || len(fields) < 2 {
				continue
			}
			last := &maps[len(maps)-1]
			switch key {
			case "Rss", "Anonymous":
				kb, err := strconv.ParseUint(fields[1], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("smaps line %q: %w", line, err)
				}
				if key == "Rss" {
					last.rss = kb * 1024
				} else {
					last.anonymous = kb * 1024
				}
			}
			continue
		}
		// A mapping's header: "start-end perms offset dev inode [path]".
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok || len(fields) < 5 {
			return nil, fmt.Errorf("smaps line %q: not a mapping", line)
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("smaps line %q: bad address range", line)
		}
		m := mapping{start: start, end: end, perms: fields[1]}
		if len(fields) > 5 {
			m.path = strings.Join(fields[5:], " ")
		}
		maps = append(maps, m)
	}
	return maps, sc.Err()
}
