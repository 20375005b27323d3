package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Names of the checkpoint files in a partition directory.
const (
	recoveryPointFile   = "recovery-point"
	logStartOffsetFile  = "log-start-offset"
	epochCheckpointFile = "leader-epoch-checkpoint"
	tmpSuffix           = ".tmp"
	checkpointVersion   = 0
)

var errBadCheckpoint = errors.New("log: malformed checkpoint file")

// WriteFileAtomic replaces dir/name with data so that a crash leaves either
// the old or the new content: write a temporary file, fsync it, rename it
// over the old one, fsync the directory.
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	tmp := join(dir, name+tmpSuffix)
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, join(dir, name))
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("log: write %s: %w", name, err)
	}
	return nil
}

// ReadFile reads a whole (small) file of fsys, such as one WriteFileAtomic
// wrote.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}

// readAll reads a whole open file.
func readAll(f File) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, info.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// Checkpoint files are text, like Kafka's: a version line, then values.
// The offset checkpoints (recovery-point, log-start-offset) hold one offset:
//
//	0
//	<offset>

func encodeOffsetCheckpoint(offset int64) []byte {
	return fmt.Appendf(nil, "%d\n%d\n", checkpointVersion, offset)
}

func parseOffsetCheckpoint(b []byte) (int64, error) {
	lines, err := checkpointLines(b, 2)
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(string(lines[1]), 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("%w: offset %q", errBadCheckpoint, lines[1])
	}
	return off, nil
}

// checkpointLines splits a checkpoint into n lines, checking the version
// line and that the file ends with a newline (so it was written whole).
func checkpointLines(b []byte, n int) ([][]byte, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%w: not newline-terminated", errBadCheckpoint)
	}
	lines := bytes.Split(b[:len(b)-1], []byte{'\n'})
	if n >= 0 && len(lines) != n {
		return nil, fmt.Errorf("%w: %d lines, want %d", errBadCheckpoint, len(lines), n)
	}
	if string(lines[0]) != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("%w: version %q", errBadCheckpoint, lines[0])
	}
	return lines, nil
}

func (l *Log) writeOffsetCheckpoint(name string, offset int64) error {
	return WriteFileAtomic(l.fs, l.dir, name, encodeOffsetCheckpoint(offset))
}

// readOffsetCheckpoint returns the offset in dir/name; ok is false if the
// file is missing or unreadable (a damaged one is logged).
func (l *Log) readOffsetCheckpoint(name string) (offset int64, ok bool) {
	b, err := ReadFile(l.fs, join(l.dir, name))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.logger().Warn("log: cannot read checkpoint", "dir", l.dir, "file", name, "err", err)
		}
		return 0, false
	}
	offset, err = parseOffsetCheckpoint(b)
	if err != nil {
		l.logger().Warn("log: ignoring damaged checkpoint", "dir", l.dir, "file", name, "err", err)
		return 0, false
	}
	return offset, true
}
