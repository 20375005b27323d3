package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// scanChunk is how much of a segment a batchScanner reads at a time.
const scanChunk = 256 << 10

// batchScanner iterates over the batches stored in a region of a segment
// file, reading the file in large chunks. Every batch it yields has a sane
// header (length within the region, magic 2, consistent offsets) and, with
// verifyCRC, a correct CRC-32C. It stops at the first batch that is not, and
// reports why in corrupt; I/O errors go to err instead.
type batchScanner struct {
	f         io.ReaderAt
	pos       int64 // file position of the next batch
	end       int64 // end of the region
	verifyCRC bool
	// headersOnly: read and check each batch's header, not its records
	// (batch stays nil).
	headersOnly bool
	chunk       int64 // bytes to read at a time (more for a larger batch)

	buf    []byte // file bytes [bufPos, bufPos+len(buf))
	bufPos int64

	// The current batch: its header, its bytes (a view into buf, valid until
	// the next call to next) and its file position.
	h        BatchHeader
	batch    []byte
	batchPos int64

	corrupt error // why the scan stopped early at pos (wraps ErrCorruptBatch)
	err     error // I/O error
}

// newBatchScanner scans [pos, end) of f. buf, if not nil, is a buffer to
// use; its capacity sets the chunk size.
func newBatchScanner(f io.ReaderAt, pos, end int64, verifyCRC bool, buf []byte) *batchScanner {
	chunk := int64(scanChunk)
	if cap(buf) > 0 {
		chunk = int64(cap(buf))
	}
	return &batchScanner{f: f, pos: pos, end: end, verifyCRC: verifyCRC, chunk: chunk, buf: buf[:0], bufPos: pos}
}

// newHeaderScanner scans the batch headers of [pos, end) of f without
// reading the records: the chunk size (buf's capacity) should be small, a
// few KiB, so that a large batch costs one short read.
func newHeaderScanner(f io.ReaderAt, pos, end int64, buf []byte) *batchScanner {
	s := newBatchScanner(f, pos, end, false, buf)
	s.headersOnly = true
	return s
}

// next advances to the next batch; false at the end of the region, on
// corruption or on an I/O error.
func (s *batchScanner) next() bool {
	if s.err != nil || s.corrupt != nil || s.pos >= s.end {
		return false
	}
	remaining := s.end - s.pos
	if remaining < BatchHeaderSize {
		return s.fail(ErrShortBatch)
	}
	if !s.fill(BatchHeaderSize) {
		return false
	}
	b := s.buf[s.pos-s.bufPos:]
	// Check the length field against the bytes that remain before trusting
	// it with an allocation.
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	size := int64(LogOverhead) + int64(length)
	if length < BatchHeaderSize-LogOverhead || size > remaining {
		return s.fail(fmt.Errorf("%w: %d with %d bytes left", ErrBadLength, length, remaining-LogOverhead))
	}
	if s.headersOnly {
		h, err := ParseBatchHeader(b[:BatchHeaderSize])
		if err != nil && !errors.Is(err, ErrBatchTooLong) {
			return s.fail(err)
		}
		s.h, s.batch, s.batchPos = h, nil, s.pos
		s.pos += size
		return true
	}
	if !s.fill(size) {
		return false
	}
	b = s.buf[s.pos-s.bufPos:][:size]
	h, err := ParseBatchHeader(b)
	if err != nil {
		return s.fail(err)
	}
	if s.verifyCRC {
		if err := VerifyCRC(b, &h); err != nil {
			return s.fail(err)
		}
	}
	s.h, s.batch, s.batchPos = h, b, s.pos
	s.pos += size
	return true
}

func (s *batchScanner) fail(cause error) bool {
	s.corrupt = fmt.Errorf("%w: at position %d: %w", ErrCorruptBatch, s.pos, cause)
	return false
}

// fill makes buf hold the n bytes at pos, reading a chunk or more.
func (s *batchScanner) fill(n int64) bool {
	if s.pos >= s.bufPos && s.pos+n <= s.bufPos+int64(len(s.buf)) {
		return true
	}
	want := min(max(n, s.chunk), s.end-s.pos)
	if int64(cap(s.buf)) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	s.bufPos = s.pos
	if _, err := s.f.ReadAt(s.buf, s.pos); err != nil {
		if errors.Is(err, io.EOF) {
			// The file is shorter than the region we were told about.
			return s.fail(io.ErrUnexpectedEOF)
		}
		s.err = err
		return false
	}
	return true
}

// headerBufPool holds the small buffers of header scans (Slice).
var headerBufPool = sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}
