package records

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
)

var allCodecs = []struct {
	name  string
	codec int
}{
	{"none", codecNone},
	{"gzip", codecGzip},
	{"snappy", codecSnappy},
	{"snappy-xerial", codecXerial},
	{"lz4", codecLZ4},
	{"zstd", codecZstd},
}

// kinds are the six errors the broker maps to Kafka codes.
var kinds = []error{ErrCorrupt, ErrMessageTooLarge, ErrRecordListTooLarge, ErrInvalidTimestamp, ErrUnsupportedCompression, ErrInvalidRecord}

// kindOf returns the one kind err belongs to, failing if it has none or
// several.
func kindOf(t testing.TB, err error) error {
	t.Helper()
	var found error
	for _, k := range kinds {
		if errors.Is(err, k) {
			if found != nil {
				t.Fatalf("error %q is both %q and %q", err, found, k)
			}
			found = k
		}
	}
	if found == nil {
		t.Fatalf("error %q belongs to no kind", err)
	}
	return found
}

func TestValidateAcceptsEveryCodec(t *testing.T) {
	shapes := []struct {
		name string
		rs   []kmsg.Record
	}{
		{"1x0B", recs(1, 0)},
		{"1x100B", recs(1, 100)},
		{"100x100B", recs(100, 100)},
		{"100x1KiB", recs(100, 1024)},
		{"10x100KiB", recs(10, 100<<10)}, // several xerial chunks and lz4 blocks
		{"nulls", []kmsg.Record{{OffsetDelta: 0}, {OffsetDelta: 1, Key: []byte{}, Value: []byte{}}}},
		{"headers", []kmsg.Record{{Headers: []kmsg.Header{{Key: "a"}, {Key: "", Value: []byte("x")}, {Key: "long", Value: make([]byte, 300)}}}}},
	}
	for _, c := range allCodecs {
		for _, s := range shapes {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				b := build(t, batchSpec{codec: c.codec, records: s.rs})
				res, err := Validate(b, testLimits())
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				raw := encodeRecords(s.rs)
				wantCodec := c.codec
				if wantCodec == codecXerial {
					wantCodec = codecSnappy
				}
				var wantMax int64 = -1
				for _, r := range s.rs {
					wantMax = max(wantMax, testNow+r.TimestampDelta64)
				}
				got := []any{res.RecordCount, res.Compression, res.UncompressedBytes, res.MaxTimestamp, res.Header.Size(), res.ProducerID, res.ProducerEpoch, res.BaseSequence, res.Transactional, res.LogAppendTime, res.Now}
				want := []any{int32(len(s.rs)), wantCodec, len(raw), wantMax, len(b), int64(-1), int16(-1), int32(-1), false, false, testNow}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("result %v, want %v", got, want)
				}
			})
		}
	}
}

func TestValidateProducerFields(t *testing.T) {
	tests := []struct {
		name      string
		spec      batchSpec
		wantPID   int64
		wantEpoch int16
		wantSeq   int32
		wantTxn   bool
	}{
		{"plain", batchSpec{}, -1, -1, -1, false},
		{"idempotent", idem(batchSpec{}), 7, 1, 42, false},
		{"transactional", idem(batchSpec{attrs: klog.AttrTransactional}), 7, 1, 42, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.records = recs(3, 10)
			res, err := Validate(build(t, tt.spec), testLimits())
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(res.ProducerID, res.ProducerEpoch, res.BaseSequence, res.Transactional)
			want := fmt.Sprint(tt.wantPID, tt.wantEpoch, tt.wantSeq, tt.wantTxn)
			if got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

// TestValidateRejects damages a valid batch in one way at a time and checks
// the error it gets, and so the Kafka code the broker will answer.
func TestValidateRejects(t *testing.T) {
	valid := func(t *testing.T) []byte { return build(t, batchSpec{records: recs(3, 20)}) }
	// withRecords builds an uncompressed batch around hand-made records
	// (count from the header unless set).
	withRecords := func(count int32, rs ...[]byte) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			var raw []byte
			for _, r := range rs {
				raw = append(raw, r...)
			}
			return build(t, batchSpec{rawRecords: raw, count: count})
		}
	}
	rec := func(r kmsg.Record) []byte { return encodeRecord(nil, r) }

	tests := []struct {
		name  string
		input func(t *testing.T) []byte
		lim   func(*Limits)
		want  error // the refinement; its kind is checked too
	}{
		// Framing.
		{"empty", func(*testing.T) []byte { return nil }, nil, ErrEmpty},
		{"shorter than a length prefix", func(t *testing.T) []byte { return valid(t)[:7] }, nil, ErrTruncated},
		{"shorter than the magic", func(t *testing.T) []byte { return valid(t)[:16] }, nil, ErrTruncated},
		{"truncated batch", func(t *testing.T) []byte { b := valid(t); return b[:len(b)-1] }, nil, ErrTruncated},
		{"truncated header", func(t *testing.T) []byte { return valid(t)[:40] }, nil, ErrTruncated},
		{"length below legacy minimum", func(t *testing.T) []byte { return put32(valid(t), offLength, 13) }, nil, ErrBadLength},
		{"negative length", func(t *testing.T) []byte { return put32(valid(t), offLength, -1) }, nil, ErrBadLength},
		{"length shorter than v2 header", func(t *testing.T) []byte { return put32(valid(t), offLength, 48) }, nil, ErrBadLength},
		{"length beyond buffer", func(t *testing.T) []byte { return put32(valid(t), offLength, 1<<30) }, nil, ErrTruncated},
		{"magic 3", func(t *testing.T) []byte { b := valid(t); b[offMagic] = 3; return b }, nil, ErrInvalidMagic},
		{"magic -1", func(t *testing.T) []byte { b := valid(t); b[offMagic] = 0xff; return b }, nil, ErrInvalidMagic},
		{"magic 1", func(t *testing.T) []byte { b := valid(t); b[offMagic] = 1; return b }, nil, ErrUnsupportedMagic},
		{"magic 0", func(t *testing.T) []byte { b := valid(t); b[offMagic] = 0; return b }, nil, ErrUnsupportedMagic},
		{"trailing garbage", func(t *testing.T) []byte { return append(valid(t), 1, 2, 3) }, nil, ErrTrailingBytes},
		{"two batches", func(t *testing.T) []byte { return append(valid(t), valid(t)...) }, nil, ErrTrailingBytes},

		// The log's checks.
		{"base offset 5", func(t *testing.T) []byte { return put64(valid(t), 0, 5) }, nil, ErrBaseOffset},
		{"base offset -1", func(t *testing.T) []byte { return put64(valid(t), 0, -1) }, nil, ErrBaseOffset},
		{"bad CRC", func(t *testing.T) []byte { b := valid(t); b[len(b)-1] ^= 1; return b }, nil, ErrCRC},
		{"bad CRC field", func(t *testing.T) []byte { b := valid(t); b[17] ^= 0x80; return b }, nil, ErrCRC},
		{"oversize batch", valid, func(l *Limits) { l.MaxMessageBytes = 100 }, ErrMessageTooLarge},
		{"larger than a segment", valid, func(l *Limits) { l.MaxSegmentBytes = 100 }, ErrRecordListTooLarge},
		{"codec 5", func(t *testing.T) []byte { return fixCRC(put16(valid(t), offAttributes, 5)) }, nil, ErrUnsupportedCompression},
		{"codec 7", func(t *testing.T) []byte { return fixCRC(put16(valid(t), offAttributes, 7)) }, nil, ErrUnsupportedCompression},

		// The batch's fields.
		{"record count 0", func(t *testing.T) []byte {
			return fixCRC(put32(put32(valid(t), offRecordCount, 0), offLastOffsetDelta, -1))
		}, nil, ErrInvalidRecordCount},
		{"negative last offset delta", func(t *testing.T) []byte { return fixCRC(put32(valid(t), offLastOffsetDelta, -2)) }, nil, ErrInvalidRecordCount},
		{"last offset delta disagrees", func(t *testing.T) []byte { return fixCRC(put32(valid(t), offLastOffsetDelta, 5)) }, nil, ErrInvalidRecordCount},
		{"count larger than records", func(t *testing.T) []byte {
			return fixCRC(put32(put32(valid(t), offRecordCount, 4), offLastOffsetDelta, 3))
		}, nil, ErrInvalidRecordCount},
		{"count smaller than records", func(t *testing.T) []byte {
			return fixCRC(put32(put32(valid(t), offRecordCount, 2), offLastOffsetDelta, 1))
		}, nil, ErrInvalidRecordCount},
		{"huge count", func(t *testing.T) []byte {
			return fixCRC(put32(put32(valid(t), offRecordCount, math.MaxInt32), offLastOffsetDelta, math.MaxInt32-1))
		}, nil, ErrInvalidRecordCount},
		{"control batch", func(t *testing.T) []byte {
			return build(t, idem(batchSpec{attrs: klog.AttrControl | klog.AttrTransactional, records: recs(1, 4)}))
		}, nil, ErrControlBatch},
		{"producer id without sequence", func(t *testing.T) []byte {
			return fixCRC(put32(build(t, idem(batchSpec{records: recs(1, 4)})), offBaseSequence, -1))
		}, nil, ErrProducerFields},
		{"producer id without epoch", func(t *testing.T) []byte {
			return fixCRC(put16(build(t, idem(batchSpec{records: recs(1, 4)})), offProducerEpoch, -1))
		}, nil, ErrProducerFields},
		{"transactional without producer id", func(t *testing.T) []byte {
			return build(t, batchSpec{attrs: klog.AttrTransactional, records: recs(1, 4)})
		}, nil, ErrProducerFields},

		// Records.
		{"offset delta not the index", withRecords(2, rec(kmsg.Record{OffsetDelta: 0}), rec(kmsg.Record{OffsetDelta: 2})), nil, ErrOffsetDelta},
		{"offset deltas from 1", withRecords(1, rec(kmsg.Record{OffsetDelta: 1})), nil, ErrOffsetDelta},
		{"record past the batch", func(t *testing.T) []byte {
			r := rec(kmsg.Record{Value: []byte("hello")})
			return withRecords(1, r[:len(r)-2])(t)
		}, nil, ErrMalformedRecord},
		{"record length varint overflow", withRecords(1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0, 0}), nil, ErrMalformedRecord},
		{"record length varint too wide", withRecords(1, []byte{0x8c, 0x80, 0x80, 0x80, 0x10, 0, 0, 0, 0, 0, 0}), nil, ErrMalformedRecord},
		{"timestamp varlong overflow", withRecords(1, rawRecord([]byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 1, 1, 0})), nil, ErrMalformedRecord},
		{"negative record length", withRecords(1, append(appendVarint(nil, -5), 0, 0, 0, 1, 1, 0)), nil, ErrMalformedRecord},
		{"record length too small", withRecords(1, append(appendVarint(nil, 5), 0, 0, 0, 1, 1)), nil, ErrMalformedRecord},
		{"key length -2", withRecords(1, rawRecord([]byte{0, 0, 0, 3, 1, 0})), nil, ErrMalformedRecord},
		{"key past the record", withRecords(1, rawRecord([]byte{0, 0, 0, 20, 1, 0})), nil, ErrMalformedRecord},
		{"value length -3", withRecords(1, rawRecord([]byte{0, 0, 0, 1, 5, 0})), nil, ErrMalformedRecord},
		{"a million headers claimed", withRecords(1, rawRecord(appendVarint([]byte{0, 0, 0, 1, 1}, 1_000_000))), nil, ErrMalformedRecord},
		{"negative header count", withRecords(1, rawRecord([]byte{0, 0, 0, 1, 1, 1})), nil, ErrMalformedRecord},
		{"null header key", withRecords(1, rawRecord([]byte{0, 0, 0, 1, 1, 2, 1, 1})), nil, ErrMalformedRecord},
		{"header value -2", withRecords(1, rawRecord([]byte{0, 0, 0, 1, 1, 2, 0, 3})), nil, ErrMalformedRecord},
		{"unused bytes in record", withRecords(1, rawRecord([]byte{0, 0, 0, 1, 1, 0, 9, 9})), nil, ErrMalformedRecord},
		{"bytes after the last record", withRecords(1, rec(kmsg.Record{}), []byte{0}), nil, ErrInvalidRecordCount},

		// Topic rules.
		{"compacted without key", func(t *testing.T) []byte {
			return build(t, batchSpec{records: []kmsg.Record{{Key: []byte("k")}, {OffsetDelta: 1}}})
		}, func(l *Limits) { l.Compacted = true }, ErrMissingKey},
		{"timestamp too old", func(t *testing.T) []byte {
			return build(t, batchSpec{baseTimestamp: testNow - 1001, records: recs(1, 1)})
		}, func(l *Limits) { l.MaxTimestampDiffBefore = 1000 }, ErrInvalidTimestamp},
		{"timestamp too new", func(t *testing.T) []byte {
			return build(t, batchSpec{baseTimestamp: testNow + DefaultMaxTimestampDiffAfter + 1, records: recs(1, 1)})
		}, nil, ErrInvalidTimestamp},
		// Kafka computes now-ts in Java longs, which wrap here and reject it
		// too; samsa gets there without overflow.
		{"timestamp near MinInt64", func(t *testing.T) []byte {
			return build(t, batchSpec{baseTimestamp: math.MinInt64 + 10, records: recs(1, 1)})
		}, nil, ErrInvalidTimestamp},
		{"one late record of many", func(t *testing.T) []byte {
			rs := recs(5, 1)
			rs[3].TimestampDelta64 = DefaultMaxTimestampDiffAfter + 1
			return build(t, batchSpec{records: rs})
		}, nil, ErrInvalidTimestamp},
		{"timestamp beats key error", func(t *testing.T) []byte {
			rs := []kmsg.Record{{}, {OffsetDelta: 1, Key: []byte("k"), TimestampDelta64: 2 * DefaultMaxTimestampDiffAfter}}
			return build(t, batchSpec{records: rs})
		}, func(l *Limits) { l.Compacted = true }, ErrInvalidTimestamp},
		{"producer claims LogAppendTime", func(t *testing.T) []byte {
			return build(t, batchSpec{attrs: klog.AttrTimestampType, records: recs(1, 1)})
		}, func(l *Limits) { l.TimestampType = LogAppendTime }, ErrInvalidTimestamp},
		{"producer claims LogAppendTime without timestamp", func(t *testing.T) []byte {
			return build(t, batchSpec{attrs: klog.AttrTimestampType, baseTimestamp: -1, records: recs(1, 1)})
		}, nil, ErrInvalidTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := testLimits()
			if tt.lim != nil {
				tt.lim(&lim)
			}
			_, err := Validate(tt.input(t), lim)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			wantKind := kindOf(t, tt.want)
			if got := kindOf(t, err); got != wantKind {
				t.Errorf("kind %v, want %v", got, wantKind)
			}
		})
	}
}

// TestValidateAccepts covers the edges that must still pass.
func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name string
		spec batchSpec
		lim  func(*Limits)
	}{
		{"timestamp exactly before.max.ms old", batchSpec{baseTimestamp: testNow - 1000, records: recs(1, 1)}, func(l *Limits) { l.MaxTimestampDiffBefore = 1000 }},
		{"timestamp exactly after.max.ms ahead", batchSpec{baseTimestamp: testNow + DefaultMaxTimestampDiffAfter, records: recs(1, 1)}, nil},
		{"no timestamp (-1) is exempt", batchSpec{baseTimestamp: -1, records: recs(1, 1)}, func(l *Limits) { l.MaxTimestampDiffBefore = 0 }},
		{"ancient timestamp with the default before.max.ms", batchSpec{baseTimestamp: 1, records: recs(2, 1)}, nil},
		{"negative timestamp with the default before.max.ms", batchSpec{baseTimestamp: -5, records: recs(1, 1)}, nil},
		{"LogAppendTime ignores skew", batchSpec{baseTimestamp: 5, records: recs(2, 1)}, func(l *Limits) { l.TimestampType = LogAppendTime; l.MaxTimestampDiffBefore = 0 }},
		{"compacted with empty key", batchSpec{records: []kmsg.Record{{Key: []byte{}}}}, func(l *Limits) { l.Compacted = true }},
		{"exactly max.message.bytes", batchSpec{records: recs(1, 100)}, func(l *Limits) { l.MaxMessageBytes = 61 + int32(len(encodeRecords(recs(1, 100)))) }},
		{"exactly the decompression cap", batchSpec{codec: codecZstd, records: recs(2, 100)}, func(l *Limits) { l.MaxDecompressedBytes = int64(len(encodeRecords(recs(2, 100)))) }},
		{"idempotent transactional", idem(batchSpec{attrs: klog.AttrTransactional, records: recs(2, 1)}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := testLimits()
			if tt.lim != nil {
				tt.lim(&lim)
			}
			if _, err := Validate(build(t, tt.spec), lim); err != nil {
				t.Fatalf("got %v, want no error", err)
			}
		})
	}
}

func TestValidateMaxTimestamp(t *testing.T) {
	rs := recs(4, 1)
	rs[0].TimestampDelta64, rs[1].TimestampDelta64, rs[2].TimestampDelta64, rs[3].TimestampDelta64 = 5, 9, 9, 2
	tests := []struct {
		name      string
		spec      batchSpec
		typ       string
		wantMax   int64
		wantDelta int32
	}{
		{"CreateTime: first record with the max", batchSpec{records: rs}, CreateTime, testNow + 9, 1},
		{"CreateTime: no timestamps", batchSpec{baseTimestamp: -1, records: []kmsg.Record{{}}}, CreateTime, -1, -1},
		{"LogAppendTime: now", batchSpec{records: rs}, LogAppendTime, testNow, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := testLimits()
			lim.TimestampType = tt.typ
			res, err := Validate(build(t, tt.spec), lim)
			if err != nil {
				t.Fatal(err)
			}
			if res.MaxTimestamp != tt.wantMax || res.OffsetDeltaOfMaxTimestamp != tt.wantDelta {
				t.Errorf("max timestamp %d at delta %d, want %d at %d", res.MaxTimestamp, res.OffsetDeltaOfMaxTimestamp, tt.wantMax, tt.wantDelta)
			}
			if res.LogAppendTime != (tt.typ == LogAppendTime) {
				t.Errorf("LogAppendTime = %v", res.LogAppendTime)
			}
		})
	}
}

func TestRecordErrorIndex(t *testing.T) {
	rs := recs(5, 1)
	rs[3].Key = nil
	lim := testLimits()
	lim.Compacted = true
	_, err := Validate(build(t, batchSpec{records: rs}), lim)
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *RecordError", err)
	}
	if re.BatchIndex != 3 || !errors.Is(err, ErrMissingKey) {
		t.Errorf("got index %d (%v), want 3 and ErrMissingKey", re.BatchIndex, err)
	}
}

func TestBadLimits(t *testing.T) {
	tests := []struct {
		name string
		lim  func(*Limits)
	}{
		{"unknown timestamp type", func(l *Limits) { l.TimestampType = "logappendtime" }},
		{"negative before", func(l *Limits) { l.MaxTimestampDiffBefore = -1 }},
		{"negative after", func(l *Limits) { l.MaxTimestampDiffAfter = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := testLimits()
			tt.lim(&lim)
			_, err := Validate(build(t, batchSpec{records: recs(1, 1)}), lim)
			if !errors.Is(err, ErrBadLimits) {
				t.Fatalf("got %v, want ErrBadLimits", err)
			}
		})
	}
}

// TestZeroLimits: the size limits default when unset; Now defaults to the
// clock.
func TestZeroLimits(t *testing.T) {
	lim := Limits{MaxTimestampDiffBefore: math.MaxInt64, MaxTimestampDiffAfter: math.MaxInt64}
	res, err := Validate(build(t, batchSpec{codec: codecLZ4, records: recs(10, 100)}), lim)
	if err != nil {
		t.Fatal(err)
	}
	if res.Now < testNow {
		t.Errorf("Now = %d, want the wall clock", res.Now)
	}
	big := build(t, batchSpec{records: recs(1, DefaultMaxMessageBytes)})
	if _, err := Validate(big, lim); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("got %v, want ErrMessageTooLarge under the default max.message.bytes", err)
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		err, kind error
	}{
		{ErrBadLength, ErrCorrupt},
		{ErrInvalidMagic, ErrCorrupt},
		{ErrCRC, ErrCorrupt},
		{ErrDecompress, ErrCorrupt},
		{ErrDecompressedTooLarge, ErrMessageTooLarge},
		{ErrEmpty, ErrInvalidRecord},
		{ErrTruncated, ErrInvalidRecord},
		{ErrTrailingBytes, ErrInvalidRecord},
		{ErrUnsupportedMagic, ErrInvalidRecord},
		{ErrBaseOffset, ErrInvalidRecord},
		{ErrInvalidRecordCount, ErrInvalidRecord},
		{ErrControlBatch, ErrInvalidRecord},
		{ErrProducerFields, ErrInvalidRecord},
		{ErrMalformedRecord, ErrInvalidRecord},
		{ErrOffsetDelta, ErrInvalidRecord},
		{ErrMissingKey, ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := kindOf(t, tt.err); got != tt.kind {
				t.Errorf("kind %v, want %v", got, tt.kind)
			}
		})
	}
	if errors.Is(ErrBadLimits, ErrInvalidRecord) || errors.Is(ErrBadLimits, ErrCorrupt) {
		t.Error("ErrBadLimits must not look like the client's fault")
	}
}

// TestValidateConcurrent shares the pools between goroutines (run with
// -race).
func TestValidateConcurrent(t *testing.T) {
	var batches [][]byte
	for _, c := range allCodecs {
		batches = append(batches, build(t, batchSpec{codec: c.codec, records: recs(50, 200)}))
	}
	rounds := 20
	if raceEnabled {
		rounds = 6 // lz4's 4 MiB block buffers are slow to allocate under -race
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range rounds {
				b := batches[(g+i)%len(batches)]
				if _, err := Validate(b, testLimits()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestValidateAllocs: nothing per record, nothing at all for an
// uncompressed batch.
func TestValidateAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			small := build(t, batchSpec{codec: c.codec, records: recs(10, 100)})
			large := build(t, batchSpec{codec: c.codec, records: recs(500, 100)})
			lim := testLimits()
			for range 3 { // warm the pools
				if _, err := Validate(large, lim); err != nil {
					t.Fatal(err)
				}
			}
			a1 := testing.AllocsPerRun(50, func() { _, _ = Validate(small, lim) })
			a2 := testing.AllocsPerRun(50, func() { _, _ = Validate(large, lim) })
			if c.codec == codecNone && (a1 != 0 || a2 != 0) {
				t.Errorf("uncompressed: %v and %v allocations per Validate, want 0", a1, a2)
			}
			if a2 > a1+1 {
				t.Errorf("%v allocations for 500 records, %v for 10: something allocates per record", a2, a1)
			}
			if a2 > 4 {
				t.Errorf("%v allocations per Validate", a2)
			}
			t.Logf("allocs per Validate: %v (10 records), %v (500 records)", a1, a2)
		})
	}
}

// TestHostileClaimsAreCheap: a record claiming a million headers, a key of
// a gigabyte or a record count of two billion fails with a few small
// allocations (the error itself), never one sized by the claim.
func TestHostileClaimsAreCheap(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"a million headers", build(t, batchSpec{rawRecords: rawRecord(appendVarint([]byte{0, 0, 0, 1, 1}, 1_000_000)), count: 1}), ErrMalformedRecord},
		{"a gigabyte key", build(t, batchSpec{rawRecords: rawRecord(append(appendVarint([]byte{0, 0, 0}, 1<<30), 1, 0)), count: 1}), ErrMalformedRecord},
		{"a gigabyte record", build(t, batchSpec{rawRecords: append(appendVarint(nil, 1<<30), 0, 0, 0, 1, 1, 0), count: 1}), ErrMalformedRecord},
		{"two billion records", fixCRC(put32(put32(build(t, batchSpec{records: recs(1, 1)}), offRecordCount, math.MaxInt32), offLastOffsetDelta, math.MaxInt32-1)), ErrInvalidRecordCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Validate(tt.b, testLimits()); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			allocs := testing.AllocsPerRun(100, func() { _, _ = Validate(tt.b, testLimits()) })
			runtime.ReadMemStats(&after)
			perRun := (after.TotalAlloc - before.TotalAlloc) / 101
			if allocs > 8 || perRun > 1024 {
				t.Errorf("%v allocations, %d bytes per Validate", allocs, perRun)
			}
		})
	}
}
