package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupJoinTimeout bounds how long `consume --group --timeout d` waits to
// be assigned partitions before its idle clock starts; joining can take
// seconds (Kafka delays a new group's first rebalance by 3s by default).
const groupJoinTimeout = defaultTimeout

// assignPollSlice is how long one poll may wait while a group consumer
// with an idle --timeout has no partitions yet.
const assignPollSlice = 100 * time.Millisecond

// fetchMaxWait is how long a broker may hold a fetch waiting for data.
const fetchMaxWait = 500 * time.Millisecond

// consumeOptions are the flags of `consume`.
type consumeOptions struct {
	*globalOptions
	fromBeginning bool
	offset        string
	partition     int32
	maxMessages   int
	// timeout is the idle timeout: stop after this long without a record.
	// Zero waits forever.
	timeout time.Duration
	group   string
	format  recordFormat
}

func newConsumeCmd(g *globalOptions) *cobra.Command {
	o := &consumeOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "consume <topic>",
		Short: "Print records of a topic, one value per line",
		Long: "Print records of a topic, one value per line. Starts at the end of each\n" +
			"partition unless --from-beginning or --offset say otherwise. Stops after\n" +
			"--max-messages records, after --timeout without a new record, or on\n" +
			"interrupt, then prints \"Processed a total of N messages\" on stderr.\n\n" +
			"With --group it joins that consumer group, starts at the group's\n" +
			"committed offsets (--from-beginning/--offset earliest|latest only apply\n" +
			"to partitions without one) and commits what it printed, plus the start\n" +
			"position of partitions it printed nothing from, as Kafka's consumer does.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.fromBeginning, "from-beginning", false, "start at the earliest offset (same as --offset earliest)")
	f.StringVar(&o.offset, "offset", "", "where to start: earliest, latest, or an offset (needs --partition); default latest")
	f.Int32Var(&o.partition, "partition", -1, "consume only this partition (default: all)")
	f.IntVar(&o.maxMessages, "max-messages", 0, "stop after this many records (0: no limit)")
	f.DurationVar(&o.timeout, "timeout", 0, "stop after this long without a new record (0: wait until interrupted)")
	f.StringVar(&o.group, "group", "", "consume as a member of this consumer group and commit offsets")
	f.BoolVar(&o.format.Key, "print-key", false, "print the key before the value, tab-separated")
	f.BoolVar(&o.format.Offset, "print-offset", false, "print \"Offset:N\" before the key and value")
	f.BoolVar(&o.format.Partition, "print-partition", false, "print \"Partition:N\" first")
	cmd.MarkFlagsMutuallyExclusive("from-beginning", "offset")
	cmd.MarkFlagsMutuallyExclusive("group", "partition")
	return cmd
}

// start validates the flag combination and returns where to start.
func (o *consumeOptions) start() (startOffset, error) {
	if o.partition < -1 {
		return startOffset{}, fmt.Errorf("invalid --partition %d", o.partition)
	}
	if o.maxMessages < 0 {
		return startOffset{}, fmt.Errorf("--max-messages must not be negative")
	}
	if o.timeout < 0 {
		return startOffset{}, fmt.Errorf("--timeout must not be negative")
	}
	if o.group != "" && o.partition >= 0 {
		return startOffset{}, fmt.Errorf("--group and --partition cannot be used together")
	}
	switch {
	case o.fromBeginning:
		return startOffset{kind: "earliest"}, nil
	case o.offset == "":
		return startOffset{kind: "latest"}, nil
	}
	off, err := parseStartOffset(o.offset)
	if err != nil {
		return startOffset{}, err
	}
	if off.kind == "exact" {
		if o.group != "" {
			return startOffset{}, fmt.Errorf("--offset %s cannot be used with --group (a group starts at its committed offsets)", o.offset)
		}
		if o.partition < 0 {
			return startOffset{}, fmt.Errorf("--offset %s needs --partition", o.offset)
		}
	}
	return off, nil
}

// clientOpts returns the consumer options for starting at off. For a
// group, gs resolves and remembers start positions.
func (o *consumeOptions) clientOpts(topic string, off startOffset, gs *groupStart) []kgo.Opt {
	switch {
	case o.group != "":
		// For a group, off only applies to partitions without a committed
		// offset, like Kafka's auto.offset.reset.
		return []kgo.Opt{
			kgo.ConsumerGroup(o.group),
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(off.kgoOffset()),
			kgo.DisableAutoCommit(),
			// Nothing is revoked between printing a batch and committing
			// it: see AllowRebalance in run.
			kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { gs.markAssigned() }),
			kgo.AdjustFetchOffsetsFn(gs.resolve),
			kgo.OnPartitionsRevoked(gs.forget),
			kgo.OnPartitionsLost(gs.forget),
		}
	case o.partition >= 0:
		return []kgo.Opt{
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {o.partition: off.kgoOffset()}}),
			// An offset outside the log resets to the end, as
			// kafka-console-consumer does.
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		}
	default:
		return []kgo.Opt{
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(off.kgoOffset()),
		}
	}
}

// groupStart tracks a group consumer's assignment: when partitions first
// arrived (for the idle clock), and the start offsets of assigned
// partitions that had no committed offset. Those are committed as soon as
// the poll loop sees them, so that a run which prints nothing from a
// partition still moves the group there, as Kafka's auto-commit of
// positions does: a later run then sees records produced in between.
//
// resolve, forget and markAssigned run on franz-go's group goroutine; take
// runs on the poll loop.
type groupStart struct {
	adm      *kadm.Client
	earliest bool // reset policy for partitions without commits
	// assignedAt is when partitions were first assigned (UnixNano; 0: not
	// yet).
	assignedAt atomic.Int64

	mu sync.Mutex
	// pending are resolved start offsets not yet committed.
	pending map[string]map[int32]kgo.EpochOffset
}

func (gs *groupStart) markAssigned() { gs.assignedAt.CompareAndSwap(0, time.Now().UnixNano()) }

// resolve replaces "no committed offset" (a negative offset: the reset
// policy) by the concrete offset the policy means now, and remembers it to
// be committed. If listing offsets fails, franz-go applies the policy
// itself and nothing is remembered.
func (gs *groupStart) resolve(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var topics []string
	for t, ps := range offsets {
		for _, o := range ps {
			if o.EpochOffset().Offset < 0 {
				topics = append(topics, t)
				break
			}
		}
	}
	if len(topics) == 0 {
		return offsets, nil
	}
	ctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	list := gs.adm.ListEndOffsets
	if gs.earliest {
		list = gs.adm.ListStartOffsets
	}
	listed, err := list(ctx, topics...)
	if err != nil {
		return offsets, nil
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for _, t := range topics {
		for p, o := range offsets[t] {
			if o.EpochOffset().Offset >= 0 {
				continue
			}
			lo, ok := listed.Lookup(t, p)
			if !ok || lo.Err != nil || lo.Offset < 0 {
				continue
			}
			offsets[t][p] = kgo.NewOffset().At(lo.Offset)
			if gs.pending == nil {
				gs.pending = make(map[string]map[int32]kgo.EpochOffset)
			}
			if gs.pending[t] == nil {
				gs.pending[t] = make(map[int32]kgo.EpochOffset)
			}
			gs.pending[t][p] = kgo.EpochOffset{Epoch: -1, Offset: lo.Offset}
		}
	}
	return offsets, nil
}

// forget drops pending offsets of partitions this member no longer owns.
func (gs *groupStart) forget(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for t, ps := range lost {
		for _, p := range ps {
			delete(gs.pending[t], p)
		}
	}
}

// take returns and clears the pending offsets, leaving out partitions in
// skip (which are about to be committed further along).
func (gs *groupStart) take(skip map[string]map[int32]bool) map[string]map[int32]kgo.EpochOffset {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var out map[string]map[int32]kgo.EpochOffset
	for t, ps := range gs.pending {
		for p, eo := range ps {
			if skip[t][p] {
				continue
			}
			if out == nil {
				out = make(map[string]map[int32]kgo.EpochOffset)
			}
			if out[t] == nil {
				out[t] = make(map[int32]kgo.EpochOffset)
			}
			out[t][p] = eo
		}
	}
	gs.pending = nil
	return out
}

// commitGroup commits the pending start offsets of partitions not in
// printed, then the printed records. Start offsets go first: a partition's
// printed records always commit a later offset than its start.
func commitGroup(ctx context.Context, cl *kgo.Client, gs *groupStart, printed []*kgo.Record) error {
	skip := make(map[string]map[int32]bool)
	for _, r := range printed {
		if skip[r.Topic] == nil {
			skip[r.Topic] = make(map[int32]bool)
		}
		skip[r.Topic][r.Partition] = true
	}
	if starts := gs.take(skip); len(starts) > 0 {
		var cerr error
		cl.CommitOffsetsSync(ctx, starts, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && cerr == nil {
						cerr = fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, perr)
					}
				}
			}
		})
		if cerr != nil {
			return cerr
		}
	}
	if len(printed) == 0 {
		return nil
	}
	return cl.CommitRecords(ctx, printed...)
}

// checkTopic fails early, within a bounded time, when the brokers are
// unreachable or the topic (or partition) does not exist; otherwise a
// consumer would wait silently.
func (o *consumeOptions) checkTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	timeout := o.timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return explainDeadline(ctx, err, o.bootstrap, timeout)
	}
	if err := topicLoadError(md.Topics); err != nil {
		return err
	}
	if o.partition >= 0 {
		if _, ok := md.Topics[topic].Partitions[o.partition]; !ok {
			return fmt.Errorf("topic %q has no partition %d", topic, o.partition)
		}
	}
	return nil
}

func (o *consumeOptions) run(cmd *cobra.Command, topic string) (err error) {
	off, err := o.start()
	if err != nil {
		return err
	}
	ctx := cmd.Context()

	// A separate client for metadata and offset listing, so that the
	// check runs before the consumer starts joining a group.
	adminCl, err := o.newClient(o.timeout)
	if err != nil {
		return err
	}
	defer adminCl.Close()
	adm := kadm.NewClient(adminCl)
	if err := o.checkTopic(ctx, adm, topic); err != nil {
		return err
	}

	start := time.Now()
	gs := &groupStart{adm: adm, earliest: off.kind == "earliest"}
	if o.group == "" {
		gs.assignedAt.Store(start.UnixNano())
	}

	// Closing the client waits for in-flight fetches, which the broker
	// holds for up to FetchMaxWait when there is no data: keep it short so
	// that an interrupt or the end of a run stops promptly.
	opts := append(o.clientOpts(topic, off, gs), kgo.FetchMaxWait(fetchMaxWait))
	cl, err := o.newClient(o.timeout, opts...)
	if err != nil {
		return err
	}
	// commitCtx bounds a commit, which must still happen after an
	// interrupt: the records it covers were printed.
	commitCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), defaultTimeout)
	}
	defer func() {
		if o.group != "" {
			cctx, cancel := commitCtx()
			if cerr := commitGroup(cctx, cl, gs, nil); cerr != nil && err == nil {
				err = fmt.Errorf("committing offsets of group %q: %w", o.group, cerr)
			}
			cl.AllowRebalance()
			if lerr := cl.LeaveGroupContext(cctx); lerr != nil && err == nil {
				err = fmt.Errorf("leaving group %q: %w", o.group, lerr)
			}
			cancel()
		}
		cl.Close()
	}()

	out := bufio.NewWriter(cmd.OutOrStdout())
	stderr := cmd.ErrOrStderr()
	count := 0
	defer func() { io.WriteString(stderr, consumedLine(count)) }()

	var lastData time.Time
	var line []byte
	for o.maxMessages == 0 || count < o.maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if o.timeout > 0 {
			deadline, assigned := o.idleDeadline(start, lastData, gs.assignedAt.Load())
			if !time.Now().Before(deadline) {
				if !assigned {
					return fmt.Errorf("consumer group %q assigned no partitions within %v", o.group, max(o.timeout, groupJoinTimeout))
				}
				break
			}
			if !assigned {
				// Poll in short slices until partitions are assigned, so
				// the idle clock starts then and not at the join deadline.
				deadline = minTime(deadline, time.Now().Add(assignPollSlice))
			}
			pollCtx, cancel = context.WithDeadline(ctx, deadline)
		}
		var fetches kgo.Fetches
		if o.maxMessages > 0 {
			// Never poll more than will be printed, so that a group
			// commit covers exactly the printed records.
			fetches = cl.PollRecords(pollCtx, o.maxMessages-count)
		} else {
			fetches = cl.PollFetches(pollCtx)
		}
		cancel()
		if fetches.IsClientClosed() {
			break
		}
		var fatal error
		fetches.EachError(func(t string, p int32, ferr error) {
			var dataLoss *kgo.ErrDataLoss
			switch {
			case errors.Is(ferr, context.DeadlineExceeded), errors.Is(ferr, context.Canceled):
			case errors.As(ferr, &dataLoss):
				fmt.Fprintf(stderr, "warning: %s[%d]: %v\n", t, p, ferr)
			case fatal == nil:
				fatal = fmt.Errorf("consuming %s[%d]: %w", t, p, ferr)
			}
		})
		var printed []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			line = o.format.appendRecord(line[:0], r.Partition, r.Offset, r.Key, r.Value)
			out.Write(line)
			printed = append(printed, r)
		})
		count += len(printed)
		if werr := out.Flush(); werr != nil {
			return werr
		}
		if len(printed) > 0 {
			lastData = time.Now()
		}
		if o.group != "" {
			cctx, cancel := commitCtx()
			cerr := commitGroup(cctx, cl, gs, printed)
			cancel()
			if cerr != nil {
				return fmt.Errorf("committing offsets of group %q: %w", o.group, cerr)
			}
			cl.AllowRebalance()
		}
		if fatal != nil {
			return fatal
		}
		if ctx.Err() != nil {
			break // interrupted: a normal way to stop
		}
	}
	return nil
}

// idleDeadline is when the idle --timeout expires: --timeout after the
// last record or the assignment of partitions, whichever is later. Before
// a group consumer has partitions, it gets max(--timeout, groupJoinTimeout)
// from start; assigned reports whether partitions were assigned.
func (o *consumeOptions) idleDeadline(start, lastData time.Time, assignedAtNanos int64) (deadline time.Time, assigned bool) {
	if assignedAtNanos == 0 {
		return start.Add(max(o.timeout, groupJoinTimeout)), false
	}
	since := time.Unix(0, assignedAtNanos)
	if lastData.After(since) {
		since = lastData
	}
	return since.Add(o.timeout), true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
