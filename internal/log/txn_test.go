package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMarkerBatchMatchesKmsg checks the marker batch against franz-go's
// decoders of control records.
func TestMarkerBatchMatchesKmsg(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b := EncodeMarkerBatch(Marker{ProducerID: 9, ProducerEpoch: 3, CoordinatorEpoch: 77, Commit: commit, Timestamp: 1234})
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("kmsg cannot decode: %v", err)
		}
		if rb.Attributes != 0x30 || rb.ProducerID != 9 || rb.ProducerEpoch != 3 || rb.NumRecords != 1 || rb.FirstSequence != -1 || rb.MaxTimestamp != 1234 {
			t.Fatalf("batch %+v", rb)
		}
		var r kmsg.Record
		if err := r.ReadFrom(rb.Records); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(r.Key); err != nil {
			t.Fatal(err)
		}
		want := kmsg.ControlRecordKeyTypeAbort
		if commit {
			want = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Type != want {
			t.Fatalf("key type %v, want %v", key.Type, want)
		}
		var value kmsg.EndTxnMarker
		if err := value.ReadFrom(r.Value); err != nil {
			t.Fatal(err)
		}
		if value.CoordinatorEpoch != 77 {
			t.Fatalf("coordinator epoch %d", value.CoordinatorEpoch)
		}
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyCRC(b, &h); err != nil {
			t.Fatal(err)
		}
		m, ok := ParseMarker(&h, b)
		if !ok || m.Commit != commit || m.CoordinatorEpoch != 77 || m.ProducerID != 9 || m.ProducerEpoch != 3 {
			t.Fatalf("ParseMarker = %+v, %v", m, ok)
		}
	}
}

func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	return newBatch(n, 10, 1000).producer(pid, epoch, seq).transactional().encode()
}

func marker(pid int64, epoch int16, commit bool) Marker {
	return Marker{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: 1, Commit: commit, Timestamp: 2000}
}

func mustMarker(t testing.TB, l *Log, m Marker) AppendInfo {
	t.Helper()
	info, err := l.AppendMarker(m, 0)
	if err != nil {
		t.Fatalf("AppendMarker(%+v): %v", m, err)
	}
	return info
}

// TestTransactionsLastStableOffset follows the last stable offset and the
// aborted transactions through interleaved transactions, a restart after
// a clean close and one after a crash (recovery rebuilds both).
func TestTransactionsLastStableOffset(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg.ProducerIDExpirationMs = math.MaxInt64 // the batches' timestamps are from 1970
		l := mustOpen(t, env.dir, cfg)
		mustAppend(t, l, newBatch(2, 10, 1000).encode(), 0) // 0-1, plain
		a1 := mustAppend(t, l, txnBatch(1, 0, 0, 3), 0)     // 2-4, producer 1
		if a1.FirstOffset != 2 {
			t.Fatalf("first offset %d", a1.FirstOffset)
		}
		mustAppend(t, l, txnBatch(2, 0, 0, 2), 0) // 5-6, producer 2
		if got := l.LastStableOffset(7); got != 2 {
			t.Fatalf("LSO with two open transactions = %d, want 2", got)
		}
		if got := l.LastStableOffset(1); got != 1 {
			t.Fatalf("LSO below the high watermark = %d, want 1", got)
		}
		mustAppend(t, l, txnBatch(1, 0, 3, 1), 0) // 7, producer 1
		abort := mustMarker(t, l, marker(1, 0, false))
		if abort.FirstOffset != 8 {
			t.Fatalf("abort marker at %d, want 8", abort.FirstOffset)
		}
		// The aborted transaction holds the LSO until its marker is below
		// the high watermark.
		if got := l.LastStableOffset(8); got != 2 {
			t.Fatalf("LSO with the abort marker unreplicated = %d, want 2", got)
		}
		if got := l.LastStableOffset(9); got != 5 {
			t.Fatalf("LSO after the abort marker replicated = %d, want 5", got)
		}
		want := []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 8, LastStableOffset: 5}}
		if got := l.AbortedTxns(0, 9); !slices.Equal(got, want) {
			t.Fatalf("AbortedTxns = %+v, want %+v", got, want)
		}
		if got := l.AbortedTxns(9, 20); len(got) != 0 {
			t.Fatalf("AbortedTxns past the marker = %+v", got)
		}
		if got := l.AbortedTxns(0, 2); len(got) != 0 {
			t.Fatalf("AbortedTxns before the transaction = %+v", got)
		}
		mustMarker(t, l, marker(2, 0, true)) // 9
		if got := l.LastStableOffset(10); got != 10 {
			t.Fatalf("LSO with everything decided = %d, want 10", got)
		}
		// A new transaction of producer 1 and a non-transactional batch of
		// it while the transaction is open.
		mustAppend(t, l, txnBatch(1, 0, 4, 1), 0) // 10
		if _, err := l.Append(newBatch(1, 10, 1000).producer(1, 0, 5).encode(), 0); !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("non-transactional batch in an open transaction: %v, want ErrInvalidTxnState", err)
		}
		if got := l.LastStableOffset(11); got != 10 {
			t.Fatalf("LSO = %d, want 10", got)
		}
		check := func(l *Log, what string) {
			t.Helper()
			if got := l.LastStableOffset(11); got != 10 {
				t.Fatalf("%s: LSO = %d, want 10", what, got)
			}
			if got := l.AbortedTxns(0, 11); !slices.Equal(got, want) {
				t.Fatalf("%s: AbortedTxns = %+v, want %+v", what, got, want)
			}
			ps, ok := l.Producer(1)
			if !ok || ps.TxnStartOffset != 10 || ps.CoordinatorEpoch != 1 || ps.LastSequence != 4 {
				t.Fatalf("%s: producer 1 = %+v, %v", what, ps, ok)
			}
			ps, ok = l.Producer(2)
			if !ok || ps.TxnStartOffset != -1 {
				t.Fatalf("%s: producer 2 = %+v, %v", what, ps, ok)
			}
		}
		check(l, "before close")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.dir, cfg)
		check(l, "after a clean close")
		if env.mem == nil {
			l.Close()
			return
		}
		// A crash: every file as synced; the log was closed cleanly, so
		// force a full scan by losing the recovery point.
		l.Close()
		if err := env.fs.Remove(join(env.dir, recoveryPointFile)); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.dir, cfg)
		check(l, "after recovery from the first segment")
		l.Close()
	})
}

// TestTransactionIndexRebuilt: a damaged transaction index is rebuilt.
func TestTransactionIndexRebuilt(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		var want []AbortedTxn
		for i := range 6 {
			pid := int64(i % 2)
			seq := int32(i/2) * 2
			info := mustAppend(t, l, txnBatch(pid, 0, seq, 2), 0)
			m := mustMarker(t, l, marker(pid, 0, i%3 != 0))
			if i%3 == 0 {
				want = append(want, AbortedTxn{ProducerID: pid, FirstOffset: info.FirstOffset, LastOffset: m.FirstOffset, LastStableOffset: m.FirstOffset + 1})
			}
			mustAppend(t, l, newBatch(1, 10, 1000).encode(), 0)
		}
		leo := l.EndOffset()
		if got := l.AbortedTxns(0, leo); !slices.Equal(got, want) {
			t.Fatalf("AbortedTxns = %+v, want %+v", got, want)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		names, err := env.fs.ReadDir(env.dir)
		if err != nil {
			t.Fatal(err)
		}
		damaged := 0
		for _, name := range names {
			if _, ok := parseOffsetFileName(name, txnIndexSuffix); ok {
				f, err := env.fs.OpenFile(join(env.dir, name), os.O_RDWR|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Truncate(txnIndexEntrySize - 1); err != nil {
					t.Fatal(err)
				}
				f.Close()
				damaged++
			}
		}
		if damaged == 0 {
			t.Fatal("no transaction index written")
		}
		l = mustOpen(t, env.dir, cfg)
		defer l.Close()
		if got := l.AbortedTxns(0, leo); !slices.Equal(got, want) {
			t.Fatalf("AbortedTxns after rebuilding = %+v, want %+v", got, want)
		}
	})
}

// TestTransactionsTruncate: truncating away a marker reopens the
// transaction and drops its index entry.
func TestTransactionsTruncate(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		mustAppend(t, l, txnBatch(5, 0, 0, 2), 0) // 0-1
		m := mustMarker(t, l, marker(5, 0, false))
		if len(l.AbortedTxns(0, 10)) != 1 {
			t.Fatal("no aborted transaction")
		}
		if err := l.Truncate(m.FirstOffset); err != nil {
			t.Fatal(err)
		}
		if got := l.AbortedTxns(0, 10); len(got) != 0 {
			t.Fatalf("AbortedTxns after truncating the marker = %+v", got)
		}
		if got := l.LastStableOffset(l.EndOffset()); got != 0 {
			t.Fatalf("LSO = %d, want 0 (the transaction is open again)", got)
		}
		// The follower gets the leader's commit marker instead.
		c := EncodeMarkerBatch(marker(5, 0, true))
		SetBaseOffset(c, m.FirstOffset)
		SetPartitionLeaderEpoch(c, 1)
		if _, err := l.AppendReplicated(c); err != nil {
			t.Fatal(err)
		}
		if got := l.LastStableOffset(l.EndOffset()); got != l.EndOffset() {
			t.Fatalf("LSO = %d, want %d", got, l.EndOffset())
		}
		if got := l.AbortedTxns(0, 10); len(got) != 0 {
			t.Fatalf("AbortedTxns after a commit = %+v", got)
		}
	})
}

// TestTransactionFencing: markers and batches of older producer epochs and
// markers of older coordinators are refused; a marker's epoch bump
// (transactions v2) restarts sequences at 0.
func TestTransactionFencing(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		mustAppend(t, l, txnBatch(3, 4, 0, 1), 0)
		m := marker(3, 4, true)
		m.CoordinatorEpoch = 5
		mustMarker(t, l, m)
		m.CoordinatorEpoch = 4
		if _, err := l.AppendMarker(m, 0); !errors.Is(err, ErrCoordinatorFenced) {
			t.Fatalf("marker of an older coordinator: %v", err)
		}
		m.CoordinatorEpoch, m.ProducerEpoch = 5, 3
		if _, err := l.AppendMarker(m, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("marker of an older producer epoch: %v", err)
		}
		// Transactions v2: the commit bumps the epoch to 5.
		mustAppend(t, l, txnBatch(3, 4, 1, 1), 0)
		m.ProducerEpoch = 5
		mustMarker(t, l, m)
		if _, err := l.Append(txnBatch(3, 4, 2, 1), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("zombie batch after the bump: %v", err)
		}
		if _, err := l.Append(txnBatch(3, 5, 1, 1), 0); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("bumped epoch not starting at 0: %v", err)
		}
		mustAppend(t, l, txnBatch(3, 5, 0, 1), 0)
		if _, err := l.Append(EncodeMarkerBatch(m), 0); err == nil {
			t.Fatal("Append took a control batch")
		}
	})
}

// inTxn sets the transactional attribute of test batch b.
func inTxn(b []byte) []byte {
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|AttrTransactional)
	return fixTestCRC(b)
}

// TestCompactionRemovesAbortedRecords: compaction drops the records of
// aborted transactions, which never supersede committed ones, and keeps
// committed transactional records and markers.
func TestCompactionRemovesAbortedRecords(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			cfg := testConfig(env.fs, newFakeClock())
			cfg.SegmentBytes = 100 // a segment per batch
			l := mustOpen(t, env.dir, cfg)
			defer l.Close()
			mustAppend(t, l, keyedBatch(1000, kv{"k", []byte("committed")}), 0)                             // 0
			mustAppend(t, l, inTxn(withProducer(keyedBatch(1000, kv{"k", []byte("aborted")}), 1, 0, 0)), 0) // 1
			mustAppend(t, l, inTxn(withProducer(keyedBatch(1000, kv{"j", []byte("txn")}), 2, 0, 0)), 0)     // 2
			mustMarker(t, l, marker(1, 0, false))                                                           // 3
			mustMarker(t, l, marker(2, 0, true))                                                            // 4
			mustAppend(t, l, keyedBatch(1000, kv{"other", []byte("x")}), 0)                                 // 5
			stats, err := l.Compact(CompactOptions{UpperBound: l.LastStableOffset(l.EndOffset()), DeleteRetentionMs: -1})
			if err != nil {
				t.Fatal(err)
			}
			if stats.AbortedRemoved != 1 || stats.RecordsRemoved != 1 {
				t.Fatalf("stats %+v, want the one aborted record removed", stats)
			}
			var got []string
			for _, r := range decodeAll(t, readAllBatches(t, l), 0) {
				if r.offset != 3 && r.offset != 4 { // markers
					got = append(got, fmt.Sprintf("%d:%s=%s", r.offset, r.key, r.value))
				}
			}
			want := []string{"0:k=committed", "2:j=txn", "5:other=x"}
			if !slices.Equal(got, want) {
				t.Fatalf("records after compaction = %q, want %q", got, want)
			}
			// Producer state still knows producer 1 (its batch is kept empty).
			if _, ok := l.Producer(1); !ok {
				t.Fatal("producer 1 forgotten")
			}
		})
	}
}
