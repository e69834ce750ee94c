package lapisproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoProc: the process's sockets cannot be read (not Linux, or no /proc).
var ErrNoProc = errors.New("no /proc to read sockets from")

// ListeningPorts returns the TCP ports (IPv4 and IPv6) process pid listens on, as the kernel
// sees them: the LISTEN sockets of /proc/PID/net/tcp{,6} whose inodes are among its open
// files, whatever library opened them.
func ListeningPorts(pid int) ([]int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoProc, err)
	}
	owned := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(link, "socket:[") {
			owned[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !owned[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			port, _ := strconv.ParseUint(hexPort, 16, 16)
			ports = append(ports, int(port))
		}
		f.Close()
	}
	sort.Ints(ports)
	return ports, nil
}
