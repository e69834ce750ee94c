//go:build unix

package storage

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeSpace returns the bytes of dir's filesystem available to lapis.
func freeSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// blockBytes is what a file's blocks hold: less than its size when it has holes.
func blockBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
