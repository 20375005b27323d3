package test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompatFranzGo produces records with keys, values and headers through
// franz-go's producer (acks=all, idempotent: its defaults) to a
// three-partition topic, once per compression codec, and consumes them back
// with a direct partition consumer: every record must come back exactly,
// in order, at the offset it was given.
func TestCompatFranzGo(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 90*time.Second)
	admCl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(admCl)

	const n, partitions = 300, 3
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  uint8
	}{
		{"none", kgo.NoCompression(), codecNone},
		{"gzip", kgo.GzipCompression(), codecGzip},
		{"snappy", kgo.SnappyCompression(), codecSnappy},
		{"lz4", kgo.Lz4Compression(), codecLz4},
		{"zstd", kgo.ZstdCompression(), codecZstd},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "franzgo-" + c.name
			if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
				t.Fatalf("create topic: %v", err)
			}
			waitPartitionsLed(t, admCl, topic, partitions)
			want := makeCompatRecords(n, partitions)

			p := newKgoClient(t, b.Addr,
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerBatchCompression(c.codec),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			recs := make([]*kgo.Record, len(want))
			for i, w := range want {
				r := &kgo.Record{Topic: topic, Partition: w.Partition, Key: w.Key, Value: w.Value}
				for _, h := range w.Headers {
					r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				recs[i] = r
			}
			// One call: the records are batched (and compressed) together.
			results := p.ProduceSync(ctx, recs...)
			if err := results.FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			// Results come in acknowledgement order; the records carry
			// the assigned offsets.
			for i, r := range recs {
				if r.Offset != want[i].Offset || r.Partition != want[i].Partition {
					t.Fatalf("record %d acknowledged at %d@%d, want %d@%d", i,
						r.Partition, r.Offset, want[i].Partition, want[i].Offset)
				}
			}
			p.Close()

			consumed := consumeKgo(t, ctx, b.Addr, topic, []int32{0, 1, 2}, n)
			checkCompatRecords(t, want, kgoToCompat(consumed))
			checkEndOffsets(t, ctx, b.Addr, topic, compatCounts(want))
			checkStoredCompression(t, consumed, c.attr)

			// Again from an offset inside a batch.
			mid := compatFrom(want, 1, compatMidOffset)
			m := newKgoClient(t, b.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
				topic: {1: kgo.NewOffset().At(compatMidOffset)},
			}))
			var fromMid []*kgo.Record
			for len(fromMid) < len(mid) {
				fs := m.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("from offset %d: consumed %d of %d: %v", compatMidOffset, len(fromMid), len(mid), err)
				}
				fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", tp, p, err) })
				fromMid = append(fromMid, fs.Records()...)
			}
			checkCompatRecords(t, mid, kgoToCompat(fromMid))
		})
	}
}
