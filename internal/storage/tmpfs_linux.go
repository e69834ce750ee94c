package storage

import "golang.org/x/sys/unix"

// onTmpfs says whether dir is on a tmpfs, where reading a hole of a mapped file allocates it.
func onTmpfs(dir string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Type == unix.TMPFS_MAGIC, nil
}
