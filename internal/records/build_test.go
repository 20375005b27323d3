package records

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
)

// TestBuild checks built batches with the produce-side validator and
// with franz-go's decoder: framing, CRC, count, keys, values and nulls.
func TestBuild(t *testing.T) {
	recs := []KV{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: []byte("k2"), Value: nil}, // tombstone
		{Key: nil, Value: []byte("no key")},
		{Key: []byte{}, Value: bytes.Repeat([]byte("x"), 300)},
	}
	lim := testLimits()
	b := Build(recs, lim.Now)
	res, err := Validate(b, lim)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if res.RecordCount != int32(len(recs)) {
		t.Fatalf("Validate counted %d records, want %d", res.RecordCount, len(recs))
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.NumRecords != int32(len(recs)) || rb.ProducerID != -1 || rb.FirstTimestamp != lim.Now {
		t.Fatalf("header: %+v", rb)
	}
	h, err := klog.ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	err = ForEachRecord(b, &h, 0, func(r Record) bool {
		want := recs[i]
		if !bytes.Equal(r.Key, want.Key) || (r.Key == nil) != (want.Key == nil) ||
			!bytes.Equal(r.Value, want.Value) || (r.Value == nil) != (want.Value == nil) || r.OffsetDelta != int32(i) {
			t.Errorf("record %d: key %q value %q delta %d; want %q %q", i, r.Key, r.Value, r.OffsetDelta, want.Key, want.Value)
		}
		i++
		return true
	})
	if err != nil || i != len(recs) {
		t.Fatalf("ForEachRecord: %v after %d records", err, i)
	}
}
