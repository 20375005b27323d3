package main

// `samsa bench e2e`: one paced producer and one consumer in this process.
// Each value starts with its send time (unix nanos, big-endian) and a
// sequence number (big-endian), followed by filler; the consumer reads
// every partition from the end offsets listed before producing, so it sees
// exactly this run's records. A record's end-to-end latency is its arrival
// time minus its send time.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func (o *benchOptions) runE2E(ctx context.Context, adm *kadm.Client, partitions []int32, stderr io.Writer) (benchResult, error) {
	listCtx, cancel := context.WithTimeout(ctx, o.timeout)
	ends, err := listOffsets(listCtx, adm, o.topic, partitions, true)
	if err != nil {
		err = explainDeadline(listCtx, err, o.bootstrap, o.timeout)
	}
	cancel()
	if err != nil {
		return benchResult{}, err
	}
	offsets := make(map[int32]kgo.Offset, len(ends))
	for p, end := range ends {
		offsets[p] = kgo.NewOffset().At(end)
	}
	consumerCl, err := o.newClient(o.timeout,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: offsets}),
		kgo.FetchMaxWait(fetchMaxWait))
	if err != nil {
		return benchResult{}, err
	}
	defer consumerCl.Close()
	producerCl, err := o.newClient(o.timeout, o.producerOpts()...)
	if err != nil {
		return benchResult{}, err
	}

	payload := benchPayload(o.recordSize)
	var issued atomic.Int64 // sequence numbers below this have been produced
	errs := &benchErrors{}
	tracker := newE2ETracker()
	producerStats, consumerStats := &benchStats{}, &benchStats{}
	producer := &benchProducer{
		cl:    producerCl,
		topic: o.topic,
		value: func(seq int64, sent time.Time) []byte {
			v := make([]byte, o.recordSize)
			binary.BigEndian.PutUint64(v, uint64(sent.UnixNano()))
			binary.BigEndian.PutUint64(v[8:], uint64(seq))
			copy(v[e2eHeaderSize:], payloadValue(payload, o.recordSize-e2eHeaderSize, seq))
			issued.Store(seq + 1)
			return v
		},
		onAck: tracker.ack,
		stats: producerStats,
		errs:  errs,
	}

	start := time.Now()
	warmupEnd := start.Add(o.warmup)
	endAt := time.Time{}
	if o.duration > 0 {
		endAt = warmupEnd.Add(o.duration)
	}
	limit := int64(-1)
	if o.numRecords > 0 {
		limit = o.numRecords
	}

	// The consumer outlives an interrupt: records in flight still arrive.
	consumerCtx, stopConsumer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopConsumer()
	consumer := &e2eConsumer{
		cl: consumerCl, tracker: tracker, stats: consumerStats, errs: errs,
		recordSize: o.recordSize, issued: &issued, warmupEnd: warmupEnd.UnixNano(),
	}
	var consumerDone sync.WaitGroup
	consumerDone.Add(1)
	go func() {
		defer consumerDone.Done()
		consumer.loop(consumerCtx)
	}()

	var scratch latencyHistogram // owned by the progress goroutine
	stopProgress := startProgress(stderr, o.progress, start, func() progressSample {
		s := sampleProgress([]*benchStats{consumerStats}, errs, &scratch, true)
		s.warmup = time.Now().Before(warmupEnd)
		return s
	})

	producer.pace = pacer{start: start, rate: o.throughput}
	producer.sendLoop(ctx, limit, warmupEnd, endAt)
	producer.finish(ctx, o.timeout)

	// Wait up to --timeout for acknowledged records still on their way.
	drained := tracker.producerFinished()
	drainTimer := time.NewTimer(o.timeout)
	select {
	case <-drained:
	case <-drainTimer.C:
	}
	drainTimer.Stop()
	stopConsumer()
	consumerDone.Wait()
	stopProgress()

	lost, duplicates := tracker.outcome()
	if lost > 0 {
		errs.add(lost, fmt.Errorf("%d acknowledged records not received within --timeout %v", lost, o.timeout))
	}
	if duplicates > 0 {
		errs.add(duplicates, fmt.Errorf("%d records received more than once", duplicates))
	}
	res := measuredResult("e2e", o, sumStats([]*benchStats{consumerStats}), warmupEnd, errs)
	res.AckLatency = summarizeLatency(&sumStats([]*benchStats{producerStats}).latency)
	res.Lost, res.Duplicates = &lost, &duplicates
	return res, nil
}

// e2eConsumer reads the run's records; loop runs on one goroutine.
type e2eConsumer struct {
	cl         *kgo.Client
	tracker    *e2eTracker
	stats      *benchStats
	errs       *benchErrors
	recordSize int
	// issued is one more than the highest sequence number produced.
	issued *atomic.Int64
	// warmupEnd is in unix nanos: records sent earlier are not measured.
	warmupEnd int64
}

func (c *e2eConsumer) loop(ctx context.Context) {
	for {
		fetches, ok := pollFetches(ctx, c.cl, c.errs)
		if !ok {
			return
		}
		now := time.Now()
		nowNanos := now.UnixNano()
		// Lock order: tracker, then stats, then errs.
		c.tracker.mu.Lock()
		c.stats.mu.Lock()
		fetches.EachRecord(func(r *kgo.Record) {
			v := r.Value
			if len(v) != c.recordSize {
				c.errs.add(1, fmt.Errorf("unexpected record at %s[%d] offset %d: value of %d bytes, want %d",
					r.Topic, r.Partition, r.Offset, len(v), c.recordSize))
				return
			}
			sent := int64(binary.BigEndian.Uint64(v))
			seq := int64(binary.BigEndian.Uint64(v[8:]))
			if seq < 0 || seq >= c.issued.Load() {
				c.errs.add(1, fmt.Errorf("unexpected record at %s[%d] offset %d: sequence number %d was not produced by this run",
					r.Topic, r.Partition, r.Offset, seq))
				return
			}
			if !c.tracker.receiveLocked(seq) {
				return // a duplicate, counted by the tracker
			}
			c.stats.addLocked(len(v), time.Duration(nowNanos-sent), sent >= c.warmupEnd, now)
		})
		c.stats.mu.Unlock()
		c.tracker.mu.Unlock()
	}
}

// e2eTracker matches acknowledgements with arrivals by sequence number.
// Promises call ack, the consumer receiveLocked, the run producerFinished
// once every promise has run, and outcome at the end.
type e2eTracker struct {
	mu         sync.Mutex
	acked      bitset
	received   bitset
	duplicates int64
	// producerDone is set by producerFinished; from then on missing counts
	// the acknowledged records not yet received, and drained is closed
	// when it reaches zero.
	producerDone bool
	missing      int64
	drained      chan struct{}
}

func newE2ETracker() *e2eTracker { return &e2eTracker{drained: make(chan struct{})} }

func (t *e2eTracker) ack(seq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.acked.set(seq)
}

// receiveLocked records the arrival of seq and reports whether it is the
// first. t.mu must be held.
func (t *e2eTracker) receiveLocked(seq int64) bool {
	if t.received.set(seq) {
		t.duplicates++
		return false
	}
	if t.producerDone && t.acked.has(seq) {
		t.missing--
		if t.missing == 0 {
			close(t.drained)
		}
	}
	return true
}

// producerFinished is called once no ack can come any more. The returned
// channel is closed when every acknowledged record has been received.
func (t *e2eTracker) producerFinished() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.producerDone = true
	t.missing = t.acked.countAndNot(t.received)
	if t.missing == 0 {
		close(t.drained)
	}
	return t.drained
}

// outcome returns the acknowledged records not received, and the
// duplicates.
func (t *e2eTracker) outcome() (lost, duplicates int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acked.countAndNot(t.received), t.duplicates
}

// bitset is a growable set of non-negative integers.
type bitset []uint64

// set adds i and reports whether it was present already.
func (b *bitset) set(i int64) bool {
	w := int(i >> 6)
	if w >= len(*b) {
		*b = append(*b, make([]uint64, w+1-len(*b))...)
	}
	mask := uint64(1) << (i & 63)
	was := (*b)[w]&mask != 0
	(*b)[w] |= mask
	return was
}

func (b bitset) has(i int64) bool {
	w := int(i >> 6)
	return w < len(b) && b[w]&(uint64(1)<<(i&63)) != 0
}

// countAndNot counts the members of b that are not in o.
func (b bitset) countAndNot(o bitset) int64 {
	var n int
	for w, word := range b {
		if w < len(o) {
			word &^= o[w]
		}
		n += bits.OnesCount64(word)
	}
	return int64(n)
}
