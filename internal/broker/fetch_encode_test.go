package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
)

// rawFetchResponse writes, for every version samsa serves, the bytes kmsg
// writes for the same response with the records in memory: random
// responses with several topics and partitions, errors, diverging epochs,
// leaders, snapshot ids, aborted transactions and records or none.
func TestRawFetchResponseMatchesKmsg(t *testing.T) {
	cfg := klog.DefaultConfig()
	cfg.FS = klog.NewMemFS(1)
	l, err := klog.Open("/p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 10 {
		if _, err := l.Append(testBatch(t, i+1, 50*i), 0); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for version := int16(4); version <= 12; version++ {
		for round := range 50 {
			t.Run(fmt.Sprintf("v%d/%d", version, round), func(t *testing.T) {
				resp := kmsg.NewPtrFetchResponse()
				resp.Version = version
				resp.ThrottleMillis = rng.Int32N(100)
				resp.ErrorCode = int16(rng.IntN(3))
				resp.SessionID = rng.Int32()
				var recs fetchRecords
				for ti := range rng.IntN(4) {
					rt := kmsg.NewFetchResponseTopic()
					rt.Topic = fmt.Sprintf("topic-%d-%s", ti, string(make([]byte, rng.IntN(3))))
					var trecs []klog.Records
					for pi := range rng.IntN(4) {
						rp := kmsg.NewFetchResponseTopicPartition()
						rp.Partition = int32(pi)
						rp.ErrorCode = int16(rng.IntN(2))
						rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
						if rng.IntN(3) == 0 {
							rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
						}
						if rng.IntN(3) == 0 {
							rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
						}
						if rng.IntN(5) == 0 {
							rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = rng.Int64(), rng.Int32()
						}
						if rng.IntN(4) == 0 {
							rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: rng.Int64(), FirstOffset: rng.Int64()}}
						}
						if version >= 11 {
							rp.PreferredReadReplica = rng.Int32N(3) - 1
						}
						var r klog.Records
						if rng.IntN(3) > 0 {
							r, err = l.Slice(rng.Int64N(l.EndOffset()), l.EndOffset(), rng.IntN(2000), true)
							if err != nil {
								t.Fatal(err)
							}
						}
						data, err := r.AppendTo(nil)
						if err != nil {
							t.Fatal(err)
						}
						rp.RecordBatches = append([]byte{}, data...) // never null
						rt.Partitions = append(rt.Partitions, rp)
						trecs = append(trecs, r)
					}
					resp.Topics = append(resp.Topics, rt)
					recs = append(recs, trecs)
				}
				want := resp.AppendTo(nil)
				raw := rawFetchResponse(resp, recs)
				var got []byte
				prev := 0
				for _, p := range raw.Parts {
					got = append(got, raw.Body[prev:p.At]...)
					var buf bytes.Buffer
					if _, err := p.Data.WriteTo(&buf); err != nil {
						t.Fatal(err)
					}
					got = append(got, buf.Bytes()...)
					prev = p.At
				}
				got = append(got, raw.Body[prev:]...)
				if !bytes.Equal(got, want) {
					t.Fatalf("encoded %d bytes, kmsg %d; differ", len(got), len(want))
				}
			})
		}
	}
}

// testBatch is a valid v2 batch of n records of size bytes each.
func testBatch(t *testing.T, n, size int) []byte {
	t.Helper()
	var recs []kmsg.Record
	for i := range n {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = bytes.Repeat([]byte{byte(i)}, size)
		recs = append(recs, r)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = int32(n - 1)
	b.NumRecords = int32(n)
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	for _, r := range recs {
		b.Records = r.AppendTo(b.Records)
	}
	enc := b.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[8:], uint32(len(enc)-12))
	binary.BigEndian.PutUint32(enc[17:], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return enc
}
