package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchRaw sends one Fetch v12 for partition 0 of topic at offset.
func fetchRaw(ctx context.Context, t *testing.T, b *Broker, topic string, offset int64, maxWait, minBytes int32) (kmsg.FetchResponseTopicPartition, error) {
	t.Helper()
	cl := newKgoClient(t, b.Addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := brokerOne(t, ctx, cl).Request(ctx, req)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	return kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0], nil
}

// A fetch parked for lack of MinBytes is woken by the append that brings
// them; one that nothing satisfies returns empty after MaxWaitMillis.
func TestFetchLongPoll(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	cl := newKgoClient(t, b.Addr)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "poll"); err != nil {
		t.Fatal(err)
	}

	// Nothing arrives: the answer comes after MaxWait, empty.
	got, err := fetchRaw(ctx, t, b, "poll", 0, 200, 1)
	if err != nil || got.ErrorCode != 0 || len(got.RecordBatches) != 0 || got.HighWatermark != 0 {
		t.Fatalf("empty long poll: error %d, %d bytes, high watermark %d, %v", got.ErrorCode, len(got.RecordBatches), got.HighWatermark, err)
	}

	// Data arrives while parked: the fetch is woken with it. Its MaxWait
	// (60 s) is longer than this step's deadline (20 s), so only the
	// wake-up can make it pass.
	type result struct {
		p   kmsg.FetchResponseTopicPartition
		err error
	}
	done := make(chan result, 1)
	pollCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() {
		p, err := fetchRaw(pollCtx, t, b, "poll", 0, 60000, 1)
		done <- result{p, err}
	}()
	// Produce only once the fetch is parked, or the test proves nothing.
	WaitFor(t, 10*time.Second, func() error {
		select {
		case r := <-done:
			t.Fatalf("fetch returned before any data: %+v %v", r.p, r.err)
		default:
		}
		if n := b.ParkedFetches(); n != 1 {
			return fmt.Errorf("%d parked fetches, want 1", n)
		}
		return nil
	})
	if got := produceRaw(t, ctx, cl, "poll", 0, buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte("wake")}})); got.ErrorCode != 0 {
		t.Fatalf("produce: error %d", got.ErrorCode)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("parked fetch was not woken by the append: %v", r.err)
	}
	if r.p.ErrorCode != 0 || len(r.p.RecordBatches) == 0 || r.p.HighWatermark != 1 {
		t.Fatalf("woken fetch: error %d, %d bytes, high watermark %d; want the new batch", r.p.ErrorCode, len(r.p.RecordBatches), r.p.HighWatermark)
	}
}
