package main

// `samsa bench produce|consume|e2e`: a load generator and meter in the
// manner of kafka-producer-perf-test and kafka-consumer-perf-test. It is a
// plain franz-go client (kgo, kadm) and works against any Kafka cluster.
//
//	samsa bench produce [--num-records N | --duration D] [--throughput R] [--producers K] ...
//	samsa bench consume [--num-records N | --duration D] [--consumers K | --group G] ...
//	samsa bench e2e     [--duration D] [--throughput R] ...
//
// produce measures throughput and ack latency (Produce call to promise);
// consume reads from the start of every partition (by default exactly what
// the topic holds when it starts); e2e runs one paced producer and one
// consumer in this process, each value carrying its send time (unix nanos)
// and a sequence number, and measures the end-to-end latency, losses and
// duplicates. A missing topic is created first (--partitions,
// --replication-factor, --topic-config); an existing one is used as is.
//
// The result is a table on stdout or, with --json, exactly one line holding
// one JSON object (a harness parses it; keep the names stable):
//
//	mode             "produce", "consume" or "e2e"
//	topic            topic name
//	record_size      value bytes per record (consume without --record-size:
//	                 the mean value size read)
//	records, bytes   records measured and their value bytes: acknowledged
//	                 (produce), read (consume), read end to end (e2e);
//	                 records sent during --warmup are left out
//	seconds          the measured time: from the end of the warmup to the
//	                 last measured record's ack (produce) or arrival (e2e);
//	                 from the first record read to the last (consume)
//	records_per_sec  records / seconds (0 when seconds is 0)
//	mb_per_sec       bytes / 1e6 / seconds
//	errors           failed records, plus unexpected values, fetch errors,
//	                 and for e2e the lost and duplicate records
//	first_error      the first error's message, "" when errors is 0 (but
//	                 for a produce or e2e run that measured no record,
//	                 which says so here and exits non-zero)
//	latency_ms       {"p50","p99","p999","max"} in milliseconds: ack latency
//	                 (produce), end-to-end latency (e2e); not for consume
//	ack_latency_ms   e2e only: ack latency, same shape
//	lost             e2e only: acknowledged but not read by the end, after
//	                 waiting up to --timeout for stragglers
//	duplicates       e2e only: records read more than once
//	first_record_ms  consume only: from the start of consuming to the first
//	                 record
//
// Progress lines go to stderr (--progress). The command exits non-zero when
// errors > 0, after printing the result. An interrupt ends the run early;
// what was done is still reported.
//
// Files: bench.go (command, flags, topic setup, shared plumbing),
// bench_produce.go, bench_consume.go, bench_e2e.go (the three modes),
// bench_stats.go (histogram, pacer, output: pure).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { extraCommands = append(extraCommands, newBenchCmd) }

// Defaults of the bench flags that differ by mode or are used twice.
const (
	benchDefaultTopic          = "samsa-bench"
	benchDefaultRecordSize     = 1024
	benchDefaultPartitions     = 6
	benchDefaultProduceRecords = 1_000_000
	benchDefaultE2EDuration    = 30 * time.Second
	benchDefaultE2EThroughput  = 10_000
	// e2eHeaderSize is the send time and sequence number leading every e2e
	// value.
	e2eHeaderSize = 16
	// benchPollInterval paces the few loops that wait for the cluster
	// (topic creation, leaders) or check a deadline.
	benchPollInterval = 50 * time.Millisecond
)

const benchLong = `Measure a Kafka cluster, like kafka-producer-perf-test and
kafka-consumer-perf-test. Works against any Kafka-compatible cluster.

  bench produce   produce --num-records (default 1000000) or for --duration,
                  at --throughput records/s (default unlimited) from
                  --producers clients; reports throughput and ack latency.
  bench consume   read from the start of every partition: by default exactly
                  the records present when it starts, else --num-records or
                  for --duration; --consumers clients split the partitions,
                  or they join --group. Reports throughput and the time to
                  the first record.
  bench e2e       one producer at --throughput (default 10000/s) for
                  --duration (default 30s) and one consumer in this process;
                  reports end-to-end and ack latency, lost and duplicate
                  records.

The topic (--topic, default samsa-bench) is created when missing, with
--partitions, --replication-factor and --topic-config; an existing topic is
used as it is. Records produced during --warmup are not measured.

Prints a table on stdout, or with --json exactly one JSON line:
  {"mode","topic","record_size","records","bytes","seconds",
   "records_per_sec","mb_per_sec","errors","first_error",
   "latency_ms":{"p50","p99","p999","max"}}
plus "ack_latency_ms","lost","duplicates" for e2e and "first_record_ms"
(without "latency_ms") for consume. MB/s counts 10^6 value bytes.
Latencies are in milliseconds. Progress goes to stderr every --progress.
Exits non-zero when there were errors, or when a produce or e2e run
measured no record, after printing the results.

Examples:
  samsa bench produce --num-records 1000000 --record-size 100
  samsa bench produce --duration 60s --throughput 50000 --acks 1 --compression lz4
  samsa bench consume --consumers 3 --json
  samsa bench e2e --throughput 5000 --duration 1m --warmup 10s`

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark a cluster: produce, consume and end-to-end throughput and latency",
		Long:  benchLong,
	}
	cmd.AddCommand(newBenchModeCmd("produce"), newBenchModeCmd("consume"), newBenchModeCmd("e2e"))
	return cmd
}

// benchOptions are the flags of one bench subcommand (each gets its own).
type benchOptions struct {
	// extraOptions carries the bootstrap servers, read from the root's
	// flag once parsed, and --timeout, which bounds admin requests, each
	// record's delivery and the wait for records still expected.
	extraOptions
	mode string

	topic             string
	recordSize        int
	numRecords        int64
	duration          time.Duration
	partitions        int32
	replicationFactor int16
	topicConfigs      []string
	json              bool
	progress          time.Duration
	warmup            time.Duration

	// produce and e2e
	throughput  float64
	acks        string
	compression string
	linger      time.Duration
	// produce
	producers          int
	batchMaxBytes      int32
	maxBufferedRecords int
	// consume
	consumers              int
	group                  string
	fetchMaxBytes          int32
	fetchMaxPartitionBytes int32

	// Set by validate.
	configs map[string]*string
	acksOpt kgo.Acks
	codec   kgo.CompressionCodec
	// checkSize: consume checks every value's length (--record-size given).
	checkSize bool
}

func newBenchModeCmd(mode string) *cobra.Command {
	o := &benchOptions{mode: mode}
	short := map[string]string{
		"produce": "Produce records as fast as possible or at a set rate; report throughput and ack latency",
		"consume": "Consume a topic from the start; report throughput",
		"e2e":     "Produce and consume at a set rate; report end-to-end latency, losses and duplicates",
	}[mode]
	cmd := &cobra.Command{
		Use:   mode,
		Short: short,
		Long:  short + ".\n\nSee 'samsa bench --help' for the modes and the JSON output.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd.Flags().Changed); err != nil {
				return err
			}
			if f := cmd.Flag("bootstrap-server"); f != nil {
				o.bootstrap = f.Value.String()
			}
			o.readCommandConfig(cmd)
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.topic, "topic", benchDefaultTopic, "topic to use; created when missing")
	recordSizeHelp := map[string]string{
		"produce": "value bytes per record",
		"consume": "value bytes every record must have (checked only when given)",
		"e2e":     "value bytes per record, at least 16",
	}[mode]
	numRecordsHelp := map[string]string{
		"produce": "records to measure (0: not bounded by count); 1000000 when neither this nor --duration is given",
		"consume": "records to read (0: not bounded by count); with neither this nor --duration, those present at the start",
		"e2e":     "records to measure (0: not bounded by count)",
	}[mode]
	durationHelp := map[string]string{
		"produce": "how long to measure (0: not bounded by time)",
		"consume": "how long to read (0: not bounded by time)",
		"e2e":     "how long to measure (0: not bounded by time); 30s when neither this nor --num-records is given",
	}[mode]
	f.IntVar(&o.recordSize, "record-size", benchDefaultRecordSize, recordSizeHelp)
	f.Int64Var(&o.numRecords, "num-records", 0, numRecordsHelp)
	f.DurationVar(&o.duration, "duration", 0, durationHelp)
	f.Int32Var(&o.partitions, "partitions", benchDefaultPartitions, "partitions of the topic if it is created")
	f.Int16Var(&o.replicationFactor, "replication-factor", -1, "replication factor of the topic if it is created (-1: the broker's default)")
	f.StringArrayVar(&o.topicConfigs, "topic-config", nil, "config key=value of the topic if it is created (repeatable)")
	f.BoolVar(&o.json, "json", false, "print the result as one JSON line instead of a table")
	f.DurationVar(&o.progress, "progress", time.Second, "print progress to stderr at this interval (0: never)")
	f.DurationVar(&o.timeout, "timeout", defaultTimeout, "bound on admin requests, on each record's delivery and on waiting for records")
	f.DurationVar(&o.warmup, "warmup", 0, "produce/e2e: send for this long first without measuring")
	switch mode {
	case "produce", "e2e":
		throughput, linger := -1.0, 5*time.Millisecond
		throughputHelp := "records/s in total (-1: unlimited)"
		if mode == "e2e" {
			throughput, linger = benchDefaultE2EThroughput, 0
			throughputHelp = "records/s (-1: unlimited)"
		}
		f.Float64Var(&o.throughput, "throughput", throughput, throughputHelp)
		f.StringVar(&o.acks, "acks", "all", "acknowledgements to wait for: all (idempotent), 1 or 0")
		f.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
		f.DurationVar(&o.linger, "linger", linger, "how long a partition's batch waits for more records")
	}
	switch mode {
	case "produce":
		f.IntVar(&o.producers, "producers", 1, "independent producer clients sharing the work")
		f.Int32Var(&o.batchMaxBytes, "batch-max-bytes", 1<<20, "largest record batch a producer sends")
		f.IntVar(&o.maxBufferedRecords, "max-buffered-records", 1<<17, "records a producer buffers before Produce blocks")
	case "consume":
		f.IntVar(&o.consumers, "consumers", 1, "consumer clients; they split the partitions (or share them through --group)")
		f.StringVar(&o.group, "group", "", "consume as members of this consumer group instead of assigning partitions")
		f.Int32Var(&o.fetchMaxBytes, "fetch-max-bytes", 50<<20, "most bytes one fetch response may hold")
		f.Int32Var(&o.fetchMaxPartitionBytes, "fetch-max-partition-bytes", 1<<20, "most bytes per partition in one fetch response")
	}
	return cmd
}

// validate checks the flags, fills in mode defaults and the parsed values.
// changed reports whether a flag was given. It touches no network.
func (o *benchOptions) validate(changed func(string) bool) error {
	switch {
	case o.topic == "":
		return fmt.Errorf("--topic must not be empty")
	case o.recordSize < 1:
		return fmt.Errorf("--record-size must be at least 1")
	case o.mode == "e2e" && o.recordSize < e2eHeaderSize:
		return fmt.Errorf("--record-size must be at least %d for e2e: each value carries its send time and a sequence number", e2eHeaderSize)
	case o.numRecords < 0:
		return fmt.Errorf("--num-records must not be negative")
	case o.duration < 0:
		return fmt.Errorf("--duration must not be negative")
	case o.warmup < 0:
		return fmt.Errorf("--warmup must not be negative")
	case o.progress < 0:
		return fmt.Errorf("--progress must not be negative")
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive")
	case o.partitions < 1:
		return fmt.Errorf("--partitions must be at least 1")
	case o.replicationFactor == 0 || o.replicationFactor < -1:
		return fmt.Errorf("--replication-factor must be at least 1, or -1 for the broker's default")
	}
	configs, err := parseConfigPairs(o.topicConfigs)
	if err != nil {
		return fmt.Errorf("--topic-config: %w", err)
	}
	o.configs = configs

	if o.mode == "consume" {
		switch {
		case o.warmup != 0:
			return fmt.Errorf("--warmup applies to produce and e2e only")
		case o.consumers < 1:
			return fmt.Errorf("--consumers must be at least 1")
		case o.fetchMaxBytes < 1:
			return fmt.Errorf("--fetch-max-bytes must be at least 1")
		case o.fetchMaxPartitionBytes < 1:
			return fmt.Errorf("--fetch-max-partition-bytes must be at least 1")
		}
		o.checkSize = changed("record-size")
		return nil
	}

	// produce and e2e
	if o.throughput != -1 && !(o.throughput > 0 && !math.IsInf(o.throughput, 1)) {
		return fmt.Errorf("--throughput must be a positive number of records/s, or -1 for unlimited")
	}
	if o.linger < 0 {
		return fmt.Errorf("--linger must not be negative")
	}
	if o.acksOpt, err = parseAcks(o.acks); err != nil {
		return err
	}
	if o.codec, err = parseCompression(o.compression); err != nil {
		return err
	}
	if o.mode == "produce" {
		switch {
		case o.producers < 1:
			return fmt.Errorf("--producers must be at least 1")
		case o.batchMaxBytes < 512:
			return fmt.Errorf("--batch-max-bytes must be at least 512")
		case o.maxBufferedRecords < 1:
			return fmt.Errorf("--max-buffered-records must be at least 1")
		}
	}
	if !changed("num-records") && !changed("duration") {
		if o.mode == "produce" {
			o.numRecords = benchDefaultProduceRecords
		} else {
			o.duration = benchDefaultE2EDuration
		}
	}
	if o.numRecords == 0 && o.duration == 0 {
		return fmt.Errorf("bench %s needs --num-records or --duration", o.mode)
	}
	return nil
}

// producerOpts are the client options of a produce or e2e producer.
func (o *benchOptions) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.RequiredAcks(o.acksOpt),
		kgo.ProducerBatchCompression(o.codec),
		kgo.ProducerLinger(o.linger),
		kgo.RecordDeliveryTimeout(o.timeout),
	}
	if o.mode == "produce" {
		opts = append(opts,
			kgo.ProducerBatchMaxBytes(o.batchMaxBytes),
			kgo.MaxBufferedRecords(o.maxBufferedRecords))
	}
	if o.acksOpt == kgo.AllISRAcks() {
		// As in `produce`: honour --timeout even for a batch whose fate
		// is unknown, so that the final flush cannot hang.
		opts = append(opts, kgo.AllowIdempotentProduceCancellation())
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts
}

func (o *benchOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	// Progress lines come from a goroutine while notes may come from
	// others: serialize everything written to stderr.
	stderr = &lockedWriter{w: stderr}

	admCl, err := o.newClient(o.timeout)
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	adm.SetTimeoutMillis(int32(min(o.timeout*3/4, 15*time.Second).Milliseconds()))

	partitions, err := o.prepareTopic(ctx, admCl, adm, stderr)
	if err != nil {
		return err
	}
	var res benchResult
	switch o.mode {
	case "produce":
		res, err = o.runProduce(ctx, stderr)
	case "consume":
		res, err = o.runConsume(ctx, adm, partitions, stderr)
	case "e2e":
		res, err = o.runE2E(ctx, adm, partitions, stderr)
	}
	if err != nil {
		return err
	}
	if res.Errors == 0 {
		res.FirstError = "" // a late outcome may have described a failure that did not happen
	}
	// A run that measured nothing (no record completed after the warmup,
	// say a broker that stalled, or a rate too low for the window) has no
	// figures to give: it says so and fails rather than report 0/s.
	nothing := res.Records == 0 && o.mode != "consume"
	if nothing && res.FirstError == "" {
		res.FirstError = "no record completed in the measured part of the run"
	}
	if o.json {
		err = writeBenchJSON(stdout, res)
	} else {
		err = writeBenchTable(stdout, res)
	}
	if err != nil {
		return err
	}
	if res.Errors > 0 {
		return fmt.Errorf("bench %s: %d %s; first: %s", o.mode, res.Errors, plural(int(min(res.Errors, 2)), "error", "errors"), res.FirstError)
	}
	if nothing {
		return fmt.Errorf("bench %s: %s", o.mode, res.FirstError)
	}
	return nil
}

// prepareTopic creates the topic when it does not exist, waits until every
// partition has a leader, and returns the partitions, sorted.
func (o *benchOptions) prepareTopic(ctx context.Context, cl *kgo.Client, adm *kadm.Client, stderr io.Writer) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	explain := func(err error) error { return explainDeadline(ctx, err, o.bootstrap, o.timeout) }

	state, err := topicState(ctx, cl, o.topic)
	if err != nil {
		return nil, explain(err)
	}
	if state.missing {
		resp, err := adm.CreateTopic(ctx, o.partitions, o.replicationFactor, o.configs, o.topic)
		switch {
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Created in between by someone else: use it.
		case err != nil:
			return nil, explain(fmt.Errorf("creating topic %q: %w", o.topic, kafkaErr(err, resp.ErrMessage)))
		default:
			fmt.Fprintf(stderr, "Created topic %s with %d partitions.\n", o.topic, o.partitions)
		}
	}
	// Wait for the topic's metadata, with a leader for every partition
	// (a new topic's leaders are elected asynchronously).
	for !state.ready() {
		timer := time.NewTimer(benchPollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, explain(fmt.Errorf("topic %q has no leader for every partition: %w", o.topic, ctx.Err()))
		case <-timer.C:
		}
		if state, err = topicState(ctx, cl, o.topic); err != nil {
			return nil, explain(err)
		}
	}
	if n := len(state.partitions); n != int(o.partitions) {
		fmt.Fprintf(stderr, "Topic %s exists with %d partitions, not --partitions %d; using it as it is.\n", o.topic, n, o.partitions)
	}
	return state.partitions, nil
}

// benchTopicState is what a metadata request says about the topic.
type benchTopicState struct {
	missing bool
	// partitions are sorted; leaderless counts those without a leader.
	partitions []int32
	leaderless int
}

func (s benchTopicState) ready() bool {
	return !s.missing && len(s.partitions) > 0 && s.leaderless == 0
}

// topicState asks a broker directly, bypassing the client's metadata
// cache, so that a topic just created is seen as soon as it exists.
func topicState(ctx context.Context, cl *kgo.Client, topic string) (benchTopicState, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return benchTopicState{}, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		switch terr := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(terr, kerr.UnknownTopicOrPartition):
			return benchTopicState{missing: true}, nil
		case errors.Is(terr, kerr.LeaderNotAvailable):
			return benchTopicState{}, nil // being created
		case terr != nil:
			return benchTopicState{}, fmt.Errorf("topic %q: %w", topic, terr)
		}
		var s benchTopicState
		for _, p := range t.Partitions {
			s.partitions = append(s.partitions, p.Partition)
			if p.Leader < 0 || p.ErrorCode != 0 {
				s.leaderless++
			}
		}
		slices.Sort(s.partitions)
		return s, nil
	}
	return benchTopicState{missing: true}, nil
}

// listOffsets lists the start or end offset of every partition of topic,
// retrying until all are known (leaders of a new topic may still be
// settling) or ctx ends.
func listOffsets(ctx context.Context, adm *kadm.Client, topic string, partitions []int32, end bool) (map[int32]int64, error) {
	for {
		list := adm.ListStartOffsets
		if end {
			list = adm.ListEndOffsets
		}
		listed, err := list(ctx, topic)
		if err == nil {
			offsets := make(map[int32]int64, len(partitions))
			for _, p := range partitions {
				lo, ok := listed.Lookup(topic, p)
				switch {
				case !ok:
					err = fmt.Errorf("no offset listed for %s[%d]", topic, p)
				case lo.Err != nil:
					err = fmt.Errorf("listing offsets of %s[%d]: %w", topic, p, lo.Err)
				}
				if err != nil {
					break
				}
				offsets[p] = lo.Offset
			}
			if err == nil {
				return offsets, nil
			}
		}
		timer := time.NewTimer(benchPollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-timer.C:
		}
	}
}

// benchStats accumulates the records that one producer or consumer
// completed. Promise or poll goroutines add; the progress goroutine and
// the end of the run read.
type benchStats struct {
	mu sync.Mutex
	// all and allBytes count every completed record, warmup included.
	all, allBytes int64
	// records and bytes count the measured records.
	records, bytes int64
	// last is when the last measured record completed.
	last time.Time
	// total holds the latencies of measured records.
	total latencyHistogram
	// interval holds the latencies since the last progress sample,
	// warmup included.
	interval latencyHistogram
}

// add records one completed record of size bytes.
func (s *benchStats) add(size int, latency time.Duration, measured bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(size, latency, measured, now)
}

func (s *benchStats) addLocked(size int, latency time.Duration, measured bool, now time.Time) {
	s.all++
	s.allBytes += int64(size)
	s.interval.Record(latency)
	if measured {
		s.records++
		s.bytes += int64(size)
		s.total.Record(latency)
		if now.After(s.last) {
			s.last = now
		}
	}
}

// addCount records n measured records without latency (consume).
func (s *benchStats) addCount(n, bytes int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all += n
	s.allBytes += bytes
	s.records += n
	s.bytes += bytes
	if n > 0 && now.After(s.last) {
		s.last = now
	}
}

// benchTotals sums several benchStats at the end of a run.
type benchTotals struct {
	records, bytes int64
	last           time.Time
	latency        latencyHistogram
}

// measuredResult is the result of a produce or e2e run whose measured
// part began at from: throughput up to its last record, errors, and the
// latency of t.
func measuredResult(mode string, o *benchOptions, t *benchTotals, from time.Time, errs *benchErrors) benchResult {
	res := benchResult{Mode: mode, Topic: o.topic, RecordSize: o.recordSize}
	var elapsed time.Duration
	if t.records > 0 {
		elapsed = t.last.Sub(from)
	}
	res.setThroughput(t.records, t.bytes, elapsed)
	res.Errors, res.FirstError = errs.snapshot()
	res.Latency = summarizeLatency(&t.latency)
	return res
}

func sumStats(stats []*benchStats) *benchTotals {
	t := &benchTotals{}
	for _, s := range stats {
		s.mu.Lock()
		t.records += s.records
		t.bytes += s.bytes
		if s.last.After(t.last) {
			t.last = s.last
		}
		t.latency.Merge(&s.total)
		s.mu.Unlock()
	}
	return t
}

// benchErrors counts errors of a run and keeps the first one's message.
// pollFetches polls cl once and counts its fetch errors (but the end of
// ctx's) in errs; it reports false once the client or ctx is done.
func pollFetches(ctx context.Context, cl *kgo.Client, errs *benchErrors) (kgo.Fetches, bool) {
	fetches := cl.PollFetches(ctx)
	if fetches.IsClientClosed() || ctx.Err() != nil {
		return nil, false
	}
	fetches.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		errs.add(1, fmt.Errorf("fetching %s[%d]: %w", t, p, err))
	})
	return fetches, true
}

type benchErrors struct {
	mu    sync.Mutex
	count int64
	first string
}

// add counts n errors described by err (the description is kept when it
// is the first one; n may be 0 to only describe).
func (e *benchErrors) add(n int64, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.count += n
	if e.first == "" && err != nil {
		e.first = err.Error()
	}
}

func (e *benchErrors) snapshot() (int64, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count, e.first
}

// sampleProgress sums the stats for a progress line and starts a new
// latency interval. scratch is reused between calls.
func sampleProgress(stats []*benchStats, errs *benchErrors, scratch *latencyHistogram, hasLatency bool) progressSample {
	scratch.Reset()
	var p progressSample
	for _, s := range stats {
		s.mu.Lock()
		p.records += s.all
		p.bytes += s.allBytes
		scratch.Merge(&s.interval)
		s.interval.Reset()
		s.mu.Unlock()
	}
	p.errors, _ = errs.snapshot()
	p.hasLatency = hasLatency
	p.p99 = scratch.Percentile(0.99)
	return p
}

// startProgress prints a progress line to w every interval until the
// returned stop is called; stop waits for the printing goroutine to end.
// sample is called on that goroutine. interval 0 prints nothing.
func startProgress(w io.Writer, interval time.Duration, start time.Time, sample func() progressSample) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		prev, prevAt := progressSample{}, start
		for {
			select {
			case <-done:
				return
			case now := <-ticker.C:
				cur := sample()
				io.WriteString(w, formatProgress(now.Sub(start), now.Sub(prevAt), prev, cur))
				prev, prevAt = cur, now
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// benchPayloadWindow is the size of the pseudo-random text record values
// are cut from: consecutive values are different windows of it, so a
// batch compresses about as well as text of its alphabet does, not as well
// as one value repeated.
const benchPayloadWindow = 1 << 20

// benchPayload returns benchPayloadWindow+size bytes of pseudo-random
// letters and digits from a fixed seed (62 symbols: about 6 bits of
// entropy per byte, so compression ratios stay plausible).
func benchPayload(size int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	rng := rand.New(rand.NewPCG(0x5a115a, 0xbe4c4))
	b := make([]byte, benchPayloadWindow+size)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}

// payloadValue returns the size-byte window of payload for record seq.
func payloadValue(payload []byte, size int, seq int64) []byte {
	off := int((seq * int64(size)) % benchPayloadWindow)
	return payload[off : off+size : off+size]
}

// waitGroupCtx waits for wg or until ctx ends; it reports whether wg
// finished. The waiting goroutine ends with wg.
func waitGroupCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	all := make(chan struct{})
	go func() { // ends when wg does; every wg member is bounded
		wg.Wait()
		close(all)
	}()
	select {
	case <-all:
		return true
	case <-ctx.Done():
		return false
	}
}
