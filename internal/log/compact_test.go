package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"
)

// kv is a record of a keyed test batch; a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

// keyedBatch encodes an uncompressed v2 batch of keyed records, all with
// timestamp ts.
func keyedBatch(ts int64, recs ...kv) []byte {
	var records []byte
	for i, r := range recs {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, 0)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, int64(len(r.key)))
		body = append(body, r.key...)
		if r.value == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.value)))
			body = append(body, r.value...)
		}
		body = binary.AppendVarint(body, 0)
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(BatchHeaderSize-LogOverhead+len(records)))
	b[16] = 2
	be.PutUint32(b[23:], uint32(len(recs)-1))
	be.PutUint64(b[27:], uint64(ts))
	be.PutUint64(b[35:], uint64(ts))
	be.PutUint64(b[43:], ^uint64(0))
	be.PutUint16(b[51:], ^uint16(0))
	be.PutUint32(b[53:], ^uint32(0))
	be.PutUint32(b[57:], uint32(len(recs)))
	b = append(b, records...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// testRecord is a record decoded by the tests' own decoder.
type testRecord struct {
	offset int64
	key    string
	value  []byte // nil: tombstone
}

// decodeAll checks that b is whole batches with valid CRCs, each starting
// where the previous one ended (from first), and returns their records
// (gzip batches decompressed).
func decodeAll(t *testing.T, b []byte, first int64) []testRecord {
	t.Helper()
	var out []testRecord
	next := first
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatalf("batch at offset %d: %v", next, err)
		}
		if err := VerifyCRC(b, &h); err != nil {
			t.Fatalf("batch at offset %d: %v", h.BaseOffset, err)
		}
		if h.BaseOffset != next {
			t.Fatalf("batch at offset %d, expected %d", h.BaseOffset, next)
		}
		next = h.NextOffset()
		rest := b[BatchHeaderSize:h.Size()]
		if h.Compression() != 0 {
			var err error
			if rest, err = gunzipRecords(&h, b); err != nil {
				t.Fatalf("batch at offset %d: %v", h.BaseOffset, err)
			}
		}
		prev := int64(-1)
		for range h.RecordCount {
			l, n := binary.Varint(rest)
			rec := rest[n : n+int(l)]
			rest = rest[n+int(l):]
			rec = rec[1:]
			_, n = binary.Varint(rec)
			rec = rec[n:]
			od, n := binary.Varint(rec)
			rec = rec[n:]
			if od <= prev || od > int64(h.LastOffsetDelta) {
				t.Fatalf("batch %d: offset delta %d after %d", h.BaseOffset, od, prev)
			}
			prev = od
			kl, n := binary.Varint(rec)
			rec = rec[n:]
			key := string(rec[:kl])
			rec = rec[kl:]
			vl, n := binary.Varint(rec)
			rec = rec[n:]
			var v []byte
			if vl >= 0 {
				v = append([]byte{}, rec[:vl]...)
			}
			out = append(out, testRecord{offset: h.BaseOffset + od, key: key, value: v})
		}
		if len(rest) != 0 {
			t.Fatalf("batch %d: %d bytes after its records", h.BaseOffset, len(rest))
		}
		b = b[h.Size():]
	}
	return out
}

// fillKeyed appends n batches of 1-3 records over keys k0..k(keys-1), some
// of them tombstones, and returns every record written.
func fillKeyed(t *testing.T, l *Log, rng *rand.Rand, n, keys int, ts int64) []testRecord {
	var all []testRecord
	for i := range n {
		var recs []kv
		for j := range 1 + rng.IntN(3) {
			r := kv{key: fmt.Sprintf("k%d", rng.IntN(keys)), value: []byte(fmt.Sprintf("v%d-%d", i, j))}
			if rng.IntN(8) == 0 {
				r.value = nil
			}
			recs = append(recs, r)
		}
		info := mustAppend(t, l, keyedBatch(ts, recs...), 0)
		for j, r := range recs {
			all = append(all, testRecord{offset: info.FirstOffset + int64(j), key: r.key, value: r.value})
		}
	}
	return all
}

// expectCompacted returns the records that must survive compaction of
// [0, cleanEnd), tombstones kept.
func expectCompacted(all []testRecord, cleanEnd int64) []testRecord {
	latest := map[string]int64{}
	for _, r := range all {
		if r.offset < cleanEnd {
			latest[r.key] = r.offset
		}
	}
	var want []testRecord
	for _, r := range all {
		if r.offset >= cleanEnd || latest[r.key] == r.offset {
			want = append(want, r)
		}
	}
	return want
}

func sameRecords(t *testing.T, got, want []testRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.offset != w.offset || g.key != w.key || !bytes.Equal(g.value, w.value) || (g.value == nil) != (w.value == nil) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
	}
}

// cleanableEnd is where the segments Compact may clean below bound end.
func cleanableEnd(l *Log, bound int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.segments[0].baseOffset
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.nextOffset > bound {
			break
		}
		end = s.nextOffset
	}
	return end
}

func TestCompact(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		defer func() { l.Close() }()
		rng := rand.New(rand.NewPCG(1, uint64(cfg.SegmentBytes)))
		all := fillKeyed(t, l, rng, 300, 25, time.Now().UnixMilli())
		leo := l.EndOffset()
		bound := leo * 3 / 4
		cleanEnd := cleanableEnd(l, bound)
		before := readAllBatches(t, l)
		sameRecords(t, decodeAll(t, before, 0), all)

		stats, err := l.Compact(CompactOptions{UpperBound: bound, DeleteRetentionMs: -1})
		if err != nil {
			t.Fatalf("Compact: %v", err)
		}
		want := expectCompacted(all, cleanEnd)
		if cleanEnd > 0 && (stats.SegmentsCleaned == 0 || stats.RecordsRemoved != len(all)-len(want)) {
			t.Fatalf("stats %+v, want %d records removed", stats, len(all)-len(want))
		}
		if cleanEnd == 0 && stats.SegmentsCleaned != 0 {
			t.Fatalf("cleaned %+v with nothing cleanable", stats)
		}
		if l.EndOffset() != leo {
			t.Fatalf("LEO %d after compaction, was %d", l.EndOffset(), leo)
		}
		after := readAllBatches(t, l)
		sameRecords(t, decodeAll(t, after, 0), want)

		// Everything at and above the cleaned range is byte for byte the same.
		tail := func(b []byte) []byte {
			for len(b) > 0 {
				h, _ := ParseBatchHeader(b)
				if h.BaseOffset >= cleanEnd {
					return b
				}
				b = b[h.Size():]
			}
			return b
		}
		if !bytes.Equal(tail(before), tail(after)) {
			t.Fatalf("batches at or above %d changed", cleanEnd)
		}

		// Reads at every offset start with the batch holding it (the next
		// retained record at or after it).
		for off := int64(0); off < leo; off += 7 {
			b, err := l.Read(off, leo, 1, true)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			h, err := ParseBatchHeader(b)
			if err != nil || h.BaseOffset > off || h.LastOffset() < off {
				t.Fatalf("Read(%d): batch [%d, %d], err %v", off, h.BaseOffset, h.LastOffset(), err)
			}
		}

		// Compacting again removes nothing; a reopened log reads the same.
		if stats, err := l.Compact(CompactOptions{UpperBound: bound, DeleteRetentionMs: -1}); err != nil || stats.RecordsRemoved != 0 {
			t.Fatalf("second Compact: %+v, %v", stats, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.dir, cfg)
		if got := readAllBatches(t, l); !bytes.Equal(got, after) {
			t.Fatal("reopened log differs from the compacted one")
		}
		// Appends continue after compaction.
		mustAppend(t, l, keyedBatch(time.Now().UnixMilli(), kv{"k1", []byte("new")}), 0)
	})
}

func TestCompactTombstones(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		if cfg.SegmentBytes > 1024 {
			t.Skip("needs rolled segments")
		}
		clock := newFakeClock()
		cfg.Now = clock.Now
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		ts := clock.Ms()
		mustAppend(t, l, keyedBatch(ts, kv{"a", []byte("1")}, kv{"b", []byte("1")}), 0)
		mustAppend(t, l, keyedBatch(ts, kv{"a", nil}), 0)
		mustAppend(t, l, keyedBatch(ts, kv{"c", []byte("1")}, kv{"b", nil}), 0)
		for range 20 { // roll past them
			mustAppend(t, l, keyedBatch(ts, kv{"d", []byte("0123456789")}), 0)
		}
		leo := l.EndOffset()
		opts := CompactOptions{UpperBound: leo, DeleteRetentionMs: time.Hour.Milliseconds()}
		if _, err := l.Compact(opts); err != nil {
			t.Fatal(err)
		}
		has := func(recs []testRecord, key string, tombstone bool) bool {
			for _, r := range recs {
				if r.key == key && (r.value == nil) == tombstone {
					return true
				}
			}
			return false
		}
		recs := decodeAll(t, readAllBatches(t, l), 0)
		if !has(recs, "a", true) || !has(recs, "b", true) || has(recs, "a", false) || has(recs, "b", false) || !has(recs, "c", false) {
			t.Fatalf("before delete.retention.ms: %+v", recs)
		}
		clock.Advance(2 * time.Hour)
		stats, err := l.Compact(opts)
		if err != nil {
			t.Fatal(err)
		}
		if stats.TombstonesRemoved != 2 {
			t.Fatalf("stats %+v, want 2 tombstones removed", stats)
		}
		recs = decodeAll(t, readAllBatches(t, l), 0)
		if has(recs, "a", true) || has(recs, "b", true) || !has(recs, "c", false) || !has(recs, "d", false) {
			t.Fatalf("after delete.retention.ms: %+v", recs)
		}
		if l.EndOffset() != leo {
			t.Fatalf("LEO moved to %d from %d", l.EndOffset(), leo)
		}
	})
}

// TestCompactCrash crashes the machine at every step of a segment swap and
// checks that the reopened log holds the old or the compacted content,
// the compacted one once the swap was committed, and never loses a key's
// latest value.
func TestCompactCrash(t *testing.T) {
	const dir = "/data/topic-0"
	build := func(t *testing.T, seed uint64) (*MemFS, *Log, Config, []testRecord) {
		m := NewMemFS(seed)
		cfg := testConfig(m, newFakeClock())
		cfg.SegmentBytes = 2048
		l := mustOpen(t, dir, cfg)
		all := fillKeyed(t, l, rand.New(rand.NewPCG(7, 7)), 200, 10, 1000)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		return m, l, cfg, all
	}
	_, ref, _, all := build(t, 1)
	old := readAllBatches(t, ref)
	if _, err := ref.Compact(CompactOptions{UpperBound: ref.EndOffset(), DeleteRetentionMs: -1}); err != nil {
		t.Fatal(err)
	}
	compacted := readAllBatches(t, ref)
	ref.Close()
	if bytes.Equal(old, compacted) {
		t.Fatal("nothing compacted")
	}
	latest := map[string][]byte{}
	for _, r := range all {
		latest[r.key] = r.value
	}

	errCrash := errors.New("crash")
	steps := []string{"written", "synced", "renamed-swap", "committed", "renamed.index", "renamed.timeindex", "renamed.log", "done"}
	for i, step := range steps {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("%s/%d", step, seed), func(t *testing.T) {
				m, l, cfg, _ := build(t, seed)
				// Crash in the first segment's swap.
				compactHook = func(s string) error {
					if s == step {
						return errCrash
					}
					return nil
				}
				defer func() { compactHook = nil }()
				if _, err := l.Compact(CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}); !errors.Is(err, errCrash) {
					t.Fatalf("Compact: %v, want the crash", err)
				}
				compactHook = nil
				m.Crash()
				l = mustOpen(t, dir, cfg)
				defer l.Close()
				got := readAllBatches(t, l)
				recs := decodeAll(t, got, 0)
				final := map[string][]byte{}
				for _, r := range recs {
					final[r.key] = r.value
				}
				for k, v := range latest {
					if w, ok := final[k]; !ok || !bytes.Equal(w, v) {
						t.Fatalf("key %s: latest value %q, want %q", k, w, v)
					}
				}
				// The first segment is the old or the new one; later
				// segments are untouched.
				firstEnd := func(b []byte) int {
					n := 0
					for n < len(b) {
						h, _ := ParseBatchHeader(b[n:])
						if h.BaseOffset >= l.segments[1].baseOffset {
							break
						}
						n += h.Size()
					}
					return n
				}
				first := got[:firstEnd(got)]
				isOld := bytes.Equal(got, old)
				isNew := bytes.HasPrefix(compacted, first) && bytes.Equal(got[len(first):], old[len(old)-(len(got)-len(first)):])
				if !isOld && !isNew {
					t.Fatal("first segment is neither the old nor the compacted one")
				}
				if committed := i >= 3; committed && !isNew {
					t.Fatal("a committed swap was lost")
				}
				// The log stays usable: compacting again gives the
				// reference result.
				if _, err := l.Compact(CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}); err != nil {
					t.Fatalf("Compact after recovery: %v", err)
				}
				if !bytes.Equal(readAllBatches(t, l), compacted) {
					t.Fatal("compaction after recovery differs from the reference")
				}
				names, _ := m.ReadDir(dir)
				for _, n := range names {
					if bytes.HasSuffix([]byte(n), []byte(cleanedSuffix)) || bytes.HasSuffix([]byte(n), []byte(swapSuffix)) {
						t.Fatalf("leftover %s", n)
					}
				}
			})
		}
	}
}

// TestCompactConcurrentReads reads and appends while Compact swaps
// segments in (run with -race).
func TestCompactConcurrentReads(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		all := fillKeyed(t, l, rand.New(rand.NewPCG(3, 3)), 200, 10, 1000)
		latest := map[string][]byte{}
		for _, r := range all {
			latest[r.key] = r.value
		}
		done := make(chan struct{})
		errs := make(chan error, 1)
		go func() {
			defer close(errs)
			for {
				select {
				case <-done:
					return
				default:
				}
				b, err := l.Read(0, l.EndOffset(), 1<<30, true)
				if err == nil {
					_, err = splitBatchesErr(b)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		if _, err := l.Compact(CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}); err != nil {
			t.Fatal(err)
		}
		close(done)
		if err := <-errs; err != nil {
			t.Fatalf("concurrent read: %v", err)
		}
		final := map[string][]byte{}
		for _, r := range decodeAll(t, readAllBatches(t, l), 0) {
			final[r.key] = r.value
		}
		for k, v := range latest {
			if !bytes.Equal(final[k], v) {
				t.Fatalf("key %s: %q, want %q", k, final[k], v)
			}
		}
	})
}

func splitBatchesErr(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err == nil {
			err = VerifyCRC(b, &h)
		}
		if err != nil {
			return n, err
		}
		b = b[h.Size():]
		n++
	}
	return n, nil
}
