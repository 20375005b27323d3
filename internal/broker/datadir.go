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
//	clean-shutdown present only while no broker runs, after one shut down
//	               cleanly (like Kafka's .kafka_cleanshutdown)
//
// The lock makes a second process on the same directory fail at once rather
// than corrupt the logs. Because only the lock holder writes
// broker.session, a starting broker that holds the lock knows the lease it
// finds there belonged to a process that is gone, and replaces that
// registration instead of waiting out the dead session (Kafka brokers wait;
// with the lock samsa need not).
//
// The clean-shutdown marker is written at the very end of a clean shutdown,
// after every log was flushed and closed, and removed (durably) by the next
// broker right after it takes the lock. A broker that finds no marker in a
// directory that has held a broker before was killed, crashed or lost power:
// its logs may lack what it had acknowledged to its leaders, so it registers
// as recovering and stays out of ISRs and leadership until it has caught up
// (invariant 10; recovery.go).

const (
	lockFileName          = ".lock"
	sessionFileName       = "broker.session"
	cleanShutdownFileName = "clean-shutdown"
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

// takeCleanShutdownMarker reports whether the directory's previous broker
// shut down cleanly, and removes the marker that says so: from now on the
// directory is in use, and a crash must not find the marker. A fresh
// directory (no broker ever recorded a session in it, and logDir holds no
// partition) counts as clean: it has nothing to lose. The caller holds the
// directory's lock.
func takeCleanShutdownMarker(dir, logDir string) (clean bool, err error) {
	marker := filepath.Join(dir, cleanShutdownFileName)
	switch err := os.Remove(marker); {
	case err == nil:
		// Durable before anything else happens: a crash from here on must
		// find the directory unclean.
		if err := syncDir(dir); err != nil {
			return false, fmt.Errorf("broker: remove clean-shutdown marker: %w", err)
		}
		return true, nil
	case !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("broker: remove clean-shutdown marker: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, sessionFileName)); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("broker: data dir: %w", err)
	}
	entries, err := os.ReadDir(logDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("broker: read log dir: %w", err)
	}
	return len(entries) == 0, nil
}

// writeCleanShutdownMarker records a clean shutdown (write, fsync, fsync
// the directory). Call it last, with every log closed, still holding the
// lock.
func writeCleanShutdownMarker(dir string) error {
	f, err := os.Create(filepath.Join(dir, cleanShutdownFileName))
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory, making file creations and removals in it
// durable.
func syncDir(dir string) error {
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
