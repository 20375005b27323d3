package test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedRecord is one acknowledged write: where the broker said it put it,
// when it was sent (the record's timestamp) and acknowledged.
type ackedRecord struct {
	offset        int64
	value         string
	sent, ackedAt time.Time
}

// ackedWorkload is the fault scenarios' producer: writers goroutines send
// unique values with acks=all (idempotent) round-robin over a topic's
// partitions and record every acknowledgement with its offset. Failed
// sends are counted but not recorded: they may or may not be in the log.
type ackedWorkload struct {
	topic string
	cl    *kgo.Client

	mu     sync.Mutex
	acked  map[int32][]ackedRecord
	total  int
	failed int

	stop chan struct{}
	wg   sync.WaitGroup
}

// workloadSeq numbers workloads, so that two on one topic write different
// values.
var workloadSeq atomic.Int64

// startAckedWorkload starts writing to every partition of topic (it must
// have partitions partitions); opts adjust the producer.
func startAckedWorkload(t testing.TB, c *Cluster, topic string, partitions int32, writers int, opts ...kgo.Opt) *ackedWorkload {
	t.Helper()
	w := &ackedWorkload{
		topic: topic,
		cl: c.Client(append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...),
		acked: map[int32][]ackedRecord{},
		stop:  make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	id := workloadSeq.Add(1)
	for g := range writers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				r := &kgo.Record{Topic: topic, Partition: int32((g + i) % int(partitions)),
					Value: fmt.Appendf(nil, "%s-w%d-g%d-%07d", topic, id, g, i)}
				w.cl.Produce(ctx, r, w.record)
				if i%64 == 63 {
					// Keep the amount in flight bounded.
					if err := w.cl.Flush(ctx); err != nil {
						return
					}
				}
			}
		}()
	}
	t.Cleanup(func() { w.halt(); cancel() })
	return w
}

func (w *ackedWorkload) record(r *kgo.Record, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failed++
		return
	}
	w.acked[r.Partition] = append(w.acked[r.Partition], ackedRecord{r.Offset, string(r.Value), r.Timestamp, time.Now()})
	w.total++
}

// Acked returns how many writes have been acknowledged.
func (w *ackedWorkload) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// FirstAckAfter returns how long after t the first write to partition p
// sent after t was acknowledged (false if none was): after a leader
// failure at t, the time until the partition serves writes again.
func (w *ackedWorkload) FirstAckAfter(p int32, t time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, a := range w.acked[p] {
		if a.sent.After(t) && (first.IsZero() || a.ackedAt.Before(first)) {
			first = a.ackedAt
		}
	}
	return first.Sub(t), !first.IsZero()
}

// WaitAcked waits until more than n writes are acknowledged.
func (w *ackedWorkload) WaitAcked(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, func() error {
		if got := w.Acked(); got <= n {
			return fmt.Errorf("%d writes of %s acknowledged, waiting for more than %d", got, w.topic, n)
		}
		return nil
	})
}

// halt stops the writers; sends in flight end with the client's delivery
// timeout.
func (w *ackedWorkload) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// Stop stops the writers and waits for every send in flight to end.
func (w *ackedWorkload) Stop(t testing.TB) {
	t.Helper()
	w.halt()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.cl.Flush(ctx); err != nil {
		t.Fatalf("flush the workload's producer: %v", err)
	}
}

// Verify reads the whole topic up to its end offsets and checks that every
// acknowledged value is at the offset it was acknowledged with, exactly
// once in the topic. It returns the number of acknowledged writes.
func (w *ackedWorkload) Verify(t testing.TB, c *Cluster) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	var ends kadm.ListedOffsets
	WaitFor(t, 30*time.Second, func() error {
		var err error
		ends, err = c.Admin().ListEndOffsets(ctx, w.topic)
		if err == nil {
			err = ends.Error()
		}
		return err
	})
	consumer := c.Client(kgo.ConsumeTopics(w.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	verifyAcked(ctx, t, consumer, w.topic, ends, w.acked)
	return w.total
}

// verifyAcked reads topic with consumer (positioned at its start) up to the
// end offsets ends, and checks that every acknowledged value is at the
// offset it was acknowledged with, exactly once in the topic. It returns
// the number of acknowledged writes checked.
func verifyAcked(ctx context.Context, t testing.TB, consumer *kgo.Client, topic string, ends kadm.ListedOffsets, acked map[int32][]ackedRecord) int {
	t.Helper()
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	logs := map[int32]map[int64]string{}
	seen := map[string]int{}
	for n := int64(0); n < end; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", n, end, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if logs[r.Partition] == nil {
				logs[r.Partition] = map[int64]string{}
			}
			logs[r.Partition][r.Offset] = string(r.Value)
			seen[string(r.Value)]++
			n++
		})
	}
	total := 0
	for p, recs := range acked {
		for _, a := range recs {
			if got := logs[p][a.offset]; got != a.value {
				t.Fatalf("%s-%d offset %d: acknowledged %q, the log has %q", topic, p, a.offset, a.value, got)
			}
			if seen[a.value] != 1 {
				t.Fatalf("acknowledged %q is in %s %d times", a.value, topic, seen[a.value])
			}
			total++
		}
	}
	return total
}
