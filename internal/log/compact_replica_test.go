package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestCompactFollowerCatchesUp: followers that stopped at every offset of
// a leader's log catch up after the leader compacted it, though the leader
// merged the emptied batches around their log end offsets into filler
// batches. Each reads from the leader at its LEO and appends what it gets
// with AppendReplicated, as the replica fetcher does, and must reach the
// leader's LEO and the leader's latest value of every key.
func TestCompactFollowerCatchesUp(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			cfg := testConfig(env.fs, newFakeClock())
			cfg.SegmentBytes = 1024
			leader := mustOpen(t, env.dir, cfg)
			defer leader.Close()
			// Runs of one-record batches overwriting the same few keys, in
			// two leader epochs: most of them become empty and merge into
			// fillers (one run per epoch at least).
			var all []testRecord
			appendKV := func(epoch int32, key, value string) {
				info := mustAppend(t, leader, keyedBatch(1000, kv{key, []byte(value)}), epoch)
				all = append(all, testRecord{offset: info.FirstOffset, key: key, value: []byte(value)})
			}
			for i := range 30 {
				appendKV(0, "a", fmt.Sprint("a", i))
			}
			if err := leader.AssignEpoch(1); err != nil {
				t.Fatal(err)
			}
			for i := range 30 {
				appendKV(1, fmt.Sprint("k", i%3), fmt.Sprint("v", i))
			}
			for i := range 20 { // roll past them
				appendKV(1, fmt.Sprint("tail", i), "0123456789")
			}
			leo := leader.EndOffset()

			// Followers stopped at every offset (every batch boundary).
			followers := make([]*Log, leo)
			defer func() {
				for _, f := range followers {
					if f != nil {
						f.Close()
					}
				}
			}()
			for p := range leo {
				f := mustOpen(t, filepath.Join(filepath.Dir(env.dir), fmt.Sprint("follower-", p)), cfg)
				if p > 0 {
					b, err := leader.Read(0, p, 1<<30, true)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.AppendReplicated(b); err != nil {
						t.Fatal(err)
					}
				}
				if f.EndOffset() != p {
					t.Fatalf("follower %d: LEO %d", p, f.EndOffset())
				}
				followers[p] = f
			}

			stats, err := leader.Compact(CompactOptions{UpperBound: leo, DeleteRetentionMs: -1})
			if err != nil {
				t.Fatal(err)
			}
			fillers := 0
			for _, h := range splitBatches(t, readAllBatches(t, leader)) {
				if h.RecordCount == 0 && h.LastOffsetDelta > 0 {
					fillers++
				}
			}
			if stats.SegmentsCleaned == 0 || fillers < 2 {
				t.Fatalf("compaction made %d fillers (%+v); the test needs some", fillers, stats)
			}
			want := map[string][]byte{}
			for _, r := range decodeAll(t, readAllBatches(t, leader), 0) {
				want[r.key] = r.value
			}

			for p, f := range followers {
				for f.EndOffset() < leo {
					from := f.EndOffset()
					b, err := leader.Read(from, leo, 200, true) // small fetches: many rounds
					if err != nil {
						t.Fatalf("follower %d: Read(%d): %v", p, from, err)
					}
					if _, err := f.AppendReplicated(b); err != nil {
						t.Fatalf("follower %d at %d: %v", p, from, err)
					}
					if f.EndOffset() <= from {
						t.Fatalf("follower %d: stuck at %d", p, from)
					}
				}
				if f.EndOffset() != leo {
					t.Fatalf("follower %d: LEO %d, leader's %d", p, f.EndOffset(), leo)
				}
				got := map[string][]byte{}
				for _, r := range decodeAll(t, readAllBatches(t, f), 0) {
					got[r.key] = r.value
				}
				for k, v := range want {
					if !bytes.Equal(got[k], v) {
						t.Fatalf("follower %d: key %s = %q, want %q", p, k, got[k], v)
					}
				}
				if fmt.Sprint(f.Epochs()) != fmt.Sprint(leader.Epochs()) {
					t.Fatalf("follower %d: epochs %v, leader's %v", p, f.Epochs(), leader.Epochs())
				}
				// The follower's log survives a reopen (recovery accepts
				// what it appended).
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				f = mustOpen(t, f.Dir(), cfg)
				if f.EndOffset() != leo {
					t.Fatalf("follower %d reopened: LEO %d", p, f.EndOffset())
				}
				followers[p] = f
			}
		})
	}
}

// TestAppendReplicatedStraddling: of the batches that start below the LEO
// and end at or above it, only a compaction filler is accepted, trimmed to
// start at the LEO; a batch with records, an idempotent producer's empty
// header or a control batch is still ErrNonMonotonic.
func TestAppendReplicatedStraddling(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			cfg := testConfig(env.fs, newFakeClock())
			l := mustOpen(t, env.dir, cfg)
			defer l.Close()
			b0 := newBatch(3, 10, 100).at(0, 2).encode()
			if _, err := l.AppendReplicated(b0); err != nil {
				t.Fatal(err)
			}
			filler := (&fillerRun{base: 1, last: 5, epoch: 2, baseTs: 100, maxTs: 200}).encode()
			// An idempotent batch whose records compaction removed all.
			produced := newBatch(5, 1, 0).producer(7, 0, 0).at(1, 2).encode()
			producedH, _ := ParseBatchHeader(produced)
			idem := rewriteBatch(produced, &producedH, nil)
			control := bytesWithAttr(filler, AttrControl)
			for name, b := range map[string][]byte{
				"records":          newBatch(5, 10, 100).at(1, 2).encode(),
				"idempotent empty": idem,
				"control":          control,
			} {
				if _, err := l.AppendReplicated(b); !errors.Is(err, ErrNonMonotonic) {
					t.Fatalf("%s: got %v, want ErrNonMonotonic", name, err)
				}
			}
			next := newBatch(2, 10, 300).at(6, 2).encode()
			if _, err := l.AppendReplicated(concat(filler, next)); err != nil {
				t.Fatal(err)
			}
			hs := splitBatches(t, readAllBatches(t, l))
			if len(hs) != 3 || hs[1].BaseOffset != 3 || hs[1].LastOffset() != 5 || hs[1].RecordCount != 0 ||
				hs[1].MaxTimestamp != 200 || hs[1].PartitionLeaderEpoch != 2 || hs[2].BaseOffset != 6 || l.EndOffset() != 8 {
				t.Fatalf("batches %+v, LEO %d", hs, l.EndOffset())
			}
		})
	}
}

// bytesWithAttr returns a copy of the empty batch b with attribute bits
// attr set and its CRC recomputed.
func bytesWithAttr(b []byte, attr int16) []byte {
	c := bytes.Clone(b)
	a := binary.BigEndian.Uint16(c[offAttributes:]) | uint16(attr)
	binary.BigEndian.PutUint16(c[offAttributes:], a)
	binary.BigEndian.PutUint32(c[offCRC:], crcOf(c[offAttributes:]))
	return c
}
