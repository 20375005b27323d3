//go:build !linux

package broker

// diskSpace cannot tell the file system's size on this platform.
func diskSpace(string) (total, usable int64) { return -1, -1 }
