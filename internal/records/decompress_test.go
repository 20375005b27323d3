package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Bombs are built by repeating one compressed member or frame of zeros,
// which every codec accepts as one stream, so that a gigabyte of output
// costs the test only a few megabytes of compression.
const gib = 1 << 30

// bombUnit is the output of one repeated member or frame.
var bombUnit = map[bool]int{false: 16 << 20, true: 4 << 20}[raceEnabled]

func gzipMember(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	writeZeros(t, w, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zstdStreamFrame is a frame that does not state its content size, as a
// streaming encoder (the Java client's) writes it.
func zstdStreamFrame(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	writeZeros(t, w, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("stream frame header %+v, %v: want no content size", h, err)
	}
	return buf.Bytes()
}

// zstdLyingFrame declares a content size of size bytes and holds one RLE
// block: the decoder must refuse it from the header alone.
func zstdLyingFrame(size uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	b = append(b, 0xE0) // 8-byte content size, single segment
	b = binary.LittleEndian.AppendUint64(b, size)
	const blockSize = 128 << 10
	hdr := uint32(blockSize<<3 | 1<<1 | 1) // last block, RLE
	return append(b, byte(hdr), byte(hdr>>8), byte(hdr>>16), 0)
}

func lz4Frame(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	writeZeros(t, w, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type writer interface{ Write([]byte) (int, error) }

func writeZeros(t testing.TB, w writer, n int) {
	zeros := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zeros))
		if _, err := w.Write(zeros[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
}

// bombBatch wraps compressed data in an otherwise valid batch of one
// record.
func bombBatch(t testing.TB, codec int, data []byte) []byte {
	b := build(t, batchSpec{records: recs(1, 1)})
	b = append(b[:offRecords], data...)
	put16(b, offAttributes, int16(codec))
	put32(b, offLength, int32(len(b)-12))
	return fixCRC(b)
}

// TestDecompressionBombs feeds each codec a batch that decompresses to far
// more than the cap (a gigabyte where the codec's ratio allows) and checks
// that Validate fails with ErrDecompressedTooLarge having allocated about
// twice the cap at most, all buffers together.
func TestDecompressionBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses hundreds of megabytes")
	}
	// Under the race detector the same bombs, a quarter the size against a
	// quarter of the cap, keep the run short.
	size, defaultCap := gib, int64(DefaultMaxDecompressedBytes)
	if raceEnabled {
		size, defaultCap = gib/4, DefaultMaxDecompressedBytes/4
	}
	tests := []struct {
		name  string
		codec int
		data  func(t *testing.T) []byte
		cap   int64
	}{
		{"gzip 1GiB", codecGzip, func(t *testing.T) []byte { return bytes.Repeat(gzipMember(t, bombUnit), size/bombUnit) }, defaultCap},
		{"zstd 1GiB without content size", codecZstd, func(t *testing.T) []byte { return bytes.Repeat(zstdStreamFrame(t, bombUnit), size/bombUnit) }, defaultCap},
		{"zstd declaring 1TiB", codecZstd, func(*testing.T) []byte { return zstdLyingFrame(1 << 40) }, defaultCap},
		{"lz4 256MiB", codecLZ4, func(t *testing.T) []byte { return bytes.Repeat(lz4Frame(t, bombUnit), size/bombUnit/4) }, defaultCap},
		{"snappy declaring 1GiB", codecSnappy, func(*testing.T) []byte { return append(binary.AppendUvarint(nil, gib), 0, 0, 0, 0) }, defaultCap},
		{"snappy xerial 4MiB", codecSnappy, func(*testing.T) []byte { return xerialEncode(make([]byte, 4<<20), 64<<10) }, 1 << 20},
		{"gzip small cap", codecGzip, func(t *testing.T) []byte { return gzipMember(t, 4<<20) }, 1 << 20},
		{"zstd small cap", codecZstd, func(t *testing.T) []byte { return zstdStreamFrame(t, 4<<20) }, 1 << 20},
		{"lz4 small cap", codecLZ4, func(t *testing.T) []byte { return lz4Frame(t, 4<<20) }, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bombBatch(t, tt.codec, tt.data(t))
			lim := testLimits()
			lim.MaxMessageBytes = 8 << 20
			lim.MaxDecompressedBytes = tt.cap
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Validate(b, lim)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrDecompressedTooLarge) || !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("got %v, want ErrDecompressedTooLarge", err)
			}
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			// Growing buffers double up to the cap (cap + cap/2 + ... < 2 cap);
			// lz4 may add one 4 MiB block buffer.
			if limit := 2*tt.cap + 6<<20; allocated > limit && !raceEnabled {
				t.Errorf("allocated %d bytes for a %d-byte batch with a cap of %d, want at most %d", allocated, len(b), tt.cap, limit)
			}
			t.Logf("%d-byte batch: %v after allocating %.1f MiB (cap %d MiB)", len(b), err, float64(allocated)/(1<<20), tt.cap>>20)
		})
	}
}

// TestDecompressRoundTrip checks each decoder against the real franz-go
// compressor (and the xerial framing), across sizes around buffer and
// chunk boundaries.
func TestDecompressRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for _, n := range []int{0, 1, minBuffer - 1, minBuffer, minBuffer + 1, 200 << 10} {
			raw := payload(newRand(n), n)
			comp := compress(t, c.codec, raw)
			codec := c.codec
			if codec == codecXerial {
				codec = codecSnappy
			}
			for _, limit := range []int{n, n + 1, 8 << 20} {
				got, err := decompress(codec, comp, nil, limit)
				if err != nil {
					t.Fatalf("%s %d bytes, limit %d: %v", c.name, n, limit, err)
				}
				if !bytes.Equal(got, raw) {
					t.Fatalf("%s %d bytes, limit %d: output differs (%d bytes)", c.name, n, limit, len(got))
				}
			}
			if n > 0 {
				if _, err := decompress(codec, comp, nil, n-1); !errors.Is(err, ErrDecompressedTooLarge) {
					t.Errorf("%s %d bytes, limit %d: got %v, want ErrDecompressedTooLarge", c.name, n, n-1, err)
				}
			}
		}
	}
}

func TestDecompressGarbage(t *testing.T) {
	good := map[int][]byte{}
	for _, c := range allCodecs[1:] {
		if c.codec != codecXerial {
			good[c.codec] = compress(t, c.codec, payload(newRand(1), 5000))
		}
	}
	tests := []struct {
		name  string
		codec int
		data  []byte
	}{
		{"gzip bad header", codecGzip, []byte("not gzip at all")},
		{"gzip truncated", codecGzip, good[codecGzip][:len(good[codecGzip])/2]},
		{"gzip trailing garbage", codecGzip, append(bytes.Clone(good[codecGzip]), "garbage!"...)},
		{"lz4 bad magic", codecLZ4, []byte("not an lz4 frame")},
		{"lz4 truncated", codecLZ4, good[codecLZ4][:len(good[codecLZ4])/2]},
		{"zstd bad magic", codecZstd, []byte("not a zstd frame")},
		{"zstd truncated", codecZstd, good[codecZstd][:len(good[codecZstd])/2]},
		{"snappy bad block", codecSnappy, []byte{0x10, 0xff, 0xff, 0xff}},
		{"snappy truncated", codecSnappy, good[codecSnappy][:len(good[codecSnappy])/2]},
		{"xerial short chunk length", codecSnappy, append(xerialEncode(nil, 1), 0, 0)},
		{"xerial chunk past the end", codecSnappy, append(xerialEncode(nil, 1), 0, 0, 1, 0, 1)},
		{"xerial bad chunk", codecSnappy, append(xerialEncode(nil, 1), 0, 0, 0, 2, 0x10, 0xff)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decompress(tt.codec, tt.data, nil, 1<<20)
			if !errors.Is(err, ErrDecompress) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrDecompress", err)
			}
			// In a batch, the same bytes are a corrupt message.
			if _, err := Validate(bombBatch(t, tt.codec, tt.data), testLimits()); !errors.Is(err, ErrDecompress) {
				t.Errorf("Validate: got %v, want ErrDecompress", err)
			}
		})
	}
}

// TestSnappyBothFramings: the same records framed raw and xerial decode
// the same, and a raw block that happens to be short is not taken for
// xerial.
func TestSnappyBothFramings(t *testing.T) {
	raw := payload(newRand(3), 100<<10)
	for _, chunk := range []int{1, 1000, 32 << 10, 1 << 20} {
		got, err := decompress(codecSnappy, xerialEncode(raw, chunk), nil, 1<<20)
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("xerial chunks of %d: %d bytes, %v", chunk, len(got), err)
		}
	}
	got, err := decompress(codecSnappy, s2.EncodeSnappy(nil, raw), nil, 1<<20)
	if err != nil || !bytes.Equal(got, raw) {
		t.Errorf("raw block: %d bytes, %v", len(got), err)
	}
	got, err = decompress(codecSnappy, s2.EncodeSnappy(nil, []byte("x")), nil, 10)
	if err != nil || string(got) != "x" {
		t.Errorf("tiny raw block: %q, %v", got, err)
	}
}
