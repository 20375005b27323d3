package log

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2): it flushes the data and the metadata needed to
// read it back (such as the file size), but not timestamps, which saves a
// journal write per fsync when a file grows only rarely (preallocation) and
// costs nothing otherwise.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
