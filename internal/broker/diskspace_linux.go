package broker

import "syscall"

// diskSpace returns the total and available bytes of the file system
// holding dir, -1 and -1 if it cannot tell.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}
