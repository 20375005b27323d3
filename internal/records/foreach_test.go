package records

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
)

func header(t *testing.T, b []byte) klog.BatchHeader {
	t.Helper()
	h, err := klog.ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestForEachRecordMatchesKmsg decodes every record and compares it with
// what was encoded, for every codec.
func TestForEachRecordMatchesKmsg(t *testing.T) {
	rs := recs(20, 300)
	rs[3].Key, rs[4].Value = nil, nil
	rs[5].Key, rs[5].Value = []byte{}, []byte{}
	rs[6].Headers = nil
	rs[7].TimestampDelta64 = -1000
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, batchSpec{codec: c.codec, records: rs})
			h := header(t, b)
			i := 0
			err := ForEachRecord(b, &h, 0, func(r Record) bool {
				w := rs[i]
				if r.OffsetDelta != w.OffsetDelta || r.TimestampDelta != w.TimestampDelta64 || r.HeaderCount != len(w.Headers) {
					t.Errorf("record %d: delta %d ts %d headers %d, want %d %d %d", i, r.OffsetDelta, r.TimestampDelta, r.HeaderCount, w.OffsetDelta, w.TimestampDelta64, len(w.Headers))
				}
				if !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) {
					t.Errorf("record %d: key %q, want %q", i, r.Key, w.Key)
				}
				if !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
					t.Errorf("record %d: value differs", i)
				}
				i++
				return true
			})
			if err != nil || i != len(rs) {
				t.Fatalf("visited %d of %d records: %v", i, len(rs), err)
			}
		})
	}
}

// TestForEachRecordStops finds the first record at or after a timestamp, as
// ListOffsets does.
func TestForEachRecordStops(t *testing.T) {
	rs := recs(10, 10) // timestamp deltas 0..9
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, batchSpec{codec: c.codec, records: rs})
			h := header(t, b)
			target := h.BaseTimestamp + 6
			found, calls := int32(-1), 0
			err := ForEachRecord(b, &h, 0, func(r Record) bool {
				calls++
				if h.BaseTimestamp+r.TimestampDelta >= target {
					found = r.OffsetDelta
					return false
				}
				return true
			})
			if err != nil || found != 6 || calls != 7 {
				t.Errorf("found %d after %d calls (%v), want 6 after 7", found, calls, err)
			}
		})
	}
}

func TestForEachRecordRejects(t *testing.T) {
	valid := build(t, batchSpec{codec: codecZstd, records: recs(5, 100)})
	malformed := build(t, batchSpec{rawRecords: []byte{0x02, 0, 0, 0, 0, 0, 0}, count: 1})
	tests := []struct {
		name  string
		batch []byte // the header is parsed from valid unless it is malformed
		edit  func(h *klog.BatchHeader)
		max   int64
		want  error
	}{
		{"batch longer than the buffer", valid[:len(valid)-1], nil, 0, ErrBadLength},
		{"length below the header", valid, func(h *klog.BatchHeader) { h.Length = 10 }, 0, ErrBadLength},
		{"negative count", valid, func(h *klog.BatchHeader) { h.RecordCount = -1 }, 0, ErrInvalidRecordCount},
		{"count too large", valid, func(h *klog.BatchHeader) { h.RecordCount = 6 }, 0, ErrInvalidRecordCount},
		{"count too small", valid, func(h *klog.BatchHeader) { h.RecordCount = 4 }, 0, ErrInvalidRecordCount},
		{"unknown codec", valid, func(h *klog.BatchHeader) { h.Attributes = 6 }, 0, ErrUnsupportedCompression},
		{"not actually compressed", valid, func(h *klog.BatchHeader) { h.Attributes = codecGzip }, 0, ErrDecompress},
		{"over the cap", valid, nil, 100, ErrDecompressedTooLarge},
		{"malformed record", malformed, nil, 0, ErrMalformedRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := header(t, valid)
			if bytes.Equal(tt.batch, malformed) {
				h = header(t, malformed)
			}
			if tt.edit != nil {
				tt.edit(&h)
			}
			err := ForEachRecord(tt.batch, &h, tt.max, func(Record) bool { return true })
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestForEachRecordKeyCapacity: appending to a key must not overwrite the
// batch.
func TestForEachRecordKeyCapacity(t *testing.T) {
	b := build(t, batchSpec{records: []kmsg.Record{{Key: []byte("k"), Value: []byte("value")}}})
	orig := bytes.Clone(b)
	h := header(t, b)
	if err := ForEachRecord(b, &h, 0, func(r Record) bool {
		_ = append(r.Key, "XXXX"...)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, orig) {
		t.Error("appending to a key changed the batch")
	}
}
