package main

// `samsa bench produce`, and the paced producer that e2e shares.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchSendBurst bounds how many records the send loop sends before it
// looks at the clock, the deadline and the pacer again.
const benchSendBurst = 1024

// benchFlushMargin is how long, beyond --timeout, the end of a run waits
// for the promises of records still in flight: each fails by itself after
// --timeout; the margin lets that failure arrive.
const benchFlushMargin = 5 * time.Second

func (o *benchOptions) runProduce(ctx context.Context, stderr io.Writer) (benchResult, error) {
	payload := benchPayload(o.recordSize)
	errs := &benchErrors{}
	producers := make([]*benchProducer, o.producers)
	stats := make([]*benchStats, o.producers)
	for i := range producers {
		cl, err := o.newClient(o.timeout, o.producerOpts()...)
		if err != nil {
			for _, p := range producers[:i] {
				p.cl.Close()
			}
			return benchResult{}, err
		}
		stats[i] = &benchStats{}
		producers[i] = &benchProducer{
			cl:    cl,
			topic: o.topic,
			value: func(seq int64, _ time.Time) []byte { return payloadValue(payload, o.recordSize, seq) },
			stats: stats[i],
			errs:  errs,
		}
	}

	// Limits per producer: an equal share of the records and of the rate.
	limits := make([]int64, o.producers)
	for i := range limits {
		limits[i] = -1
	}
	if o.numRecords > 0 {
		limits = splitEvenly(o.numRecords, o.producers)
	}
	rate := o.throughput
	if rate > 0 {
		rate /= float64(o.producers)
	}

	start := time.Now()
	warmupEnd := start.Add(o.warmup)
	var endAt time.Time
	if o.duration > 0 {
		endAt = warmupEnd.Add(o.duration)
	}
	var scratch latencyHistogram // owned by the progress goroutine
	stopProgress := startProgress(stderr, o.progress, start, func() progressSample {
		s := sampleProgress(stats, errs, &scratch, true)
		s.warmup = time.Now().Before(warmupEnd)
		return s
	})
	var wg sync.WaitGroup
	for i, p := range producers {
		p.pace = pacer{start: start, rate: rate}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.sendLoop(ctx, limits[i], warmupEnd, endAt)
			p.finish(ctx, o.timeout)
		}()
	}
	wg.Wait()
	stopProgress()

	return measuredResult("produce", o, sumStats(stats), warmupEnd, errs), nil
}

// benchProducer is one producer client of a run. sendLoop and finish run
// on one goroutine, which owns pace and sent; promises run on franz-go's
// goroutines and touch only stats, errs, finished and what onAck touches.
type benchProducer struct {
	cl    *kgo.Client
	topic string
	// value returns the value of record seq (from 0), sent at sent.
	value func(seq int64, sent time.Time) []byte
	// onAck, if set, is called with the seq of every acknowledged record.
	onAck func(seq int64)
	stats *benchStats
	errs  *benchErrors

	pace pacer
	// sent counts the records passed to Produce.
	sent int64
	// finished counts the promises that have run.
	finished atomic.Int64
	// outstanding has one member per record whose promise has not run.
	outstanding sync.WaitGroup
}

// sendLoop produces until limit measured records are sent (limit < 0: no
// limit), until endAt (zero: none) or until ctx ends. Records sent before
// warmupEnd are not measured and do not count against limit.
func (p *benchProducer) sendLoop(ctx context.Context, limit int64, warmupEnd, endAt time.Time) {
	// Once buffered, a record lives on after an interrupt so that its
	// fate is known; ctx only cuts short a Produce waiting for space.
	recordCtx := context.WithoutCancel(ctx)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var measured int64
	for {
		now := time.Now()
		if ctx.Err() != nil || (!endAt.IsZero() && !now.Before(endAt)) || (limit >= 0 && measured >= limit) {
			return
		}
		due := p.pace.due(now)
		if due == 0 {
			wait := p.pace.wait(now)
			if !endAt.IsZero() {
				wait = min(wait, endAt.Sub(now))
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			continue
		}
		for range min(due, benchSendBurst) {
			sent := time.Now()
			isMeasured := !sent.Before(warmupEnd)
			if ctx.Err() != nil || (!endAt.IsZero() && !sent.Before(endAt)) || (isMeasured && limit >= 0 && measured >= limit) {
				break
			}
			if isMeasured {
				measured++
			}
			p.send(ctx, recordCtx, sent, isMeasured)
		}
	}
}

// send produces the next record.
func (p *benchProducer) send(ctx, recordCtx context.Context, sent time.Time, measured bool) {
	seq := p.sent
	p.sent++
	p.pace.sent++
	v := p.value(seq, sent)
	r := &kgo.Record{Topic: p.topic, Value: v, Context: recordCtx}
	p.outstanding.Add(1)
	p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
		p.completed(ctx, seq, sent, measured, len(v), err)
	})
}

// completed is the promise of one record.
func (p *benchProducer) completed(ctx context.Context, seq int64, sent time.Time, measured bool, size int, err error) {
	defer p.outstanding.Done()
	defer p.finished.Add(1)
	now := time.Now()
	switch {
	case err == nil:
		p.stats.add(size, now.Sub(sent), measured, now)
		if p.onAck != nil {
			p.onAck(seq)
		}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// Interrupted while Produce waited for buffer space: the record
		// was never sent, so it is neither a result nor an error.
	case errors.Is(err, kgo.ErrRecordTimeout):
		p.errs.add(1, fmt.Errorf("no acknowledgement within --timeout: %w", err))
	default:
		p.errs.add(1, err)
	}
}

// finish waits until every record sent has its promise run (at most
// timeout plus benchFlushMargin), then closes the client, which fails
// what is still buffered. Records whose promise never ran count as errors.
func (p *benchProducer) finish(ctx context.Context, timeout time.Duration) {
	// Wait even after an interrupt: the records in flight are results.
	waitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+benchFlushMargin)
	defer cancel()
	p.cl.Flush(waitCtx) // outcomes are counted by the promises
	if !waitGroupCtx(waitCtx, &p.outstanding) {
		p.errs.add(0, fmt.Errorf("records not acknowledged within %v", timeout+benchFlushMargin))
	}
	p.cl.Close()
	closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), benchFlushMargin)
	defer cancelClose()
	if !waitGroupCtx(closeCtx, &p.outstanding) {
		pending := p.sent - p.finished.Load()
		p.errs.add(pending, fmt.Errorf("%d records neither acknowledged nor failed by the client", pending))
	}
}
