package records

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec ids in the low three bits of a batch's attributes.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

const (
	// maxPooledBuffer is the largest decompression buffer returned to the
	// pool; a rare huge batch should not pin its buffer for good.
	maxPooledBuffer = 8 << 20
	// minBuffer is the first allocation when the output size is unknown.
	minBuffer = 64 << 10
)

// buffer is a pooled decompression buffer (a pointer, so that Put does not
// allocate).
type buffer struct{ b []byte }

var bufferPool = sync.Pool{New: func() any { return new(buffer) }}

func getBuffer() *buffer { return bufferPool.Get().(*buffer) }

func putBuffer(b *buffer) {
	if cap(b.b) > maxPooledBuffer {
		b.b = nil
	}
	b.b = b.b[:0]
	bufferPool.Put(b)
}

// decompress writes the decompressed form of src into dst[:0], growing it
// as needed but never past limit bytes of output (plus one byte of
// read-ahead for the streaming codecs, which is how they notice the excess).
// It returns the buffer in every case, so that the caller can pool whatever
// was allocated. Errors wrap ErrDecompress or ErrDecompressedTooLarge.
func decompress(codec int, src, dst []byte, limit int) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	switch codec {
	case codecNone:
		if len(src) > limit {
			return dst[:0], tooLarge(limit)
		}
		return append(grow(dst[:0], len(src), len(src), 0), src...), nil
	case codecGzip:
		return decodeGzip(src, dst, limit)
	case codecSnappy:
		return decodeSnappy(src, dst, limit)
	case codecLZ4:
		return decodeLZ4(src, dst, limit)
	case codecZstd:
		return decodeZstd(src, dst, limit)
	}
	return dst[:0], fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, codec)
}

// overBudget serializes the large decompressions that find no room in
// their memory budget: they run one at a time, outside it, rather than fail
// at once (a producer would take MESSAGE_TOO_LARGE for a batch that is not)
// or wait for room that the waiting requests themselves may hold. A
// decompression waits for its turn at most overBudgetWait, then fails with
// ErrDecompressBusy (retriable), so that a stream of bombs cannot hold
// other producers' batches for ever.
var overBudget = make(chan struct{}, 1)

// overBudgetWait: see overBudget. A variable for tests.
var overBudgetWait = 5 * time.Second

// overBudgetSmall is the largest try that runs outside a full budget
// without waiting for overBudget: four times a compressed size of at most
// 64 KiB, which the request frame holding it has already taken from the
// budget, so these add at most four times what the budget counts for
// them, and a small batch never waits behind the large ones.
const overBudgetSmall = 256 << 10

// ErrDecompressBusy: a batch that did not fit the memory budget waited
// overBudgetWait for its turn to decompress outside it. It wraps
// context.DeadlineExceeded, which the broker answers REQUEST_TIMED_OUT
// (retriable: the producer sends the batch again).
var ErrDecompressBusy = fmt.Errorf("records: no memory to decompress the batch: %w", context.DeadlineExceeded)

// decompressWithin decompresses src into buf (see decompress), taking the
// output's bytes from m first. It tries a cap of four times the compressed
// size (at least minBuffer, at most limit), which covers most batches, and
// retries with four times the cap while the output is larger, up to limit:
// a retry costs a second decompression, rare and bounded, where taking
// limit bytes for every batch would let a few batches fill the budget. When
// m has no room for a try, the rest runs under overBudget with the full
// limit (a try of at most overBudgetSmall runs first, without waiting),
// waiting at most overBudgetWait for its turn. The returned func gives the
// bytes back; call it once the output is no longer used.
func decompressWithin(m MemoryBudget, codec int, src []byte, buf *buffer, limit int) (out []byte, release func(), err error) {
	if m == nil {
		buf.b, err = decompress(codec, src, buf.b, limit)
		return buf.b, func() {}, err
	}
	try := min(limit, max(4*len(src), minBuffer))
	for {
		if !m.TryAcquire(int64(try)) {
			if try <= overBudgetSmall {
				buf.b, err = decompress(codec, src, buf.b, try)
				if err == nil || try >= limit || !errors.Is(err, ErrDecompressedTooLarge) {
					return buf.b, func() {}, err
				}
			}
			timer := time.NewTimer(overBudgetWait)
			defer timer.Stop()
			select {
			case overBudget <- struct{}{}:
			case <-timer.C:
				return buf.b[:0], func() {}, ErrDecompressBusy
			}
			buf.b, err = decompressReleasing(func() { <-overBudget }, codec, src, buf.b, limit)
			return buf.b, func() { <-overBudget }, err
		}
		n := int64(try)
		buf.b, err = decompressReleasing(func() { m.Release(n) }, codec, src, buf.b, try)
		if err == nil || try >= limit || !errors.Is(err, ErrDecompressedTooLarge) {
			return buf.b, func() { m.Release(n) }, err
		}
		m.Release(n)
		try = min(4*try, limit)
	}
}

// decompressReleasing is decompress for a caller holding budget or the
// over-budget slot: if a decoder panics, release gives it back before the
// panic goes on (the connection's recovery closes the connection), so a
// decoder's bug cannot keep it for ever.
func decompressReleasing(release func(), codec int, src, dst []byte, limit int) ([]byte, error) {
	defer func() {
		if r := recover(); r != nil {
			release()
			panic(r)
		}
	}()
	return decompressFunc(codec, src, dst, limit)
}

// decompressFunc is decompress; tests replace it to make a decoder panic.
var decompressFunc = decompress

func tooLarge(limit int) error {
	return fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, limit)
}

func decodeFailed(codec int, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrDecompress, codecNames[codec], err)
}

// grow returns dst, keeping its contents, with room for at least need and
// at most ceiling bytes (need <= ceiling). It doubles, starting from hint or
// minBuffer, so that filling a buffer piecemeal costs linear copying, and
// goes straight to the ceiling when doubling would stop just short of it.
func grow(dst []byte, need, ceiling, hint int) []byte {
	if cap(dst) >= need {
		return dst
	}
	n := max(2*cap(dst), need, hint, minBuffer)
	if n >= ceiling-ceiling/8 {
		n = ceiling
	}
	nb := make([]byte, len(dst), n)
	copy(nb, dst)
	return nb
}

// readCapped reads r to EOF into dst[:0]. It reads at most limit+1 bytes
// (the extra byte proves the output too large) and never holds a buffer
// larger than that.
func readCapped(codec int, r io.Reader, dst []byte, limit, hint int) ([]byte, error) {
	dst = dst[:0]
	stop := limit + 1
	stalls := 0
	for {
		if len(dst) == cap(dst) {
			dst = grow(dst, len(dst)+1, stop, hint)
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), stop)])
		dst = dst[:len(dst)+n]
		switch {
		case len(dst) > limit:
			return dst, tooLarge(limit)
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return dst, decodeFailed(codec, err)
		case n == 0:
			if stalls++; stalls > 100 {
				return dst, decodeFailed(codec, io.ErrNoProgress)
			}
		}
	}
}

// gzipDecoder is a pooled gzip reader with its source.
type gzipDecoder struct {
	src bytes.Reader // a flate.Reader, so gzip does not wrap it in a bufio.Reader
	zr  gzip.Reader
}

var gzipPool = sync.Pool{New: func() any { return new(gzipDecoder) }}

func decodeGzip(src, dst []byte, limit int) ([]byte, error) {
	d := gzipPool.Get().(*gzipDecoder)
	defer gzipPool.Put(d)
	d.src.Reset(src)
	defer d.src.Reset(nil) // do not pin the request in the pool
	// Reset turns multistream mode on: concatenated members are legal, as
	// in Java's GZIPInputStream.
	if err := d.zr.Reset(&d.src); err != nil {
		return dst[:0], decodeFailed(codecGzip, err)
	}
	return readCapped(codecGzip, &d.zr, dst, limit, 4*len(src))
}

// lz4Decoder is a pooled LZ4 frame reader with its source.
type lz4Decoder struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var lz4Pool = sync.Pool{New: func() any { return &lz4Decoder{zr: lz4.NewReader(nil)} }}

func decodeLZ4(src, dst []byte, limit int) ([]byte, error) {
	d := lz4Pool.Get().(*lz4Decoder)
	defer lz4Pool.Put(d)
	d.src.Reset(src)
	d.zr.Reset(&d.src)
	// Reset(nil) hands the block buffer back to lz4's own pool and drops
	// the reference to the request.
	defer d.zr.Reset(nil)
	defer d.src.Reset(nil)
	return readCapped(codecLZ4, d.zr, dst, limit, 4*len(src))
}

// xerialMagic opens the snappy framing of the Java snappy library
// (SnappyOutputStream), which the Java producer uses. After the magic come
// two big-endian int32 versions, then chunks: a big-endian int32 length and
// a raw snappy block of that length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

func decodeSnappy(src, dst []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	if len(src) < xerialHeaderLen || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		// One raw snappy block, as librdkafka, franz-go and sarama write.
		return snappyBlock(src, dst, limit)
	}
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return dst, decodeFailed(codecSnappy, errors.New("xerial chunk length truncated"))
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst, decodeFailed(codecSnappy, fmt.Errorf("xerial chunk of %d bytes with %d left", n, len(rest)))
		}
		var err error
		if dst, err = snappyBlock(rest[:n], dst, limit); err != nil {
			return dst, err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// snappyBlock appends the decoded raw snappy block to dst. The block states
// its decoded size up front, so the limit is checked before allocating.
func snappyBlock(block, dst []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, decodeFailed(codecSnappy, err)
	}
	if n > limit-len(dst) {
		return dst, tooLarge(limit)
	}
	dst = grow(dst, len(dst)+n, limit, 0)
	if _, err := s2.Decode(dst[len(dst):len(dst)+n], block); err != nil {
		return dst, decodeFailed(codecSnappy, err)
	}
	return dst[:len(dst)+n], nil
}

// zstdDecoder is a pooled synchronous (concurrency 1) streaming decoder
// with its source. The streaming decoder keeps a window ring of the frame's
// declared window size, so the window is capped at the output limit: no
// back-reference can reach further than the output the limit allows, and a
// frame declaring a larger window fails before the ring is allocated.
// DecodeAll, which needs no ring, is not used: past its cap it reallocates
// before it notices, and its limits apply per frame.
type zstdDecoder struct {
	src    bytes.Reader
	dec    *zstd.Decoder
	window int // the decoder's window and memory cap
}

var zstdPool sync.Pool // *zstdDecoder

// maxPooledZstdWindow: decoders that decoded a frame with a larger window
// keep a ring that large; they are closed rather than pooled.
const maxPooledZstdWindow = 8 << 20

func decodeZstd(src, dst []byte, limit int) ([]byte, error) {
	hint := 4 * len(src)
	var h zstd.Header
	if h.Decode(src) == nil {
		if h.HasFCS {
			// The frame states its size: refuse a bomb before decoding it.
			if h.FrameContentSize > uint64(limit) {
				return dst[:0], tooLarge(limit)
			}
			hint = int(h.FrameContentSize) + 1 // room to read EOF without growing
		}
		if h.WindowSize > uint64(limit) && h.WindowSize > zstd.MinWindowSize {
			return dst[:0], fmt.Errorf("%w: zstd window of %d bytes, limit %d", ErrDecompressedTooLarge, h.WindowSize, limit)
		}
	}
	window := max(limit, zstd.MinWindowSize)
	d, _ := zstdPool.Get().(*zstdDecoder)
	if d == nil {
		d = new(zstdDecoder)
	}
	d.src.Reset(src)
	var err error
	switch {
	case d.dec == nil:
		d.dec, err = zstd.NewReader(&d.src, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(window)), zstd.WithDecoderMaxWindow(uint64(window)))
	case d.window != window:
		err = d.dec.ResetWithOptions(&d.src, zstd.WithDecoderMaxMemory(uint64(window)), zstd.WithDecoderMaxWindow(uint64(window)))
	default:
		err = d.dec.Reset(&d.src)
	}
	if err != nil {
		if d.dec != nil {
			d.dec.Close()
		}
		return dst[:0], decodeFailed(codecZstd, err)
	}
	d.window = window
	out, err := readCapped(codecZstd, d.dec, dst, limit, hint)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		// A later frame's size or window is above the limit. Not
		// ErrDecompress: the kind must stay MESSAGE_TOO_LARGE alone.
		err = fmt.Errorf("%w: a zstd frame or window above %d bytes", ErrDecompressedTooLarge, limit)
	}
	d.src.Reset(nil)
	if h.WindowSize > maxPooledZstdWindow {
		d.dec.Close()
		return out, err
	}
	_ = d.dec.Reset(nil) // drop the reference to the request
	zstdPool.Put(d)
	return out, err
}
