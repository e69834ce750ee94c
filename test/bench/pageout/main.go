// Command pageout asks the kernel to reclaim the resident pages of another process's executable
// that are mapped read-only (process_madvise MADV_PAGEOUT), as lapis unmaps its own once ready
// (internal/exepages). compare-kube.sh uses it to measure a baseline build that does not do so
// like for like.
//
//	pageout PID
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pageout PID")
		os.Exit(2)
	}
	pid, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "pageout:", err)
		os.Exit(2)
	}
	if err := pageout(pid); err != nil {
		fmt.Fprintln(os.Stderr, "pageout:", err)
		os.Exit(1)
	}
}

func pageout(pid int) error {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "start-end perms offset dev inode path"
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Join(fields[5:], " ") != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad mapping %q", fields[0])
		}
		// One struct iovec: the range is the other process's memory, only described here.
		iov := [2]uint64{start, end - start}
		_, _, errno := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov[0])), 1, unix.MADV_PAGEOUT, 0, 0)
		if errno != 0 {
			return fmt.Errorf("pageout %s: %w", fields[0], errno)
		}
	}
	return sc.Err()
}
