package main

// `samsa bench consume`: K consumer clients read the topic from the start
// of every partition, by direct assignment (partitions split between
// them) or as members of --group.

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchConsumeGoal is what a consume run reads before it stops.
type benchConsumeGoal struct {
	// target is the number of records to read; -1: until --duration.
	target int64
	// ends, when set, are the end offsets at the start: only records
	// below them count (the records present when the run started).
	ends map[int32]int64
}

func (o *benchOptions) runConsume(ctx context.Context, adm *kadm.Client, partitions []int32, stderr io.Writer) (benchResult, error) {
	goal, err := o.consumeGoal(ctx, adm, partitions)
	if err != nil {
		return benchResult{}, err
	}

	// Direct assignment: partition i goes to consumer i mod K.
	var assignments [][]int32
	if o.group == "" {
		assignments = make([][]int32, min(o.consumers, len(partitions)))
		for i, p := range partitions {
			assignments[i%len(assignments)] = append(assignments[i%len(assignments)], p)
		}
		if o.consumers > len(partitions) {
			fmt.Fprintf(stderr, "Topic %s has %d partitions: running %d consumers, not %d.\n", o.topic, len(partitions), len(partitions), o.consumers)
		}
	} else {
		assignments = make([][]int32, o.consumers)
	}

	errs := &benchErrors{}
	res := benchResult{Mode: "consume", Topic: o.topic, RecordSize: o.recordSize}
	start := time.Now()
	var firstAt, lastAt atomic.Int64 // unix nanos of the first and last record read; 0: none yet
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if o.duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, o.duration)
		defer cancel()
	}

	var clients []*kgo.Client
	var stats []*benchStats
	if goal.target != 0 {
		for _, parts := range assignments {
			cl, err := o.newClient(o.timeout, o.consumerOpts(parts)...)
			if err != nil {
				closeClients(clients)
				return benchResult{}, err
			}
			clients = append(clients, cl)
			stats = append(stats, &benchStats{})
		}
	}

	var scratch latencyHistogram // owned by the progress goroutine
	stopProgress := startProgress(stderr, o.progress, start, func() progressSample {
		return sampleProgress(stats, errs, &scratch, false)
	})
	var claimed atomic.Int64 // records counted towards goal.target
	var wg sync.WaitGroup
	for i, cl := range clients {
		c := &benchConsumer{o: o, cl: cl, stats: stats[i], errs: errs, goal: goal,
			claimed: &claimed, firstAt: &firstAt, lastAt: &lastAt, reached: stopRun}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(runCtx)
		}()
	}

	// Wait for the goal, --duration or an interrupt; while records are
	// expected, give up after --timeout without one.
	idle := false
	if len(clients) > 0 {
		ticker := time.NewTicker(max(min(o.timeout/4, time.Second), time.Millisecond))
	wait:
		for {
			select {
			case <-runCtx.Done():
				break wait
			case now := <-ticker.C:
				last := start
				if n := lastAt.Load(); n != 0 {
					last = time.Unix(0, n)
				}
				if goal.target > 0 && now.Sub(last) >= o.timeout {
					idle = true
					stopRun()
					break wait
				}
			}
		}
		ticker.Stop()
	}
	stopRun()
	wg.Wait()
	closeClients(clients)
	stopProgress()

	totals := sumStats(stats)
	if idle {
		missing := goal.target - totals.records
		errs.add(missing, fmt.Errorf("read %d of %d records: none arrived for --timeout %v", totals.records, goal.target, o.timeout))
	}
	var elapsed time.Duration
	firstMillis := 0.0
	if first := firstAt.Load(); first != 0 {
		elapsed = totals.last.Sub(time.Unix(0, first))
		firstMillis = durationMillis(time.Unix(0, first).Sub(start))
		if elapsed <= 0 {
			fmt.Fprintf(stderr, "All records arrived in one poll: too few to measure throughput.\n")
		}
	}
	res.setThroughput(totals.records, totals.bytes, elapsed)
	res.FirstRecordMillis = &firstMillis
	if !o.checkSize {
		res.RecordSize = 0
		if totals.records > 0 {
			res.RecordSize = int((totals.bytes + totals.records/2) / totals.records)
		}
	}
	res.Errors, res.FirstError = errs.snapshot()
	return res, nil
}

// consumeGoal works out what to read: --num-records, or until --duration,
// or (neither given) the records present now: from the log start (or the
// group's committed offset) to the end offset of every partition.
func (o *benchOptions) consumeGoal(ctx context.Context, adm *kadm.Client, partitions []int32) (benchConsumeGoal, error) {
	switch {
	case o.numRecords > 0:
		return benchConsumeGoal{target: o.numRecords}, nil
	case o.duration > 0:
		return benchConsumeGoal{target: -1}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	explain := func(err error) error { return explainDeadline(ctx, err, o.bootstrap, o.timeout) }
	ends, err := listOffsets(ctx, adm, o.topic, partitions, true)
	if err != nil {
		return benchConsumeGoal{}, explain(err)
	}
	starts, err := listOffsets(ctx, adm, o.topic, partitions, false)
	if err != nil {
		return benchConsumeGoal{}, explain(err)
	}
	if o.group != "" {
		committed, err := adm.FetchOffsets(ctx, o.group)
		if err != nil {
			return benchConsumeGoal{}, explain(fmt.Errorf("fetching the offsets of group %q: %w", o.group, err))
		}
		for _, p := range partitions {
			if c, ok := committed.Lookup(o.topic, p); ok && c.Err == nil && c.At >= 0 {
				starts[p] = max(starts[p], c.At)
			}
		}
	}
	goal := benchConsumeGoal{ends: ends}
	for _, p := range partitions {
		goal.target += max(ends[p]-starts[p], 0)
	}
	return goal, nil
}

// consumerOpts are the options of a consumer reading partitions (direct
// assignment) or joining --group.
func (o *benchOptions) consumerOpts(partitions []int32) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.FetchMaxBytes(o.fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(o.fetchMaxPartitionBytes),
		// A short wait keeps the end of a run prompt: Close waits for
		// fetches in flight, which an idle broker holds this long.
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if o.group != "" {
		return append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(o.topic))
	}
	offsets := make(map[int32]kgo.Offset, len(partitions))
	for _, p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	return append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: offsets}))
}

// benchConsumer is one consumer client of a run; loop runs on one
// goroutine. claimed, firstAt and lastAt are shared by all consumers.
type benchConsumer struct {
	o     *benchOptions
	cl    *kgo.Client
	stats *benchStats
	errs  *benchErrors
	goal  benchConsumeGoal
	// claimed counts the records counted towards goal.target.
	claimed *atomic.Int64
	// firstAt and lastAt are the unix nanos of the first and last
	// counted record's arrival.
	firstAt, lastAt *atomic.Int64
	// reached is called once goal.target records are counted.
	reached func()
}

func (c *benchConsumer) loop(ctx context.Context) {
	for {
		fetches, ok := pollFetches(ctx, c.cl, c.errs)
		if !ok {
			return
		}
		var n, bytes int64
		reached := false
		fetches.EachRecord(func(r *kgo.Record) {
			if c.goal.ends != nil && r.Offset >= c.goal.ends[r.Partition] {
				return // produced after the start
			}
			if c.goal.target >= 0 {
				k := c.claimed.Add(1)
				if k > c.goal.target {
					return
				}
				reached = reached || k == c.goal.target
			}
			if c.o.checkSize && len(r.Value) != c.o.recordSize {
				c.errs.add(1, fmt.Errorf("%s[%d] offset %d: value of %d bytes, want --record-size %d",
					r.Topic, r.Partition, r.Offset, len(r.Value), c.o.recordSize))
			}
			n++
			bytes += int64(len(r.Value))
		})
		if n > 0 {
			now := time.Now()
			c.firstAt.CompareAndSwap(0, now.UnixNano())
			c.lastAt.Store(now.UnixNano())
			c.stats.addCount(n, bytes, now)
		}
		if reached {
			c.reached()
			return
		}
	}
}

// closeClients closes the clients concurrently (each may wait for a fetch
// in flight, or leave a group) and waits for all.
func closeClients(clients []*kgo.Client) {
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.Close()
		}()
	}
	wg.Wait()
}
