package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// batchSpec describes a test batch. Build one with newBatch and the with*
// options; makeBatch encodes it as a real v2 batch: uncompressed records
// with varint framing and a correct CRC-32C.
type batchSpec struct {
	records       int
	valueSize     int
	timestamp     int64 // the first record's; -1 for none
	tsStep        int64 // added per record
	producerID    int64
	producerEpoch int16
	baseSeq       int32
	leaderEpoch   int32
	baseOffset    int64
	fill          byte // value bytes are fill, fill+1, ...
	attributes    int16
}

func newBatch(records, valueSize int, timestamp int64) batchSpec {
	return batchSpec{records: records, valueSize: valueSize, timestamp: timestamp, tsStep: 1,
		producerID: -1, producerEpoch: -1, baseSeq: -1, leaderEpoch: -1}
}

func (s batchSpec) producer(id int64, epoch int16, seq int32) batchSpec {
	s.producerID, s.producerEpoch, s.baseSeq = id, epoch, seq
	return s
}

func (s batchSpec) at(baseOffset int64, leaderEpoch int32) batchSpec {
	s.baseOffset, s.leaderEpoch = baseOffset, leaderEpoch
	return s
}

func (s batchSpec) filled(b byte) batchSpec { s.fill = b; return s }

// transactional sets the batch's transactional attribute.
func (s batchSpec) transactional() batchSpec { s.attributes |= AttrTransactional; return s }

func (s batchSpec) encode() []byte {
	var records []byte
	maxTs := s.timestamp
	for i := range s.records {
		var body []byte
		body = append(body, 0) // attributes
		tsDelta := int64(0)
		if s.timestamp >= 0 {
			tsDelta = int64(i) * s.tsStep
			maxTs = max(maxTs, s.timestamp+tsDelta)
		}
		body = binary.AppendVarint(body, tsDelta)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1) // null key
		body = binary.AppendVarint(body, int64(s.valueSize))
		for j := range s.valueSize {
			body = append(body, s.fill+byte(i+j))
		}
		body = binary.AppendVarint(body, 0) // no headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(s.baseOffset))
	be.PutUint32(b[8:], uint32(BatchHeaderSize-LogOverhead+len(records)))
	be.PutUint32(b[12:], uint32(s.leaderEpoch))
	b[16] = 2
	be.PutUint16(b[21:], uint16(s.attributes))
	be.PutUint32(b[23:], uint32(s.records-1))
	be.PutUint64(b[27:], uint64(s.timestamp))
	be.PutUint64(b[35:], uint64(maxTs))
	be.PutUint64(b[43:], uint64(s.producerID))
	be.PutUint16(b[51:], uint16(s.producerEpoch))
	be.PutUint32(b[53:], uint32(s.baseSeq))
	be.PutUint32(b[57:], uint32(s.records))
	b = append(b, records...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// concat joins batches into one buffer, as a produce request carries them.
func concat(batches ...[]byte) []byte { return bytes.Join(batches, nil) }

// stored returns batch b as the log stores it at baseOffset in leaderEpoch.
func stored(b []byte, baseOffset int64, leaderEpoch int32) []byte {
	c := bytes.Clone(b)
	SetBaseOffset(c, baseOffset)
	SetPartitionLeaderEpoch(c, leaderEpoch)
	return c
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) Ms() int64 { return c.Now().UnixMilli() }

// testEnv is one file system to run a test body on.
type testEnv struct {
	name string
	fs   FS
	mem  *MemFS // nil for OSFS
	dir  string
}

// fileSystems returns the file systems every log test runs on (STYLE habit
// 12): the OS (in t.TempDir) and MemFS.
func fileSystems(t *testing.T) []func(t *testing.T) testEnv {
	return []func(t *testing.T) testEnv{
		func(t *testing.T) testEnv {
			return testEnv{name: "osfs", fs: OSFS{}, dir: filepath.Join(t.TempDir(), "topic-0")}
		},
		func(t *testing.T) testEnv {
			m := NewMemFS(uint64(time.Now().UnixNano()))
			return testEnv{name: "memfs", fs: m, mem: m, dir: "/data/topic-0"}
		},
	}
}

// segmentSizes are the segment.bytes values log tests run with: one
// segment for everything, a few batches per segment, one batch per segment.
var segmentSizes = []int64{1 << 20, 1024, 100}

// forEachEnv runs body for every file system × segment size.
func forEachEnv(t *testing.T, body func(t *testing.T, env testEnv, cfg Config)) {
	for i, mk := range fileSystems(t) {
		for _, segBytes := range segmentSizes {
			name := [...]string{"osfs", "memfs"}[i]
			t.Run(fmt.Sprintf("%s/segment=%d", name, segBytes), func(t *testing.T) {
				t.Parallel() // OSFS subtests mostly wait for fsync
				env := mk(t)
				cfg := testConfig(env.fs, newFakeClock())
				cfg.SegmentBytes = segBytes
				body(t, env, cfg)
			})
		}
	}
}

func testConfig(fsys FS, clock *fakeClock) Config {
	cfg := DefaultConfig()
	cfg.FS = fsys
	cfg.Now = clock.Now
	cfg.IndexIntervalBytes = 256
	cfg.Logger = quietLogger
	return cfg
}

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

func verboseLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func mustOpen(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, batches []byte, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.Append(batches, epoch)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return info
}

// readAllBatches reads the whole visible log.
func readAllBatches(t testing.TB, l *Log) []byte {
	t.Helper()
	got, err := l.Read(l.StartOffset(), l.EndOffset(), 1<<30, true)
	if err != nil {
		t.Fatalf("Read(all): %v", err)
	}
	return got
}

// splitBatches splits a buffer of whole batches, failing on anything else.
func splitBatches(t testing.TB, b []byte) []BatchHeader {
	t.Helper()
	var hs []BatchHeader
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatalf("split batches: %v", err)
		}
		if err := VerifyCRC(b, &h); err != nil {
			t.Fatalf("split batches: %v", err)
		}
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return hs
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
