package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testNow is the broker clock in tests: 2026-01-01T00:00:00Z.
const testNow = int64(1767225600000)

func testLimits() Limits {
	lim := DefaultLimits()
	lim.Now = testNow
	return lim
}

// codecXerial is snappy in the Java client's xerial framing: codec id 2 on
// the wire, a different encoder in the tests.
const codecXerial = 100

// batchSpec describes a v2 batch to build. The zero value of every field
// but records gives what franz-go sends for a non-idempotent producer.
type batchSpec struct {
	codec         int // codecNone..codecZstd or codecXerial
	attrs         int16
	baseTimestamp int64 // 0 means testNow
	producerID    int64 // 0 means -1 (no producer); use idem() for an idempotent one
	epoch         int16
	sequence      int32
	records       []kmsg.Record
	rawRecords    []byte // used instead of records when non-nil
	count         int32  // 0 means len(records)
}

// recs returns n records with a key, a value of size bytes and one header,
// timestamp deltas 0..n-1 and offset deltas 0..n-1.
func recs(n, size int) []kmsg.Record {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	out := make([]kmsg.Record, n)
	for i := range out {
		out[i] = kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "key-%d", i),
			Value:            payload(rng, size),
			Headers:          []kmsg.Header{{Key: "h", Value: []byte("v")}},
		}
	}
	return out
}

// payload is compressible, JSON-like text of n bytes, as typical produce
// traffic is.
func payload(rng *rand.Rand, n int) []byte {
	words := []string{`{"user":`, `"id":`, `"event":"click"`, `"ts":`, `,`, `}`, `"page":"/home"`, ` `}
	var b []byte
	for len(b) < n {
		if rng.IntN(3) == 0 {
			b = fmt.Appendf(b, "%d", rng.IntN(100000))
		} else {
			b = append(b, words[rng.IntN(len(words))]...)
		}
	}
	return b[:n]
}

// encodeRecord appends r with its length computed.
func encodeRecord(dst []byte, r kmsg.Record) []byte {
	r.Length = 0
	r.Length = int32(len(r.AppendTo(nil)) - 1) // varint(0) is one byte
	return r.AppendTo(dst)
}

func encodeRecords(rs []kmsg.Record) []byte {
	var b []byte
	for _, r := range rs {
		b = encodeRecord(b, r)
	}
	return b
}

// compress compresses with the real franz-go client compressor, or with the
// xerial framing of the Java client for codecXerial.
func compress(t testing.TB, codec int, raw []byte) []byte {
	t.Helper()
	var cc kgo.CompressionCodec
	switch codec {
	case codecNone:
		return raw
	case codecGzip:
		cc = kgo.GzipCompression()
	case codecSnappy:
		cc = kgo.SnappyCompression()
	case codecLZ4:
		cc = kgo.Lz4Compression()
	case codecZstd:
		cc = kgo.ZstdCompression()
	case codecXerial:
		return xerialEncode(raw, 32<<10)
	default:
		t.Fatalf("unknown codec %d", codec)
	}
	c, err := compressor(codec, cc)
	if err != nil {
		t.Fatal(err)
	}
	out, used := c.Compress(new(bytes.Buffer), raw)
	if int(used) != codec {
		t.Fatalf("kgo compressed with codec %d, want %d", used, codec)
	}
	return bytes.Clone(out)
}

var compressors sync.Map // codec -> kgo.Compressor

func compressor(codec int, cc kgo.CompressionCodec) (kgo.Compressor, error) {
	if c, ok := compressors.Load(codec); ok {
		return c.(kgo.Compressor), nil
	}
	c, err := kgo.DefaultCompressor(cc)
	if err != nil {
		return nil, err
	}
	compressors.Store(codec, c)
	return c, nil
}

// xerialEncode frames raw the way the Java snappy library's
// SnappyOutputStream does: magic, version 1, compatible version 1, then
// length-prefixed raw snappy blocks of at most chunk input bytes.
func xerialEncode(raw []byte, chunk int) []byte {
	out := append([]byte{}, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(raw) > 0 {
		n := min(chunk, len(raw))
		block := s2.EncodeSnappy(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		raw = raw[n:]
	}
	return out
}

func idem(s batchSpec) batchSpec {
	s.producerID, s.epoch, s.sequence = 7, 1, 42
	return s
}

// build encodes s as a complete batch with a correct CRC.
func build(t testing.TB, s batchSpec) []byte {
	t.Helper()
	raw := s.rawRecords
	if raw == nil {
		raw = encodeRecords(s.records)
	}
	codec := s.codec
	data := compress(t, codec, raw)
	if codec == codecXerial {
		codec = codecSnappy
	}
	count := s.count
	if count == 0 {
		count = int32(len(s.records))
	}
	base := s.baseTimestamp
	if base == 0 {
		base = testNow
	}
	maxTS := base
	for _, r := range s.records {
		maxTS = max(maxTS, base+r.TimestampDelta64)
	}
	pid, epoch, seq := s.producerID, s.epoch, s.sequence
	if pid == 0 {
		pid, epoch, seq = -1, -1, -1
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(49 + len(data)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec) | s.attrs,
		LastOffsetDelta:      count - 1,
		FirstTimestamp:       base,
		MaxTimestamp:         maxTS,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           count,
		Records:              data,
	}
	return fixCRC(rb.AppendTo(nil))
}

// fixCRC recomputes the CRC of the batch at the start of b after a test
// changed a byte that the CRC covers.
func fixCRC(b []byte) []byte {
	size := 12 + int64(int32(binary.BigEndian.Uint32(b[8:])))
	end := int(max(21, min(size, int64(len(b)))))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:end], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// Header field offsets, for tests that damage one.
const (
	offLength          = 8
	offMagic           = 16
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
	offRecords         = 61
)

func put16(b []byte, off int, v int16) []byte {
	binary.BigEndian.PutUint16(b[off:], uint16(v))
	return b
}

func put32(b []byte, off int, v int32) []byte {
	binary.BigEndian.PutUint32(b[off:], uint32(v))
	return b
}

func put64(b []byte, off int, v int64) []byte {
	binary.BigEndian.PutUint64(b[off:], uint64(v))
	return b
}

// appendVarint appends a zigzag varint, as Kafka writes them.
func appendVarint(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// rawRecord hand-encodes a record's body fields (everything after the
// length) and prefixes the length, for records kmsg cannot express.
func rawRecord(body []byte) []byte {
	return append(appendVarint(nil, int64(len(body))), body...)
}

func newRand(seed int) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 1)) }
