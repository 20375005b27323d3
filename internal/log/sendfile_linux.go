package log

import (
	"errors"
	"io"
	"syscall"
)

// maxSendfile bounds one sendfile(2) call (Linux sends at most about 2 GiB
// per call anyway).
const maxSendfile = 1 << 30

// sendRange sends fr from the file src to the socket dst with sendfile(2),
// at an explicit offset (the file's own position, shared by every reader,
// is neither used nor moved). While the socket takes bytes, sendfile runs
// under segMu for reading, after checking that the range is still valid;
// when the socket is full the lock is released and the writer waits for
// room (and for the socket's write deadline) in Go's poller. handled is
// false when either side cannot take part (nothing was sent): the caller
// copies instead.
func sendRange(l *Log, dst, src syscall.Conn, fr *fileRange) (written int64, err error, handled bool) {
	dc, err := dst.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	sc, err := src.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	pos := fr.pos
	var serr error
	werr := dc.Write(func(dfd uintptr) bool {
		l.segMu.RLock()
		defer l.segMu.RUnlock()
		for pos < fr.end {
			if serr = fr.validLocked(); serr != nil {
				return true
			}
			var n int
			var e error
			cerr := sc.Control(func(sfd uintptr) {
				off := pos
				n, e = syscall.Sendfile(int(dfd), int(sfd), &off, int(min(fr.end-pos, maxSendfile)))
			})
			if cerr != nil {
				serr = cerr
				return true
			}
			if n > 0 {
				pos += int64(n)
				written += int64(n)
			}
			switch {
			case errors.Is(e, syscall.EAGAIN):
				return false // the socket is full: wait for room
			case errors.Is(e, syscall.EINTR):
			case e != nil:
				serr = e
				return true
			case n == 0:
				// The file ends before the range: cut under us
				// without the log knowing, which must not be.
				serr = io.ErrUnexpectedEOF
				return true
			}
		}
		return true
	})
	if written == 0 && isUnsupported(serr) {
		// Not a file sendfile can read, or not a socket it can write:
		// nothing was sent, so the caller may copy.
		return 0, nil, false
	}
	if werr != nil {
		return written, werr, true
	}
	return written, serr, true
}

// isUnsupported reports whether sendfile refused the descriptors
// themselves.
func isUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP)
}
