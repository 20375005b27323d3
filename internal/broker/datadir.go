package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The data directory holds, besides logs/ and etcd/:
//
//	.lock          held (flock) by the one broker process using the directory
//	broker.session the etcd lease id of that process's registration
//
// The lock makes a second process on the same directory fail at once rather
// than corrupt the logs. Because only the lock holder writes
// broker.session, a starting broker that holds the lock knows the lease it
// finds there belonged to a process that is gone, and replaces that
// registration instead of waiting out the dead session (Kafka brokers wait;
// with the lock samsa need not).

const (
	lockFileName    = ".lock"
	sessionFileName = "broker.session"
)

// errDataDirLocked reports a data directory in use by another process.
var errDataDirLocked = errors.New("broker: data directory is in use by another process")

// lockDataDir takes the data directory's exclusive lock; the returned file
// holds it until closed (or the process dies).
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("broker: lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", errDataDirLocked, dir)
		}
		return nil, fmt.Errorf("broker: lock data dir: %w", err)
	}
	return f, nil
}

// previousLease returns the lease id recorded by the directory's previous
// broker process, or 0.
func previousLease(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, sessionFileName))
	if err != nil {
		return 0
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// recordLease writes this process's lease id (write, fsync, rename).
func recordLease(dir string, id int64) error {
	tmp := filepath.Join(dir, sessionFileName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strconv.FormatInt(id, 10) + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, sessionFileName))
}
