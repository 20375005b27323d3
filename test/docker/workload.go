package docker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	samsatest "github.com/samsa-io/samsa/test"
)

// Ack is where the cluster said it stored an acknowledged record.
type Ack struct {
	Partition int32
	Offset    int64
	// At is when the producer saw the acknowledgement.
	At time.Time
}

// Producer writes unique values ("<prefix>-<n>") to a topic with acks=all
// (and franz-go's idempotence) at a steady rate, recording every
// acknowledgement and every failure.
type Producer struct {
	cl     *kgo.Client
	topic  string
	stop   chan struct{}
	done   chan struct{}
	inFly  sync.WaitGroup
	mu     sync.Mutex
	acked  map[string]Ack
	perP   map[int32]int
	failed map[string]error
	sent   int
	// lats are the acknowledgements' latencies (from the Produce call),
	// in order.
	lats []latency
	// keys, if positive, makes the producer keyed: record n has key
	// "kNNN" (n modulo keys) and value keyedValue(key, n).
	keys int
}

// StartProducer starts producing to topic, one record every interval with
// at most 64 in flight, until Stop.
func (c *Cluster) StartProducer(topic string, interval time.Duration) *Producer {
	c.t.Helper()
	return c.startProducer(topic, interval, 0)
}

// StartKeyedProducer is StartProducer with keys, for a compacted topic:
// record n has key "kNNN", n modulo keys, and value keyedValue(key, n)
// (unique). It is not idempotent (so that compaction makes fillers), so a
// retried write may be stored twice.
func (c *Cluster) StartKeyedProducer(topic string, interval time.Duration, keys int) *Producer {
	c.t.Helper()
	return c.startProducer(topic, interval, keys)
}

func (c *Cluster) startProducer(topic string, interval time.Duration, keys int) *Producer {
	c.t.Helper()
	opts := []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RecordDeliveryTimeout(60 * time.Second),
		kgo.MaxBufferedRecords(64),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}
	if keys > 0 {
		// Not idempotent: compaction keeps an idempotent producer's
		// emptied batches one by one (its state is rebuilt from their
		// headers) and merges only other runs of emptied batches into
		// fillers, which a lagging follower must be able to fetch
		// through.
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	p := &Producer{
		cl:     c.Client(opts...),
		keys:   keys,
		topic:  topic,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		acked:  map[string]Ack{},
		perP:   map[int32]int{},
		failed: map[string]error{},
	}
	go p.run(interval)
	return p
}

func (p *Producer) run(interval time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		v := fmt.Sprintf("v-%08d", n)
		var key []byte
		if p.keys > 0 {
			k := fmt.Sprintf("k%03d", n%p.keys)
			v, key = keyedValue(k, n), []byte(k)
		}
		p.mu.Lock()
		p.sent++
		p.mu.Unlock()
		p.inFly.Add(1)
		sentAt := time.Now()
		// Produce blocks while 64 records are buffered (MaxBufferedRecords),
		// which paces the loop when the cluster stalls.
		p.cl.Produce(context.Background(), &kgo.Record{Topic: p.topic, Key: key, Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer p.inFly.Done()
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.failed[v] = err
				return
			}
			now := time.Now()
			p.acked[v] = Ack{Partition: r.Partition, Offset: r.Offset, At: now}
			p.lats = append(p.lats, latency{now, now.Sub(sentAt)})
			p.perP[r.Partition]++
		})
	}
}

// latency is one acknowledgement's time and latency.
type latency struct {
	at time.Time
	d  time.Duration
}

// Latency describes the latencies (from the Produce call to the
// acknowledgement) of the writes acknowledged from `from` to `to`: their
// number, median, 99th percentile and maximum.
func (p *Producer) Latency(from, to time.Time) string {
	p.mu.Lock()
	var ds []time.Duration
	for _, l := range p.lats {
		if !l.at.Before(from) && !l.at.After(to) {
			ds = append(ds, l.d)
		}
	}
	p.mu.Unlock()
	if len(ds) == 0 {
		return "no acknowledgements"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(f float64) time.Duration { return ds[int(f*float64(len(ds)-1))].Round(time.Millisecond) }
	return fmt.Sprintf("%d acknowledged, latency median %v, p99 %v, max %v", len(ds), q(0.5), q(0.99), q(1))
}

// Failed returns the records whose writes failed, with the error each got
// (call after Stop).
func (p *Producer) Failed() map[string]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]error, len(p.failed))
	for v, err := range p.failed {
		out[v] = err
	}
	return out
}

// Acked is the number of acknowledged records, in all and on partition p
// (p < 0: all).
func (p *Producer) Acked(partition int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if partition < 0 {
		return len(p.acked)
	}
	return p.perP[partition]
}

// WaitAcked waits until n more records than now are acknowledged on
// partition (partition < 0: on any).
func (p *Producer) WaitAcked(t testing.TB, partition int32, n int, timeout time.Duration) {
	t.Helper()
	start := p.Acked(partition)
	samsatest.WaitFor(t, timeout, func() error {
		if got := p.Acked(partition) - start; got < n {
			return fmt.Errorf("%d of %d more records acknowledged on partition %d", got, n, partition)
		}
		return nil
	})
}

// Stop stops producing and waits until every record sent is acknowledged
// or has failed. It returns the acknowledged records and the number sent
// and failed.
func (p *Producer) Stop(t testing.TB) (acked map[string]Ack, sent, failed int) {
	t.Helper()
	close(p.stop)
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("producer flush: %v", err)
	}
	p.inFly.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failed) > 0 {
		var some []string
		for v, err := range p.failed {
			if len(some) < 5 {
				some = append(some, v+": "+err.Error())
			}
		}
		sort.Strings(some)
		t.Logf("%d records failed (not acknowledged, may or may not be stored), e.g. %s", len(p.failed), strings.Join(some, "; "))
	}
	out := make(map[string]Ack, len(p.acked))
	for v, a := range p.acked {
		out[v] = a
	}
	return out, p.sent, len(p.failed)
}

// ReadAll reads every partition of topic from its start to its high
// watermark as the cluster reports it now, and returns each partition's
// values by offset.
func (c *Cluster) ReadAll(topic string) map[int32]map[int64]string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := c.Admin().ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		c.t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	return c.readUntil(topic, want)
}

// readUntil reads topic's partitions from their start until it has read a
// record at or past want[p]-1 on every partition p of want, with the
// client options opts, and returns the values by offset.
func (c *Cluster) readUntil(topic string, want map[int32]int64, opts ...kgo.Opt) map[int32]map[int64]string {
	c.t.Helper()
	out := map[int32]map[int64]string{}
	if len(want) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("read %s: positions %v, want end offsets %v: %v", topic, next, want, ctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) { c.t.Logf("read %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if out[r.Partition] == nil {
				out[r.Partition] = map[int64]string{}
			}
			if prev, ok := out[r.Partition][r.Offset]; ok && prev != string(r.Value) {
				c.t.Errorf("%s/%d offset %d read as %q and as %q", topic, r.Partition, r.Offset, prev, r.Value)
			}
			out[r.Partition][r.Offset] = string(r.Value)
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
	return out
}

// CheckNoLoss fails the test for every acknowledged record that was not
// read back at the partition and offset of its acknowledgement, and logs
// duplicates (a value at more than one offset).
func CheckNoLoss(t testing.TB, acked map[string]Ack, read map[int32]map[int64]string) {
	t.Helper()
	var lost []string
	for v, a := range acked {
		if got, ok := read[a.Partition][a.Offset]; !ok || got != v {
			lost = append(lost, fmt.Sprintf("%s acknowledged at %d/%d, read there: %q", v, a.Partition, a.Offset, got))
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged records lost, e.g.:\n  %s", len(lost), len(acked), strings.Join(lost[:min(10, len(lost))], "\n  "))
	}
	seen := map[string]int{}
	total := 0
	for _, byOff := range read {
		for _, v := range byOff {
			seen[v]++
			total++
		}
	}
	dups := 0
	for _, n := range seen {
		if n > 1 {
			dups++
		}
	}
	t.Logf("checked: %d records acknowledged, %d read, %d lost, %d values stored more than once", len(acked), total, len(lost), dups)
}
