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

// Release unmaps the resident read-only pages of this process's executable and returns how many
// bytes were resident in the mappings it released.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	return releaseFile(exe)
}

// releaseFile releases the read-only, unmodified private mappings of the file at path.
func releaseFile(path string) (int64, error) {
	maps, err := readSmaps()
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range maps {
		if m.path != path || !releasable(m) {
			continue
		}
		// Not unix.Madvise: the range is an address read from /proc, and making a slice of it
		// takes a uintptr-to-pointer conversion that vet rightly flags.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("releasing %x-%x of %s: %w", m.start, m.end, path, errno)
		}
		released += int64(m.rss)
	}
	return released, nil
}

// releasable says whether dropping m's pages loses nothing: a private mapping that cannot be
// written and holds no copy-on-write page reads the same bytes back from the file.
func releasable(m mapping) bool {
	return len(m.perms) == 4 && m.perms[1] != 'w' && m.perms[3] == 'p' && m.anonymous == 0 && m.rss > 0
}

// readSmaps reads the mappings of this process.
func readSmaps() ([]mapping, error) {
	data, err := os.ReadFile("/proc/self/smaps")
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
