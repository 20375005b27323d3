package test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceLargeRequestAppendsInOrder sends Produce requests of over a
// megabyte to several partitions, whose partitions the broker appends on
// more than one goroutine (broker.appendAll), from an idempotent producer
// with explicit sequence numbers. Each partition's answer must give its
// own offsets, and the log must hold each partition's records in the
// order sent. The second request names one partition twice, back to
// back, and the third the topic twice: the two batches of one partition
// must be appended in the request's order (else the later sequence
// arrives first and is refused as out of order); the rule that keeps them
// so, one goroutine for such a request, is broker.TestAppendWorkers'.
func TestProduceLargeRequestAppendsInOrder(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	const topic = "produce-parallel"
	const partitions = 8
	const perBatch = 40 // records of 4 KiB: 160 KiB a batch

	cl := newKgoClient(t, b.Addr)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitionsLed(t, cl, topic, partitions)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v, error code %d", err, ir.ErrorCode)
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	value := func(p int32, seq int) []byte {
		v := bytes.Repeat([]byte{byte(p)}, 4096)
		copy(v, fmt.Sprintf("p%d-%d", p, seq))
		return v
	}
	batch := func(p int32, seq int) []byte {
		recs := make([]rawRecord, perBatch)
		for i := range recs {
			recs[i] = rawRecord{Key: []byte(fmt.Sprintf("%d", seq+i)), Value: value(p, seq+i)}
		}
		return buildRecordBatch(pid, epoch, int32(seq), time.Now().UnixMilli(), recs)
	}
	type entry struct {
		p   int32
		seq int
	}
	// produce sends one request, the entries of each element of topics
	// under an entry of the topic of their own, and checks each answer's
	// base offset.
	produce := func(step string, topics [][]entry, wantBase [][]int64) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		for _, entries := range topics {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			for _, e := range entries {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition = e.p
				rp.Records = batch(e.p, e.seq)
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		kresp, err := brokerOne(t, ctx, cl).Request(ctx, req)
		if err != nil {
			t.Fatalf("%s: Produce: %v", step, err)
		}
		resp := kresp.(*kmsg.ProduceResponse)
		if len(resp.Topics) != len(topics) {
			t.Fatalf("%s: response %+v, want %d topic entries", step, resp.Topics, len(topics))
		}
		for ti, rt := range resp.Topics {
			if len(rt.Partitions) != len(topics[ti]) {
				t.Fatalf("%s: topic entry %d: %d answers, want %d", step, ti, len(rt.Partitions), len(topics[ti]))
			}
			for i, rp := range rt.Partitions {
				e := topics[ti][i]
				if rp.Partition != e.p || rp.ErrorCode != 0 || rp.BaseOffset != wantBase[ti][i] {
					t.Errorf("%s: answer %d.%d: partition %d, error %d, base offset %d; want partition %d, no error, base offset %d",
						step, ti, i, rp.Partition, rp.ErrorCode, rp.BaseOffset, e.p, wantBase[ti][i])
				}
			}
		}
	}

	var first []entry
	var firstBase []int64
	for p := range int32(partitions) {
		first = append(first, entry{p, 0})
		firstBase = append(firstBase, 0)
	}
	produce("one batch a partition", [][]entry{first}, [][]int64{firstBase})

	second := []entry{{0, perBatch}, {0, 2 * perBatch}}
	secondBase := []int64{perBatch, 2 * perBatch}
	for p := int32(1); p < partitions; p++ {
		second = append(second, entry{p, perBatch})
		secondBase = append(secondBase, perBatch)
	}
	produce("partition 0 twice", [][]entry{second}, [][]int64{secondBase})

	// The topic twice, partition 1 under each entry, and the others.
	var rest []entry
	var restBase []int64
	for p := int32(2); p < partitions; p++ {
		rest = append(rest, entry{p, 2 * perBatch})
		restBase = append(restBase, 2*perBatch)
	}
	produce("the topic twice", [][]entry{{{1, 2 * perBatch}}, append([]entry{{1, 3 * perBatch}}, rest...)},
		[][]int64{{2 * perBatch}, append([]int64{3 * perBatch}, restBase...)})

	want := map[int32]int64{0: 3 * perBatch, 1: 4 * perBatch}
	for p := int32(2); p < partitions; p++ {
		want[p] = 3 * perBatch
	}
	checkEndOffsets(t, ctx, b.Addr, topic, want)
	all := make([]int32, partitions)
	for p := range all {
		all[p] = int32(p)
	}
	next := map[int32]int{}
	total := 0
	for _, n := range want {
		total += int(n)
	}
	for _, r := range consumeKgo(t, ctx, b.Addr, topic, all, total) {
		seq := next[r.Partition]
		next[r.Partition]++
		if string(r.Key) != fmt.Sprint(seq) || r.Offset != int64(seq) || !bytes.Equal(r.Value, value(r.Partition, seq)) {
			t.Fatalf("partition %d offset %d: key %q; want record %d of that partition", r.Partition, r.Offset, r.Key, seq)
		}
	}
}
