package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceOptions are the flags of `produce`.
type produceOptions struct {
	*globalOptions
	key          string
	partition    int32
	acks         string
	compression  string
	idempotent   bool
	linger       time.Duration
	keySeparator string
	value        string
	// timeout bounds the delivery of each record (RecordDeliveryTimeout)
	// and every metadata request.
	timeout time.Duration
}

func newProduceCmd(g *globalOptions) *cobra.Command {
	o := &produceOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "produce <topic>",
		Short: "Produce records: one per stdin line, or one given with --value",
		Long: "Produce records to a topic. Each line read from stdin becomes one record\n" +
			"(without its line ending); with --value, that single record is produced\n" +
			"and stdin is not read. On success prints how many records were produced;\n" +
			"exits non-zero if any record failed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.key, "key", "", "key of every record (default: no key)")
	f.Int32Var(&o.partition, "partition", -1, "produce to this partition (default: the partitioner picks, by key hash when keyed)")
	f.StringVar(&o.acks, "acks", "all", "acknowledgements to wait for: all, 1 or 0")
	f.StringVar(&o.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	f.BoolVar(&o.idempotent, "idempotent", true, "idempotent producer (needs --acks all; turned off automatically for other acks)")
	f.DurationVar(&o.linger, "linger", 10*time.Millisecond, "how long to wait for more records before sending a batch")
	f.StringVar(&o.keySeparator, "key-separator", "", "split each line at the first occurrence of this string into key and value")
	f.StringVar(&o.value, "value", "", "produce this single value instead of reading stdin")
	f.DurationVar(&o.timeout, "timeout", defaultTimeout, "fail a record not acknowledged within this time")
	cmd.MarkFlagsMutuallyExclusive("key", "key-separator")
	cmd.MarkFlagsMutuallyExclusive("value", "key-separator")
	return cmd
}

// clientOpts validates the flags and turns them into producer options.
func (o *produceOptions) clientOpts(idempotentSet bool) ([]kgo.Opt, error) {
	acks, err := parseAcks(o.acks)
	if err != nil {
		return nil, err
	}
	codec, err := parseCompression(o.compression)
	if err != nil {
		return nil, err
	}
	if o.partition < -1 {
		return nil, fmt.Errorf("invalid --partition %d", o.partition)
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive")
	}
	if o.linger < 0 {
		return nil, fmt.Errorf("--linger must not be negative")
	}
	idempotent := o.idempotent
	if acks != kgo.AllISRAcks() {
		if idempotentSet && idempotent {
			return nil, fmt.Errorf("--idempotent requires --acks all")
		}
		idempotent = false
	}
	opts := []kgo.Opt{
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(o.linger),
		kgo.RecordDeliveryTimeout(o.timeout),
		// Like kafka-console-producer: a missing topic is created when the
		// broker allows auto-creation (auto.create.topics.enable).
		kgo.AllowAutoTopicCreation(),
	}
	if idempotent {
		// A CLI must honour its timeout even for a request whose fate is
		// unknown; without this, an in-flight idempotent batch is never
		// failed and Flush could wait forever on a dead broker.
		opts = append(opts, kgo.AllowIdempotentProduceCancellation())
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if o.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	return opts, nil
}

// produceTally counts record outcomes reported by promises, which run on
// franz-go's goroutines.
type produceTally struct {
	// outstanding counts records sent whose promise has not run yet.
	outstanding sync.WaitGroup

	mu       sync.Mutex
	ok       int
	failed   int
	firstErr error
}

// wait waits until every sent record's promise has run, or ctx is done.
// Flush alone does not promise that: a record failed before it was
// buffered has its promise called without being counted by Flush.
func (t *produceTally) wait(ctx context.Context) {
	all := make(chan struct{})
	go func() { // ends when the last promise runs; Close fails any left
		t.outstanding.Wait()
		close(all)
	}()
	select {
	case <-all:
	case <-ctx.Done():
	}
}

func (t *produceTally) promise(_ *kgo.Record, err error) {
	defer t.outstanding.Done()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
		return
	}
	t.ok++
}

func (t *produceTally) snapshot() (ok, failed int, firstErr error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ok, t.failed, t.firstErr
}

func (o *produceOptions) run(cmd *cobra.Command, topic string) error {
	opts, err := o.clientOpts(cmd.Flags().Changed("idempotent"))
	if err != nil {
		return err
	}
	cl, err := o.newClient(o.timeout, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx := cmd.Context()
	var tally produceTally
	sent := 0
	send := func(key, value []byte) {
		r := &kgo.Record{Topic: topic, Key: key, Value: value}
		if o.partition >= 0 {
			r.Partition = o.partition
		}
		sent++
		tally.outstanding.Add(1)
		cl.Produce(ctx, r, tally.promise)
	}
	var fixedKey []byte
	if cmd.Flags().Changed("key") {
		fixedKey = []byte(o.key)
	}

	var inputErr error
	if cmd.Flags().Changed("value") {
		send(fixedKey, []byte(o.value))
	} else {
		inputErr = readLines(ctx, cmd.InOrStdin(), func(line string) error {
			if o.keySeparator != "" {
				k, v, err := splitKeyValue(line, o.keySeparator)
				if err != nil {
					return err
				}
				send(k, v)
				return nil
			}
			send(fixedKey, []byte(line))
			return nil
		})
	}

	// Every record fails by itself after --timeout; the extra margin only
	// lets those failures arrive before we give up on Flush. Flush even
	// after an interrupt, to report what became of the records sent.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.timeout+5*time.Second)
	flushErr := cl.Flush(flushCtx)
	tally.wait(flushCtx)
	if flushErr == nil {
		flushErr = flushCtx.Err()
	}
	cancel()

	ok, failed, firstErr := tally.snapshot()
	if pending := sent - ok - failed; pending > 0 {
		failed += pending
		if firstErr == nil {
			firstErr = fmt.Errorf("not acknowledged: %w", flushErr)
		}
	}
	if inputErr != nil {
		return fmt.Errorf("reading input: %w (%d records sent, %d produced)", inputErr, sent, ok)
	}
	if failed > 0 {
		if errors.Is(firstErr, kgo.ErrRecordTimeout) {
			firstErr = fmt.Errorf("no acknowledgement from %s within %v (is the broker running? raise --timeout to wait longer): %w",
				o.bootstrap, o.timeout, firstErr)
		}
		return fmt.Errorf("%d of %d records failed to produce to topic %s (%d produced): %w",
			failed, sent, topic, ok, firstErr)
	}
	_, err = io.WriteString(cmd.OutOrStdout(), producedLine(ok, topic))
	return err
}

// readLines calls fn with every line of r, without its "\n" or "\r\n"
// ending. A last line without a newline counts too. Lines may be of any
// length. It returns ctx's error once ctx is done, even while a read is
// blocked (on a terminal, say).
//
// The reads run on a goroutine owned by readLines, which stops it before
// returning, except when it is blocked inside r.Read after ctx is done: it
// then ends at the next read that returns, or with the process.
func readLines(ctx context.Context, r io.Reader, fn func(string) error) error {
	type result struct {
		line string
		err  error
	}
	results := make(chan result) // unbuffered: one line in flight
	done := make(chan struct{})
	defer close(done)
	go func() {
		br := bufio.NewReaderSize(r, 64*1024)
		for {
			line, err := br.ReadString('\n')
			if len(line) > 0 {
				line = strings.TrimSuffix(line, "\n")
				line = strings.TrimSuffix(line, "\r")
				select {
				case results <- result{line: line}:
				case <-done:
					return
				}
			}
			if err != nil {
				select {
				case results <- result{err: err}:
				case <-done:
				}
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case res := <-results:
			if errors.Is(res.err, io.EOF) {
				return nil
			}
			if res.err != nil {
				return res.err
			}
			if err := fn(res.line); err != nil {
				return err
			}
		}
	}
}
