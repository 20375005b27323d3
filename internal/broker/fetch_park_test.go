package broker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A record appended after a fetch found nothing, but before its wait
// registered on the partition, must still end the wait: the fetch reads
// again once registered. Before the fix it slept its whole MaxWaitMillis
// (a follower's replica.fetch.wait.max.ms, 500 ms, stalling acks=all
// produces behind it; issue 11). Here MaxWaitMillis is a minute and the
// fetch must answer within 20 s.
func TestParkedFetchSeesAppendBeforeItsWait(t *testing.T) {
	e := startTestEtcd(t)
	h := startRun(t, e, e.Endpoints())
	addr := strings.TrimPrefix(h.cfg.Listeners[0], "PLAINTEXT://")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(h.ctx, 1, 1, nil, "park"); err != nil {
		t.Fatal(err)
	}
	// Produce once so that metadata and the partition are ready.
	if err := cl.ProduceSync(h.ctx, &kgo.Record{Topic: "park", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The hook appends a record in the gap, once.
	var once sync.Once
	appended := make(chan error, 1)
	hook := func() {
		once.Do(func() {
			pctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
			defer cancel()
			appended <- cl.ProduceSync(pctx, &kgo.Record{Topic: "park", Value: []byte("in the gap")}).FirstErr()
		})
	}
	testHookFetchParking.Store(&hook)
	t.Cleanup(func() { testHookFetchParking.Store(nil) })

	fc, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 60_000, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "park"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = 1, 1<<20 // past "first": nothing yet
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	kresp, err := fc.Request(ctx, req)
	if err != nil {
		t.Fatalf("the fetch parked through an append made before its wait began: %v", err)
	}
	select {
	case err := <-appended:
		if err != nil {
			t.Fatalf("produce in the gap: %v", err)
		}
	default:
		t.Fatalf("the fetch answered without parking; the test proves nothing")
	}
	p := kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 2 {
		t.Fatalf("fetch: error %d, %d bytes, high watermark %d; want the record appended in the gap", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
}
