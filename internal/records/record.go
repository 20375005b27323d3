package records

import (
	"errors"
	"fmt"

	klog "github.com/samsa-io/samsa/internal/log"
)

// Record is one record of a v2 batch, as ForEachRecord hands it out.
//
// A record on the wire (all integers zigzag varints, timestampDelta a
// varlong):
//
//	length          bytes after this field
//	attributes      int8, unused
//	timestampDelta  from the batch's baseTimestamp
//	offsetDelta     from the batch's baseOffset; the record's index
//	keyLength, key  -1 for a null key
//	valueLength, value
//	headerCount, then per header: keyLength, key, valueLength, value
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	// Key and Value are nil when null. They alias the batch or a pooled
	// decompression buffer: valid only during the callback.
	Key, Value  []byte
	HeaderCount int
}

// minRecordBody is the smallest possible record after its length prefix:
// attributes, timestampDelta, offsetDelta, keyLength, valueLength and
// headerCount take at least one byte each.
const minRecordBody = 6

// Reasons a record fails to decode; wrapped in ErrMalformedRecord.
var (
	errVarint      = errors.New("malformed varint")
	errLength      = errors.New("record length out of range")
	errPastEnd     = errors.New("field runs past the end of the record")
	errNegative    = errors.New("negative length")
	errHeaderCount = errors.New("header count out of range")
	errSize        = errors.New("record length disagrees with its fields")
)

// ForEachRecord calls fn for each record of the batch whose header h was
// parsed from batch (klog.ParseBatchHeader), in order, until fn returns
// false. Compressed batches are decompressed into a pooled buffer, failing
// with ErrDecompressedTooLarge past maxDecompressed bytes (<= 0 means
// DefaultMaxDecompressedBytes). It checks the framing as Validate does: the
// batch must hold exactly h.RecordCount well-formed records, unless fn stops
// early. It does not check the CRC or offset deltas.
func ForEachRecord(batch []byte, h *klog.BatchHeader, maxDecompressed int64, fn func(r Record) bool) error {
	if h.Length < klog.BatchHeaderSize-klog.LogOverhead || h.Size() > len(batch) {
		return fmt.Errorf("%w: batch of %d bytes in a buffer of %d", ErrBadLength, h.Size(), len(batch))
	}
	if h.RecordCount < 0 {
		return fmt.Errorf("%w: record count %d", ErrInvalidRecordCount, h.RecordCount)
	}
	data := batch[klog.BatchHeaderSize:h.Size()]
	codec := h.Compression()
	if codec > codecZstd {
		return fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, codec)
	}
	if codec != codecNone {
		buf := getBuffer()
		defer putBuffer(buf)
		out, err := decompress(codec, data, buf.b, decompressLimit(maxDecompressed))
		buf.b = out
		if err != nil {
			return err
		}
		data = out
	}
	var r Record
	off := 0
	for i := range h.RecordCount {
		if off == len(data) {
			return fmt.Errorf("%w: batch holds %d records, header says %d", ErrInvalidRecordCount, i, h.RecordCount)
		}
		next, err := parseRecord(data, off, &r)
		if err != nil {
			return malformed(i, off, err)
		}
		off = next
		if !fn(r) {
			return nil
		}
	}
	if off != len(data) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecordCount, len(data)-off, h.RecordCount)
	}
	return nil
}

// DecompressRecords returns the records of the batch whose header h was
// parsed from batch: the bytes after the header, decompressed if the batch
// is compressed, into a new buffer of at most DefaultMaxDecompressedBytes
// (ErrDecompressedTooLarge past it). It does not check the records. Its
// signature is klog.CompactOptions.Decompress's, which the broker sets to
// it so that compaction reads the keys of compressed batches.
func DecompressRecords(h *klog.BatchHeader, batch []byte) ([]byte, error) {
	if h.Length < klog.BatchHeaderSize-klog.LogOverhead || h.Size() > len(batch) {
		return nil, fmt.Errorf("%w: batch of %d bytes in a buffer of %d", ErrBadLength, h.Size(), len(batch))
	}
	data := batch[klog.BatchHeaderSize:h.Size()]
	codec := h.Compression()
	switch {
	case codec == codecNone:
		return data, nil
	case codec > codecZstd:
		return nil, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, codec)
	}
	out, err := decompress(codec, data, nil, DefaultMaxDecompressedBytes)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func malformed(index int32, off int, err error) error {
	return &RecordError{BatchIndex: index, Err: fmt.Errorf("%w: record %d at byte %d: %w", ErrMalformedRecord, index, off, err)}
}

// decompressLimit turns a configured cap into a buffer limit.
func decompressLimit(n int64) int {
	if n <= 0 {
		return DefaultMaxDecompressedBytes
	}
	return int(min(n, 1<<40)) // keeps limit+1 and doubling far from overflow
}

// parseRecord decodes the record at b[off:] into r and returns the offset
// just past it. Every length is checked against the bytes that remain of the
// record before it is used, so garbage costs no allocation and no more work
// than its own size.
func parseRecord(b []byte, off int, r *Record) (int, error) {
	length, p := varint1(b, off)
	if p < 0 {
		if length, p = readVarint(b, off); p < 0 {
			return 0, errVarint
		}
	}
	if length < minRecordBody {
		return 0, errLength
	}
	if int(length) > len(b)-p {
		return 0, errPastEnd
	}
	end := p + int(length)
	body := b[:end]
	p++ // attributes
	if r.TimestampDelta, p = readVarlong(body, p); p < 0 {
		return 0, errVarint
	}
	q := p
	if r.OffsetDelta, p = varint1(body, q); p < 0 {
		if r.OffsetDelta, p = readVarint(body, q); p < 0 {
			return 0, errVarint
		}
	}
	var err error
	if r.Key, p, err = readBytes(body, p); err != nil {
		return 0, err
	}
	if r.Value, p, err = readBytes(body, p); err != nil {
		return 0, err
	}
	count, q := varint1(body, p)
	if q < 0 {
		if count, q = readVarint(body, p); q < 0 {
			return 0, errVarint
		}
	}
	p = q
	// A header takes at least two bytes (two lengths), so a claim of more
	// headers than half the bytes left fails here, before any loop.
	if count < 0 || int(count) > (end-p)/2 {
		return 0, errHeaderCount
	}
	for range count {
		var n int32
		if n, p = readVarint(body, p); p < 0 {
			return 0, errVarint
		}
		if n < 0 { // header keys are non-null strings
			return 0, errNegative
		}
		if int(n) > end-p {
			return 0, errPastEnd
		}
		p += int(n)
		if n, p = readVarint(body, p); p < 0 {
			return 0, errVarint
		}
		if n < -1 {
			return 0, errNegative
		}
		if int(n) > end-p {
			return 0, errPastEnd
		}
		if n > 0 {
			p += int(n)
		}
	}
	if p != end {
		return 0, errSize
	}
	r.HeaderCount = int(count)
	return end, nil
}

// readBytes decodes a varint-length-prefixed byte string; -1 is null. The
// result's capacity is clipped so that appending to it cannot overwrite the
// batch.
func readBytes(b []byte, p int) ([]byte, int, error) {
	n, q := varint1(b, p)
	if q < 0 {
		n, q = readVarint(b, p)
	}
	p = q
	switch {
	case p < 0:
		return nil, 0, errVarint
	case n == -1:
		return nil, p, nil
	case n < -1:
		// Kafka reads any negative length as null; only -1 is ever
		// written, so anything else is garbage we would store.
		return nil, 0, errNegative
	case int(n) > len(b)-p:
		return nil, 0, errPastEnd
	}
	end := p + int(n)
	return b[p:end:end], end, nil
}

// readVarint decodes the zigzag varint at b[p:] and returns it with the
// offset after it, or p = -1 when it is truncated or does not fit in 32 bits
// (Kafka's limit is five bytes). Hot callers inline the one-byte case:
//
//	v, q := varint1(b, p)
//	if q < 0 {
//		v, q = readVarint(b, p)
//	}
func readVarint(b []byte, p int) (int32, int) {
	if v, q := varint1(b, p); q >= 0 {
		return v, q
	}
	return readVarintSlow(b, p)
}

// varint1 decodes a one-byte varint, or returns q = -1 for anything else.
func varint1(b []byte, p int) (v int32, q int) {
	if uint(p) < uint(len(b)) {
		if x := b[p]; x < 0x80 {
			return int32(x>>1) ^ -int32(x&1), p + 1
		}
	}
	return 0, -1
}

// readVarintSlow is kept out of line so that readVarint inlines.
//
//go:noinline
func readVarintSlow(b []byte, p int) (int32, int) {
	var u uint32
	for shift := 0; shift < 35; shift += 7 {
		if p < 0 || p >= len(b) {
			return 0, -1
		}
		c := b[p]
		p++
		if shift == 28 && c > 0x0f { // more than 32 bits, or a sixth byte
			return 0, -1
		}
		u |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), p
		}
	}
	return 0, -1
}

// readVarlong is readVarint for 64 bits (at most ten bytes).
func readVarlong(b []byte, p int) (int64, int) {
	if uint(p) < uint(len(b)) {
		if c := b[p]; c < 0x80 {
			return int64(c>>1) ^ -int64(c&1), p + 1
		}
	}
	return readVarlongSlow(b, p)
}

//go:noinline
func readVarlongSlow(b []byte, p int) (int64, int) {
	var u uint64
	for shift := 0; shift < 70; shift += 7 {
		if p < 0 || p >= len(b) {
			return 0, -1
		}
		c := b[p]
		p++
		if shift == 63 && c > 0x01 {
			return 0, -1
		}
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), p
		}
	}
	return 0, -1
}
