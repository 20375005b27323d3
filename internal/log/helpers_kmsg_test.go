package log

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBatchEncoderMatchesKmsg checks the test batch encoder against franz-go's
// decoder, so the tests feed the log real Kafka batches.
func TestBatchEncoderMatchesKmsg(t *testing.T) {
	b := newBatch(3, 10, 1000).producer(7, 1, 42).at(5, 9).encode()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot decode: %v", err)
	}
	if rb.FirstOffset != 5 || rb.PartitionLeaderEpoch != 9 || rb.NumRecords != 3 || rb.LastOffsetDelta != 2 ||
		rb.ProducerID != 7 || rb.FirstSequence != 42 || rb.MaxTimestamp != 1002 {
		t.Fatalf("kmsg decoded %+v", rb)
	}
	rec := rb.Records
	for i := range 3 {
		var r kmsg.Record
		if err := r.ReadFrom(rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.OffsetDelta != int32(i) || r.TimestampDelta64 != int64(i) || len(r.Value) != 10 {
			t.Fatalf("record %d: %+v", i, r)
		}
		rec = rec[len(r.AppendTo(nil)):]
	}
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyCRC(b, &h); err != nil {
		t.Fatal(err)
	}
	if got := offsetOfMaxTimestamp(b, &h); got != 7 {
		t.Fatalf("offsetOfMaxTimestamp = %d, want 7", got)
	}
}
