package test

// Throughput of the whole produce and fetch paths: one franz-go client
// against one in-process broker, over TCP on 127.0.0.1. Client and broker
// share the machine's cores, so the figures are a floor for a broker with
// the machine to itself.
//
//	go test -run XXX -bench ProduceConsume -benchtime 3s ./test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceConsume measures produce (acks=all, idempotent, no
// compression, 5 ms linger, up to 5 requests in flight) and consume (from
// the start of a pre-produced topic) of 100 B and 1 KiB records, in
// samsa's default durability mode (flush.messages=1: acknowledged once
// fsync'd, with group commit) and in Kafka's page-cache mode
// (flush.messages=1000000). One op is one record; MB/s counts record
// values.
func BenchmarkProduceConsume(b *testing.B) {
	br := StartBroker(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	pageCache := "1000000"
	modes := []struct {
		name    string
		configs map[string]*string
	}{
		{"fsync", nil},
		{"pagecache", map[string]*string{"flush.messages": &pageCache}},
	}
	sizes := []struct {
		name string
		n    int
	}{{"100B", 100}, {"1KiB", 1024}}
	for _, op := range []string{"produce", "consume"} {
		for _, m := range modes {
			for _, size := range sizes {
				topic := fmt.Sprintf("bench-%s-%s-%s", op, m.name, size.name)
				e2eCreateTopic(ctx, b, br.Addr, topic, 1, m.configs)
				var produced int64 // records in topic, for consume
				b.Run(fmt.Sprintf("%s/%s/%s", op, m.name, size.name), func(b *testing.B) {
					if op == "produce" {
						benchProduce(ctx, b, br.Addr, topic, size.n)
					} else {
						benchConsume(ctx, b, br.Addr, topic, size.n, &produced)
					}
				})
			}
		}
	}
}

// benchProducer returns the producer the benchmarks use.
func benchProducer(b *testing.B, addr string) *kgo.Client {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence stays on (the default)
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(1<<17),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// produceN produces n records of size bytes to partition 0 and waits for
// all acknowledgements.
func produceN(ctx context.Context, b *testing.B, cl *kgo.Client, topic string, n, size int) {
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	promise := func(_ *kgo.Record, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatalf("flush: %v", err)
	}
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d records failed, first: %v", n, firstErr.Load())
	}
}

func benchProduce(ctx context.Context, b *testing.B, addr, topic string, size int) {
	cl := benchProducer(b, addr)
	defer cl.Close()
	// Warm up: producer id, metadata, connection.
	produceN(ctx, b, cl, topic, 1, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	produceN(ctx, b, cl, topic, b.N, size)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// benchConsume reads b.N records from the start of topic, producing more
// first (untimed) when it holds fewer.
func benchConsume(ctx context.Context, b *testing.B, addr, topic string, size int, produced *int64) {
	if missing := int64(b.N) - *produced; missing > 0 {
		cl := benchProducer(b, addr)
		produceN(ctx, b, cl, topic, int(missing), size)
		cl.Close()
		*produced += missing
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	read := 0
	for read < b.N {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("read %d of %d records: %v", read, b.N, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { b.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != size {
				b.Fatalf("offset %d: %d-byte value, want %d", r.Offset, len(r.Value), size)
			}
			read++
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReplicatedProduce compares acks=all production to a topic with
// replication factor 1 and 3, side by side, on three in-process brokers
// (all sharing this machine's cores and disk with the client).
func BenchmarkReplicatedProduce(b *testing.B) {
	c := startInProcessCluster(b, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	addr := c.bootstrap()[0]
	for _, rf := range []int{1, 3} {
		topic := fmt.Sprintf("bench-rf%d", rf)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, int16(rf), nil, topic); err != nil {
			b.Fatal(err)
		}
		cl.Close()
		for _, size := range []int{100, 1024} {
			b.Run(fmt.Sprintf("rf=%d/%dB", rf, size), func(b *testing.B) {
				benchProduce(ctx, b, addr, topic, size)
			})
		}
	}
}

// BenchmarkReplicatedAckLatency measures the acknowledgement latency of
// acks=all produces at a steady 10,000 records/s (100 B, no linger, six
// partitions) on three in-process brokers, RF 3 against RF 1, in the
// durable default and in page-cache mode (flush.messages=1000000). One
// op is one record; the metrics are the median and 99th percentile.
// The brokers share one Go runtime here, unlike the separate processes
// of test/perf, so this isolates the replication round from the cost of
// scheduling four processes on a small machine (docs/replication.md,
// "Timeline of one acks=all produce").
//
//	go test -run XXX -bench ReplicatedAckLatency -benchtime 50000x ./test
func BenchmarkReplicatedAckLatency(b *testing.B) {
	c := startInProcessCluster(b, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	pageCache := "1000000"
	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...))
	if err != nil {
		b.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	for _, mode := range []string{"fsync", "pagecache"} {
		for _, rf := range []int16{3, 1} {
			topic := fmt.Sprintf("ack-%s-rf%d", mode, rf)
			configs := map[string]*string{}
			if mode == "pagecache" {
				configs["flush.messages"] = &pageCache
			}
			if _, err := adm.CreateTopic(ctx, 6, rf, configs, topic); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/rf=%d", mode, rf), func(b *testing.B) {
				benchAckLatency(ctx, b, c.bootstrap(), topic)
			})
		}
	}
}

// benchAckLatency produces b.N records at 10,000/s and reports the
// acknowledgement latency's median and 99th percentile.
func benchAckLatency(ctx context.Context, b *testing.B, seeds []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 100)
	var failed atomic.Int64
	// run produces len(lat) records at 10,000/s and records each one's
	// acknowledgement latency.
	run := func(lat []time.Duration) {
		var acked sync.WaitGroup
		const perTick = 10 // 10 records per millisecond
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; i < len(lat); {
			<-tick.C
			for j := 0; j < perTick && i < len(lat); j, i = j+1, i+1 {
				start, slot := time.Now(), &lat[i]
				acked.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
					}
					*slot = time.Since(start)
					acked.Done()
				})
			}
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		acked.Wait()
	}
	// A second of warm-up: connections, producer id, and every
	// partition's followers past the new topic's first fetches.
	run(make([]time.Duration, 10_000))
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	run(lat)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d records failed", n)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
