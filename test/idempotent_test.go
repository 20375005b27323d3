package test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentFranzGoConcurrent produces from several goroutines through
// one franz-go client (idempotent by default; small batches, so many
// requests) to several partitions, then reads everything back: every
// record exactly once, offsets without gaps, each goroutine's records in
// order within a partition, all stamped with the producer id the client
// got from InitProducerId.
func TestIdempotentFranzGoConcurrent(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	const topic, partitions = "idempotent-concurrent", 4
	const producers, perProducer = 8, 250

	admCl := newKgoClient(t, b.Addr)
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitionsLed(t, admCl, topic, partitions)

	cl := newKgoClient(t, b.Addr,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2048),
		kgo.ProducerLinger(time.Millisecond),
	)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var produceErrs []error
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				r := &kgo.Record{
					Topic:     topic,
					Partition: int32((g*7 + i) % partitions),
					Key:       []byte(fmt.Sprintf("g%d-%05d", g, i)),
					Value:     []byte(fmt.Sprintf("value of record %d of producer goroutine %d, padded to make batches fill up", i, g)),
				}
				wg.Add(1)
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						mu.Lock()
						produceErrs = append(produceErrs, fmt.Errorf("%s: %w", r.Key, err))
						mu.Unlock()
					}
				})
			}
		}()
	}
	wg.Wait()
	if len(produceErrs) > 0 {
		t.Fatalf("%d produce errors, first: %v", len(produceErrs), produceErrs[0])
	}

	const total = producers * perProducer
	recs := consumeKgo(t, ctx, b.Addr, topic, []int32{0, 1, 2, 3}, total)
	if len(recs) != total {
		t.Fatalf("consumed %d records, want %d", len(recs), total)
	}
	seen := map[string]bool{}
	nextOffset := map[int32]int64{}
	lastIndex := map[[2]int]int{} // (partition, goroutine) -> last record index
	pid := recs[0].ProducerID
	if pid < 0 {
		t.Fatalf("records carry producer id %d: the client did not produce idempotently", pid)
	}
	for _, r := range recs {
		if seen[string(r.Key)] {
			t.Fatalf("record %s stored twice (second at %d@%d)", r.Key, r.Partition, r.Offset)
		}
		seen[string(r.Key)] = true
		if r.Offset != nextOffset[r.Partition] {
			t.Fatalf("partition %d: record %s at offset %d, want %d (gap or reordering)", r.Partition, r.Key, r.Offset, nextOffset[r.Partition])
		}
		nextOffset[r.Partition]++
		if r.ProducerID != pid || r.ProducerEpoch != 0 {
			t.Errorf("record %s has producer %d epoch %d, want %d epoch 0", r.Key, r.ProducerID, r.ProducerEpoch, pid)
		}
		var g, i int
		if _, err := fmt.Sscanf(string(r.Key), "g%d-%05d", &g, &i); err != nil {
			t.Fatalf("unexpected key %q", r.Key)
		}
		if want := int32((g*7 + i) % partitions); r.Partition != want {
			t.Errorf("record %s in partition %d, want %d", r.Key, r.Partition, want)
		}
		k := [2]int{int(r.Partition), g}
		if last, ok := lastIndex[k]; ok && i <= last {
			t.Errorf("partition %d: goroutine %d's record %d after its record %d", r.Partition, g, i, last)
		}
		lastIndex[k] = i
	}
	want := map[int32]int64{}
	for g := range producers {
		for i := range perProducer {
			want[int32((g*7+i)%partitions)]++
		}
	}
	checkEndOffsets(t, ctx, b.Addr, topic, want)
}

// TestIdempotentRawProtocol drives the idempotent producer protocol by
// hand: InitProducerId, then hand-built batches with explicit producer id,
// epoch and sequence numbers, checking the broker's answers, that the log
// holds exactly the accepted records, and that the producer state survives
// a broker restart.
func TestIdempotentRawProtocol(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	const topic = "idempotent-raw"
	const partition = 1 // partition 0 stays empty

	cl := newKgoClient(t, b.Addr)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitionsLed(t, cl, topic, 2)

	initPID := func(cl *kgo.Client) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("InitProducerId: %v", err)
		}
		if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
			t.Fatalf("InitProducerId: error %d, producer id %d, epoch %d; want no error, an id >= 0, epoch 0",
				resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch)
		}
		return resp.ProducerID, resp.ProducerEpoch
	}
	pid, epoch := initPID(cl)
	if other, _ := initPID(cl); other == pid {
		t.Fatalf("two InitProducerId calls both got producer id %d", pid)
	}

	now := time.Now().UnixMilli()
	recs := func(prefix string, n int) []rawRecord {
		out := make([]rawRecord, n)
		for i := range out {
			out[i] = rawRecord{
				Key:            []byte(fmt.Sprintf("%s%d", prefix, i)),
				Value:          []byte(fmt.Sprintf("value %s%d", prefix, i)),
				Headers:        []kmsg.Header{{Key: "batch", Value: []byte(prefix)}},
				TimestampDelta: int64(i),
			}
		}
		return out
	}
	// expect sends a batch and checks the partition's answer: the error
	// code, the base offset (-1 with an error) and, after it, the end offset.
	expect := func(step string, cl *kgo.Client, batch []byte, wantErr *kerr.Error, wantBase, wantEnd int64) {
		t.Helper()
		got := produceRaw(t, ctx, cl, topic, partition, batch)
		wantCode := int16(0)
		if wantErr != nil {
			wantCode = wantErr.Code
		}
		if got.ErrorCode != wantCode || got.BaseOffset != wantBase {
			t.Errorf("%s: error %v, base offset %d; want error %v, base offset %d",
				step, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, wantErr, wantBase)
		}
		if wantErr == nil && got.LogStartOffset != 0 {
			t.Errorf("%s: log start offset %d, want 0", step, got.LogStartOffset)
		}
		end := listOffsetRaw(t, ctx, cl, topic, partition, -1, -1)
		if end.ErrorCode != 0 || end.Offset != wantEnd {
			t.Errorf("%s: end offset %d (error %d), want %d", step, end.Offset, end.ErrorCode, wantEnd)
		}
	}

	batchA := buildRecordBatch(pid, epoch, 0, now, recs("a", 3)) // sequences 0..2
	expect("first batch", cl, batchA, nil, 0, 3)
	expect("same batch again (retry after a lost response)", cl, batchA, nil, 0, 3)
	expect("sequence gap (5, want 3)", cl, buildRecordBatch(pid, epoch, 5, now, recs("gap", 1)),
		kerr.OutOfOrderSequenceNumber, -1, 3)

	// A new epoch starts again at sequence 0; the old epoch is then fenced.
	batchB := buildRecordBatch(pid, epoch+1, 0, now, recs("b", 2)) // sequences 0..1
	expect("new epoch", cl, batchB, nil, 3, 5)
	expect("older epoch", cl, buildRecordBatch(pid, epoch, 3, now, recs("stale", 1)),
		kerr.InvalidProducerEpoch, -1, 5)

	cl.Close()
	b = b.Restart(t)
	cl = newKgoClient(t, b.Addr)
	waitPartitionsLed(t, cl, topic, 2)

	expect("last batch again after a restart", cl, batchB, nil, 3, 5)
	expect("older epoch after a restart", cl, batchA, kerr.InvalidProducerEpoch, -1, 5)
	expect("sequence gap after a restart (4, want 2)", cl, buildRecordBatch(pid, epoch+1, 4, now, recs("gap", 1)),
		kerr.OutOfOrderSequenceNumber, -1, 5)
	expect("next sequence after a restart", cl, buildRecordBatch(pid, epoch+1, 2, now, recs("c", 2)), nil, 5, 7)

	got := consumeKgo(t, ctx, b.Addr, topic, []int32{partition}, 7)
	wantKeys := []string{"a0", "a1", "a2", "b0", "b1", "c0", "c1"}
	wantEpochs := []int16{epoch, epoch, epoch, epoch + 1, epoch + 1, epoch + 1, epoch + 1}
	if len(got) != len(wantKeys) {
		t.Fatalf("log holds %d records, want %d", len(got), len(wantKeys))
	}
	for i, r := range got {
		if string(r.Key) != wantKeys[i] || r.Offset != int64(i) || r.ProducerID != pid || r.ProducerEpoch != wantEpochs[i] {
			t.Errorf("record %d: key %s offset %d producer %d epoch %d; want key %s offset %d producer %d epoch %d",
				i, r.Key, r.Offset, r.ProducerID, r.ProducerEpoch, wantKeys[i], i, pid, wantEpochs[i])
		}
		if want := "value " + wantKeys[i]; string(r.Value) != want {
			t.Errorf("record %d: value %q, want %q", i, r.Value, want)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "batch" || string(r.Headers[0].Value) != wantKeys[i][:1] {
			t.Errorf("record %d: headers %v, want batch=%s", i, r.Headers, wantKeys[i][:1])
		}
	}
	checkEndOffsets(t, ctx, b.Addr, topic, map[int32]int64{0: 0, partition: 7})
}
