// Command pageout asks the kernel to reclaim the resident pages of another process's executable
// that lapis would release of its own (exepages.Releasable; process_madvise MADV_PAGEOUT, since
// one process cannot MADV_DONTNEED another's). compare-kube.sh uses it to measure a baseline
// build that does not release them like for like.
//
//	pageout PID
package main

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lapis-dev/lapis/internal/exepages"
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
	ranges, err := exepages.Releasable(strconv.Itoa(pid))
	if err != nil {
		return err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	for _, r := range ranges {
		// One struct iovec: the range is the other process's memory, only described here.
		iov := [2]uint64{r.Start, r.End - r.Start}
		_, _, errno := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov[0])), 1, unix.MADV_PAGEOUT, 0, 0)
		if errno != 0 {
			return fmt.Errorf("pageout %x-%x: %w", r.Start, r.End, errno)
		}
	}
	return nil
}
