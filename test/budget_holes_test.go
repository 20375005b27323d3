package test

// Holes in the request-path memory budget found by review (issue 16), each
// with the hostile client that proved it.

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
)

// holesFill writes batches of about 1 MB to partition 0 of topic.
func holesFill(t *testing.T, addr, topic string, batches int) {
	t.Helper()
	fill := dialBad(t, addr)
	for range batches {
		for _, code := range badProduceCodes(fill.roundTrip(badProduceRequest(1, badPart{topic, 0, badBatch(memRecordsPerBatch, 1024)}))) {
			if code != 0 {
				t.Fatalf("fill: error %d", code)
			}
		}
	}
}

// holesFetch is a consumer's Fetch v11 of partition 0 of topic from offset 0.
func holesFetch(topic string, minBytes, maxBytes, partitionMaxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis = 1<<31 - 1
	req.MinBytes = minBytes
	req.MaxBytes = maxBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = partitionMaxBytes
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// A fetch parked for MinBytes (here never met, for as long as a fetch may
// wait) holds none of the records it read: three of them once held the
// whole budget, and a producer's 1 MB batch then waited for ever.
func TestBudgetParkedFetchHoldsNoRecords(t *testing.T) {
	b := StartBroker(t, func(c *broker.Config) { c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes = 8<<20, 8<<20 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e2eCreateTopic(ctx, t, b.Addr, "parked", 1, nil)
	holesFill(t, b.Addr, "parked", 8)

	for range 3 {
		rc := dialBad(t, b.Addr)
		rc.write(rc.frame(holesFetch("parked", 1<<31-1, 1<<30, 1<<30)))
	}
	WaitFor(t, 10*time.Second, func() error {
		if n := b.ParkedFetches(); n < 3 {
			return fmt.Errorf("%d fetches parked", n)
		}
		return nil
	})
	pc := dialBad(t, b.Addr)
	start := time.Now()
	for _, code := range badProduceCodes(pc.roundTrip(badProduceRequest(1, badPart{"parked", 0, badBatch(memRecordsPerBatch, 1024)}))) {
		if code != 0 {
			t.Fatalf("produce: error %d", code)
		}
	}
	t.Logf("a 1 MB produce answered after %v beside 3 parked fetches", time.Since(start))

	// MinBytes above what the fetch may return (its MaxBytes) is met
	// once the fetch has what it may return: no wait.
	rc := dialBad(t, b.Addr)
	start = time.Now()
	resp := rc.roundTrip(holesFetch("parked", 1<<31-1, 1, 1<<30)).(*kmsg.FetchResponse)
	if got := len(resp.Topics[0].Partitions[0].RecordBatches); got == 0 {
		t.Errorf("fetch with MaxBytes 1 returned no records")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("fetch with MinBytes > MaxBytes answered after %v", d)
	}
}

// A fetch with a PartitionMaxBytes of 0 still returns the first batch
// (KIP-74), and must reserve for it: 10 connections that pipeline such
// fetches and never read held 16 MiB each, whatever the budget.
func TestBudgetZeroPartitionMaxBytes(t *testing.T) {
	const budget = 8 << 20
	b := StartBroker(t, func(c *broker.Config) { c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes = budget, budget })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e2eCreateTopic(ctx, t, b.Addr, "zero", 1, nil)
	holesFill(t, b.Addr, "zero", 4)

	runtime.GC()
	idle := memHeapBytes()
	var conns []net.Conn
	for range 10 {
		rc := dialBad(t, b.Addr)
		if tc, ok := rc.c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		conns = append(conns, rc.c)
		var frames []byte
		for range 40 {
			req := holesFetch("zero", 1, 1<<30, 0)
			req.MaxWaitMillis = 0
			frames = append(frames, rc.frame(req)...)
		}
		go func() {
			rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			rc.c.Write(frames)
		}()
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	time.Sleep(3 * time.Second)
	runtime.GC()
	live := memHeapBytes() - idle
	t.Logf("10 non-reading connections of PartitionMaxBytes=0 fetches: %d MiB live over idle (budget %d MiB)", live>>20, budget>>20)
	// The budget, one first batch per connection over it, socket buffers.
	if live > 5*budget {
		t.Errorf("%d MiB live, over 5 times the budget", live>>20)
	}
}

// Metadata describes a topic once however often it is named, as Kafka
// does: one 60 KB request naming a 10-partition topic 20,000 times once got
// a response of 200,000 partitions.
func TestBudgetMetadataDedup(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e2eCreateTopic(ctx, t, b.Addr, "m", 10, nil)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	for range 20000 {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("m")
		req.Topics = append(req.Topics, mt)
	}
	for range 3 {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("absent")
		req.Topics = append(req.Topics, mt)
	}
	rc := dialBad(t, b.Addr)
	resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics in the response, want 2 (m and absent, once each)", len(resp.Topics))
	}
}
