//go:build unix

package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockDataDir takes the data directory for this process: another lapis on it would share
// etcd's files and hang, so it is refused at once. The kernel drops the lock when the process
// ends, however it ends.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "lapis.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another lapis (it holds %s)", dir, path)
		}
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
