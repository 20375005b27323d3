package log

import (
	"fmt"
	"io"
	"sync"
	"syscall"
)

// Records is whole batches of a log, as ranges of its segment files that
// have not been read: a fetch response sends them from the files (WriteTo,
// with sendfile on a TCP connection) instead of copying them into memory.
//
// The ranges stay valid for as long as the log keeps those bytes where they
// were: appends only add bytes after them, and a compacted segment's or a
// deleted segment's old file is replaced, not changed. Should the log cut a
// segment (a truncation: the replica stopped leading, or an unclean
// election) or close its file (retention, compaction, the log closing)
// before the bytes are sent, WriteTo and AppendTo fail with ErrRecordsGone
// rather than send other bytes. (Any cut of the segment counts, even one
// after the range: cuts are rare, and the reader just asks again.) Each
// check and the file access after it happen under segMu for reading, so no
// cut or close can come between them.
type Records struct {
	l      *Log
	ranges []fileRange
	size   int64
	// next is the offset after the last batch, 0 if there is none.
	next int64
	// compressions has bit c set when a batch uses compression codec c.
	compressions uint8
}

// fileRange is [pos, end) of one segment's log file: whole batches, as of
// the segment's cuts count gen.
type fileRange struct {
	seg      *segment
	pos, end int64
	gen      uint64
}

// Len returns the size of the batches in bytes.
func (r Records) Len() int64 { return r.size }

// NextOffset returns the offset after the last batch, 0 if there is none.
func (r Records) NextOffset() int64 { return r.next }

// Compressed reports whether a batch uses compression codec c (the low
// three bits of the attributes: 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func (r Records) Compressed(c int) bool { return c >= 0 && c < 8 && r.compressions&(1<<c) != 0 }

// validLocked returns nil if fr's bytes are still in the file. segMu must be
// held.
func (fr *fileRange) validLocked() error {
	if fr.seg.closed || fr.seg.cuts != fr.gen {
		return ErrRecordsGone
	}
	return nil
}

// AppendTo appends the batches' bytes to dst.
func (r Records) AppendTo(dst []byte) ([]byte, error) {
	if r.size == 0 {
		return dst, nil
	}
	base := len(dst)
	dst = grow(dst, int(r.size))
	at := base
	r.l.segMu.RLock()
	defer r.l.segMu.RUnlock()
	for i := range r.ranges {
		fr := &r.ranges[i]
		if err := fr.validLocked(); err != nil {
			return dst[:base], err
		}
		n := int(fr.end - fr.pos)
		if _, err := fr.seg.logFile.ReadAt(dst[at:at+n], fr.pos); err != nil {
			return dst[:base], fmt.Errorf("log: read segment %d: %w", fr.seg.baseOffset, err)
		}
		at += n
	}
	return dst, nil
}

// copyChunk is the buffer WriteTo copies through when it cannot use
// sendfile (a file system other than the OS's, a writer that is not a
// socket).
const copyChunk = 64 << 10

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// WriteTo writes the batches to w: with sendfile(2) when w is a socket
// (syscall.Conn) and the log's files are the OS's, so the bytes go from the
// page cache to the socket without a copy in user space; otherwise through
// a pooled 64 KiB buffer. It returns the bytes written; on an error (w's,
// or ErrRecordsGone) fewer than Len were written and the caller must not
// send anything more on w, whose stream is now broken.
func (r Records) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for i := range r.ranges {
		n, err := r.l.writeRange(w, &r.ranges[i])
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// writeRange writes one range to w.
func (l *Log) writeRange(w io.Writer, fr *fileRange) (int64, error) {
	if dst, ok := w.(syscall.Conn); ok {
		if src, ok := fr.seg.logFile.(syscall.Conn); ok {
			if n, err, handled := sendRange(l, dst, src, fr); handled {
				return n, err
			}
		}
	}
	bufp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bufp)
	var total int64
	for pos := fr.pos; pos < fr.end; {
		chunk := (*bufp)[:min(int64(len(*bufp)), fr.end-pos)]
		l.segMu.RLock()
		err := fr.validLocked()
		if err == nil {
			_, err = fr.seg.logFile.ReadAt(chunk, pos)
		}
		l.segMu.RUnlock()
		if err != nil {
			return total, err
		}
		n, err := w.Write(chunk)
		total += int64(n)
		if err != nil {
			return total, err
		}
		pos += int64(n)
	}
	return total, nil
}
