package log

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// gzipBatch returns the uncompressed batch b with its records compressed
// with gzip (codec 1), the rest of the header unchanged.
func gzipBatch(t testing.TB, b []byte) []byte {
	t.Helper()
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b[BatchHeaderSize:h.Size()]); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out := append(bytes.Clone(b[:BatchHeaderSize]), buf.Bytes()...)
	be := binary.BigEndian
	be.PutUint32(out[offLength:], uint32(len(out)-LogOverhead))
	be.PutUint16(out[offAttributes:], uint16(h.Attributes&^AttrCompressionMask|1))
	return fixTestCRC(out)
}

// withProducer sets the batch's producer fields (an idempotent batch).
func withProducer(b []byte, id int64, epoch int16, seq int32) []byte {
	be := binary.BigEndian
	be.PutUint64(b[offProducerID:], uint64(id))
	be.PutUint16(b[offProducerEpoch:], uint16(epoch))
	be.PutUint32(b[offBaseSequence:], uint32(seq))
	return fixTestCRC(b)
}

func fixTestCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// gunzipRecords is the tests' CompactOptions.Decompress: gzip only, as the
// log may use the standard library alone.
func gunzipRecords(h *BatchHeader, batch []byte) ([]byte, error) {
	if h.Compression() != 1 {
		return nil, fmt.Errorf("codec %d", h.Compression())
	}
	zr, err := gzip.NewReader(bytes.NewReader(batch[BatchHeaderSize:h.Size()]))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// batchesByBase splits b into its batches, by base offset.
func batchesByBase(t *testing.T, b []byte) map[int64][]byte {
	t.Helper()
	m := map[int64][]byte{}
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		m[h.BaseOffset] = b[:h.Size()]
		b = b[h.Size():]
	}
	return m
}

// sameHeaderButCodec checks that a rewritten batch kept the header fields
// Compact must keep, and is uncompressed.
func sameHeaderButCodec(t *testing.T, before, after []byte) {
	t.Helper()
	hb, _ := ParseBatchHeader(before)
	ha, _ := ParseBatchHeader(after)
	if ha.Compression() != 0 {
		t.Fatalf("batch %d rewritten with codec %d", ha.BaseOffset, ha.Compression())
	}
	if ha.Attributes != hb.Attributes&^AttrCompressionMask || ha.BaseOffset != hb.BaseOffset ||
		ha.LastOffsetDelta != hb.LastOffsetDelta || ha.PartitionLeaderEpoch != hb.PartitionLeaderEpoch ||
		ha.BaseTimestamp != hb.BaseTimestamp || ha.MaxTimestamp != hb.MaxTimestamp ||
		ha.ProducerID != hb.ProducerID || ha.ProducerEpoch != hb.ProducerEpoch || ha.BaseSequence != hb.BaseSequence {
		t.Fatalf("batch %d: header %+v rewritten as %+v", hb.BaseOffset, hb, ha)
	}
}

// TestCompactCompressed compacts a log of gzip and uncompressed batches:
// the keys of compressed batches count, compressed batches that lose
// records are rewritten uncompressed, and those that lose none are kept
// byte for byte.
func TestCompactCompressed(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		rng := rand.New(rand.NewPCG(5, uint64(cfg.SegmentBytes)))
		var all []testRecord
		compressed := 0
		for i := range 300 {
			var recs []kv
			for j := range 1 + rng.IntN(4) {
				r := kv{key: fmt.Sprintf("k%d", rng.IntN(40)), value: []byte(fmt.Sprintf("v%d-%d", i, j))}
				if rng.IntN(8) == 0 {
					r.value = nil
				}
				recs = append(recs, r)
			}
			b := keyedBatch(1000, recs...)
			if rng.IntN(3) != 0 {
				b = gzipBatch(t, b)
				compressed++
			}
			info := mustAppend(t, l, b, 0)
			for j, r := range recs {
				all = append(all, testRecord{offset: info.FirstOffset + int64(j), key: r.key, value: r.value})
			}
		}
		leo := l.EndOffset()
		cleanEnd := cleanableEnd(l, leo)
		before := readAllBatches(t, l)
		sameRecords(t, decodeAll(t, before, 0), all)

		stats, err := l.Compact(CompactOptions{UpperBound: leo, DeleteRetentionMs: -1, Decompress: gunzipRecords})
		if err != nil {
			t.Fatal(err)
		}
		want := expectCompacted(all, cleanEnd)
		if stats.RecordsRemoved != len(all)-len(want) || stats.UndecodableBatches != 0 || stats.CompressedKeptWhole != 0 {
			t.Fatalf("stats %+v, want %d records removed", stats, len(all)-len(want))
		}
		after := readAllBatches(t, l)
		sameRecords(t, decodeAll(t, after, 0), want) // CRCs, offsets, records
		if cleanEnd > 0 && stats.CompressedRewritten == 0 {
			t.Fatalf("stats %+v: no compressed batch rewritten", stats)
		}

		old := batchesByBase(t, before)
		// Records left per batch of the old log, by base offset.
		left := map[int64]int{}
		for _, r := range want {
			for base, b := range old {
				if h, _ := ParseBatchHeader(b); base <= r.offset && r.offset <= h.LastOffset() {
					left[base]++
				}
			}
		}
		rewritten := 0
		for base, b := range batchesByBase(t, after) {
			h, _ := ParseBatchHeader(b)
			ob := old[base]
			oh, _ := ParseBatchHeader(ob)
			switch {
			case left[base] == 0: // a filler spanning emptied batches
				if h.RecordCount != 0 || h.Compression() != 0 || h.ProducerID != -1 {
					t.Fatalf("filler %d: %+v", base, h)
				}
			case left[base] == int(oh.RecordCount):
				if !bytes.Equal(b, ob) {
					t.Fatalf("batch %d lost no record but changed", base)
				}
			case bytes.Equal(b, ob):
				t.Fatalf("batch %d lost records but is unchanged", base)
			default:
				sameHeaderButCodec(t, ob, b)
				if oh.Compression() != 0 {
					rewritten++
				}
			}
		}
		if rewritten != stats.CompressedRewritten {
			t.Fatalf("%d compressed batches rewritten, stats say %d", rewritten, stats.CompressedRewritten)
		}

		// Idempotent: nothing more to remove; a reopened log reads the same.
		if stats, err := l.Compact(CompactOptions{UpperBound: leo, DeleteRetentionMs: -1, Decompress: gunzipRecords}); err != nil || stats.RecordsRemoved != 0 {
			t.Fatalf("second Compact: %+v, %v", stats, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.dir, cfg)
		if !bytes.Equal(readAllBatches(t, l), after) {
			t.Fatal("reopened log differs from the compacted one")
		}
	})
}

// rollPast appends small uncompressed batches of distinct keys ("f0",
// "f1"...) until the log has rolled at least n more times.
func rollPast(t *testing.T, l *Log, ts int64, n int) {
	t.Helper()
	for i, start := 0, l.NumSegments(); l.NumSegments() < start+n; i++ {
		mustAppend(t, l, keyedBatch(ts, kv{fmt.Sprintf("f%d", i), []byte("0123456789")}), 0)
	}
}

func TestCompactCompressedRules(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		if cfg.SegmentBytes > 1024 {
			t.Skip("needs rolled segments")
		}
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		ts := int64(1000)
		sparse := mustAppend(t, l, gzipBatch(t, keyedBatch(ts, kv{"a", []byte("1")}, kv{"z", []byte("1")}, kv{"b", []byte("1")})), 0)
		whole := mustAppend(t, l, gzipBatch(t, keyedBatch(ts, kv{"x", []byte("1")}, kv{"y", nil})), 0)
		idem := mustAppend(t, l, withProducer(gzipBatch(t, keyedBatch(ts, kv{"c", []byte("1")})), 9, 0, 0), 0)
		gone := mustAppend(t, l, gzipBatch(t, keyedBatch(ts, kv{"d", []byte("1")}, kv{"d", []byte("2")})), 0)
		mustAppend(t, l, keyedBatch(ts, kv{"a", []byte("2")}, kv{"b", nil}, kv{"c", []byte("2")}, kv{"d", []byte("3")}), 0)
		rollPast(t, l, ts, 1)
		before := batchesByBase(t, readAllBatches(t, l))

		stats, err := l.Compact(CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1, Decompress: gunzipRecords})
		if err != nil {
			t.Fatal(err)
		}
		all := readAllBatches(t, l)
		recs := decodeAll(t, all, 0)
		after := batchesByBase(t, all)

		// The sparse batch: z alone, at its offset, uncompressed.
		b := after[sparse.FirstOffset]
		sameHeaderButCodec(t, before[sparse.FirstOffset], b)
		if got := decodeAll(t, b, sparse.FirstOffset); len(got) != 1 || got[0].key != "z" || got[0].offset != sparse.FirstOffset+1 {
			t.Fatalf("sparse batch holds %+v", got)
		}
		// Untouched compressed batch.
		if !bytes.Equal(after[whole.FirstOffset], before[whole.FirstOffset]) {
			t.Fatal("a compressed batch that lost nothing changed")
		}
		// The idempotent batch is an empty uncompressed header.
		b = after[idem.FirstOffset]
		sameHeaderButCodec(t, before[idem.FirstOffset], b)
		if h, _ := ParseBatchHeader(b); h.RecordCount != 0 || h.Size() != BatchHeaderSize {
			t.Fatalf("idempotent batch: %+v", h)
		}
		// The emptied batch became a filler.
		b = after[gone.FirstOffset]
		if h, _ := ParseBatchHeader(b); h.RecordCount != 0 || h.ProducerID != -1 || h.Compression() != 0 || h.LastOffset() != gone.LastOffset {
			t.Fatalf("emptied batch: %+v", h)
		}
		// Latest values survive.
		final := map[string]testRecord{}
		for _, r := range recs {
			if _, dup := final[r.key]; dup {
				t.Fatalf("key %s twice after compaction", r.key)
			}
			final[r.key] = r
		}
		for key, want := range map[string]string{"a": "2", "c": "2", "d": "3", "x": "1", "z": "1"} {
			if string(final[key].value) != want {
				t.Fatalf("key %s = %q, want %q", key, final[key].value, want)
			}
		}
		if r, ok := final["b"]; !ok || r.value != nil {
			t.Fatalf("tombstone of b: %+v", r)
		}
		if stats.CompressedRewritten != 2 || stats.UndecodableBatches != 0 {
			t.Fatalf("stats %+v", stats)
		}
	})
}

// TestCompactUndecodable: a batch whose records cannot be read is kept
// whole, counted, and keeps later tombstones (dropping them would bring
// back its values).
func TestCompactUndecodable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		decompress func(*BatchHeader, []byte) ([]byte, error)
		undecoded  int
	}{
		{"failing", func(*BatchHeader, []byte) ([]byte, error) { return nil, errors.New("boom") }, 2},
		{"garbage", func(*BatchHeader, []byte) ([]byte, error) { return []byte{1, 2, 3}, nil }, 2},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			cfg := testConfig(NewMemFS(1), clock)
			cfg.SegmentBytes = 1024
			l := mustOpen(t, "/data/t-0", cfg)
			defer l.Close()
			ts := clock.Ms()
			mustAppend(t, l, keyedBatch(ts, kv{"u", []byte("1")}), 0)
			mustAppend(t, l, gzipBatch(t, keyedBatch(ts, kv{"a", []byte("1")}, kv{"u", []byte("2")})), 0)
			mustAppend(t, l, gzipBatch(t, keyedBatch(ts, kv{"a", []byte("2")})), 0)
			mustAppend(t, l, keyedBatch(ts, kv{"a", nil}, kv{"u", []byte("3")}), 0)
			rollPast(t, l, ts, 1)
			clock.Advance(time.Hour)
			before := batchesByBase(t, readAllBatches(t, l))
			opts := CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: 1000, Decompress: tc.decompress}
			stats, err := l.Compact(opts)
			if err != nil {
				t.Fatal(err)
			}
			if stats.UndecodableBatches != tc.undecoded {
				t.Fatalf("stats %+v, want %d undecodable", stats, tc.undecoded)
			}
			all := readAllBatches(t, l)
			after := batchesByBase(t, all)
			for base, b := range before {
				if h, _ := ParseBatchHeader(b); h.Compression() != 0 && !bytes.Equal(after[base], b) {
					t.Fatalf("undecodable batch %d changed", base)
				}
			}
			final := map[string][]byte{}
			tombstone := false
			for _, r := range decodeAll(t, all, 0) {
				final[r.key] = r.value
				if r.key == "a" && r.value == nil {
					tombstone = true
				}
			}
			// The expired tombstone of a stays: the undecodable batches
			// before it hold values of a.
			if !tombstone || final["a"] != nil || string(final["u"]) != "3" {
				t.Fatalf("after compaction: %q, tombstone of a kept: %v", final, tombstone)
			}
			// u=1 (uncompressed, superseded by u=3) went.
			if stats.RecordsRemoved != 1 {
				t.Fatalf("stats %+v, want 1 record removed", stats)
			}
			// With a working decompressor everything superseded goes.
			opts.Decompress = gunzipRecords
			if stats, err = l.Compact(opts); err != nil || stats.RecordsRemoved != 4 || stats.TombstonesRemoved != 1 {
				t.Fatalf("Compact with gzip: %+v, %v", stats, err)
			}
			final = map[string][]byte{}
			for _, r := range decodeAll(t, readAllBatches(t, l), 0) {
				final[r.key] = r.value
			}
			if _, ok := final["a"]; ok || string(final["u"]) != "3" {
				t.Fatalf("after compaction with gzip: %q", final)
			}
		})
	}
}

// TestCompactCompressedGrowth: a compressed batch whose uncompressed rewrite
// would grow its segment past segment.bytes is kept compressed, and the
// tombstone of a key it keeps a stale value of stays.
func TestCompactCompressedGrowth(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(NewMemFS(1), clock)
	cfg.SegmentBytes = 1024
	l := mustOpen(t, "/data/t-0", cfg)
	defer l.Close()
	ts := clock.Ms()
	big := kv{"big", make([]byte, 8000)} // gzip: a few dozen bytes
	mustAppend(t, l, gzipBatch(t, keyedBatch(ts, kv{"a", []byte("1")}, big)), 0)
	mustAppend(t, l, keyedBatch(ts, kv{"a", nil}), 0)
	rollPast(t, l, ts, 1)
	clock.Advance(time.Hour)
	before := readAllBatches(t, l)
	first, _ := ParseBatchHeader(before)
	stats, err := l.Compact(CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: 1000, Decompress: gunzipRecords})
	if err != nil {
		t.Fatal(err)
	}
	if stats.CompressedKeptWhole != 1 || stats.TombstonesRemoved != 0 {
		t.Fatalf("stats %+v", stats)
	}
	after := readAllBatches(t, l)
	if !bytes.Equal(after[:first.Size()], before[:first.Size()]) {
		t.Fatal("the compressed batch changed")
	}
	var a []testRecord
	for _, r := range decodeAll(t, after, 0) {
		if r.key == "a" {
			a = append(a, r)
		}
	}
	if len(a) != 2 || a[1].value != nil {
		t.Fatalf("records of a: %+v, want the stale value and the tombstone", a)
	}
}
