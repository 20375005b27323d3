package log

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// FS is the file-system seam: the log does all of its file I/O through it, so
// tests can substitute MemFS, which injects write and sync errors and
// simulates power loss.
//
// Contract: the log opens every file it writes with os.O_APPEND, so Write
// always appends; it never writes in place. Directory changes (create,
// rename, remove) are durable only after SyncDir on the parent directory.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldpath, newpath string) error
	// ReadDir returns the names of the entries of dir, sorted.
	ReadDir(dir string) ([]string, error)
	MkdirAll(dir string, perm fs.FileMode) error
	// SyncDir makes the directory's entries durable (fsync of the directory).
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	Write(p []byte) (int, error)
	// Sync makes the file's data durable. OSFS uses fdatasync where the
	// platform has it: the log never depends on timestamps being durable.
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Close() error
}

// OSFS is the FS of the operating system.
type OSFS struct{}

var _ FS = OSFS{}

func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OSFS) Remove(name string) error                    { return os.Remove(name) }
func (OSFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (OSFS) Rename(oldpath, newpath string) error        { return os.Rename(oldpath, newpath) }
func (OSFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }

func (OSFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// osFile adapts *os.File; Sync is fdatasync on Linux (see sync_linux.go).
type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// removeIfExists removes name, treating a missing file as success.
func removeIfExists(fsys FS, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// join is filepath.Join; MemFS uses the same separator.
func join(dir, name string) string { return filepath.Join(dir, name) }
