package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// resetOptions are the flags of `group reset-offsets`, named as
// kafka-consumer-groups.sh --reset-offsets names them.
type resetOptions struct {
	*extraOptions
	group      string
	topics     []string
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toOffset   int64
	toDatetime string
	shiftBy    int64
	execute    bool
}

// resetScenarios are the flags that say where to reset to; exactly one is
// required.
var resetScenarios = []string{"to-earliest", "to-latest", "to-offset", "to-datetime", "shift-by"}

func newGroupResetOffsetsCmd(o *extraOptions) *cobra.Command {
	r := &resetOptions{extraOptions: o}
	cmd := &cobra.Command{
		Use:   "reset-offsets --group G (--topic T[:p,p...]... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by N) [--execute]",
		Short: "Reset a group's committed offsets (a dry run unless --execute)",
		Long: "Compute new committed offsets for a group and print them as\n" +
			"GROUP TOPIC PARTITION NEW-OFFSET. Nothing changes unless --execute is given;\n" +
			"then the offsets are committed, which the coordinator only accepts while the\n" +
			"group is inactive (no members: stop its consumers first).\n\n" +
			"--topic T resets every partition of T, --topic T:0,2 some of them (repeat\n" +
			"--topic for more topics); --all-topics the partitions the group has\n" +
			"committed offsets for. --to-offset and --shift-by are kept within the\n" +
			"partition's earliest and latest offsets; --to-datetime picks the first\n" +
			"offset whose timestamp is at or after the time (the log end if none is),\n" +
			"given as 2026-01-02T15:04:05Z, with a zone offset, or zone-less in local\n" +
			"time; --shift-by needs a committed offset to shift.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, sel, err := r.parse(cmd.Flags().Changed, time.Local)
			if err != nil {
				return err
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				plan, err := r.plan(ctx, adm, spec, sel)
				if err != nil {
					return err
				}
				if r.execute {
					if err := commitResetPlan(ctx, adm, r.group, plan); err != nil {
						return err
					}
				}
				if err := printResetPlan(cmd.OutOrStdout(), r.group, plan); err != nil {
					return err
				}
				if !r.execute {
					fmt.Fprintln(cmd.ErrOrStderr(), "Dry run: nothing was committed. Add --execute to commit these offsets.")
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.group, "group", "", "the consumer group (required)")
	f.StringArrayVar(&r.topics, "topic", nil, "a topic, or topic:partition,partition...; repeatable")
	f.BoolVar(&r.allTopics, "all-topics", false, "every partition the group has a committed offset for")
	f.BoolVar(&r.toEarliest, "to-earliest", false, "reset to the earliest offset")
	f.BoolVar(&r.toLatest, "to-latest", false, "reset to the latest offset (the log end)")
	f.Int64Var(&r.toOffset, "to-offset", 0, "reset to this offset")
	f.StringVar(&r.toDatetime, "to-datetime", "", "reset to the first offset at or after this time, e.g. 2026-01-02T15:04:05Z")
	f.Int64Var(&r.shiftBy, "shift-by", 0, "move the committed offset by this many records (negative: back)")
	f.BoolVar(&r.execute, "execute", false, "commit the new offsets (default: only print them)")
	cmd.MarkFlagsMutuallyExclusive(resetScenarios...)
	cmd.MarkFlagsMutuallyExclusive("topic", "all-topics")
	return cmd
}

// resetKind says where reset-offsets moves offsets to.
type resetKind int

const (
	resetToEarliest resetKind = iota
	resetToLatest
	resetToOffset
	resetToDatetime
	resetShiftBy
)

// resetSpec is a parsed reset scenario.
type resetSpec struct {
	kind resetKind
	// n is the offset of resetToOffset, the shift of resetShiftBy.
	n int64
	// at is the time of resetToDatetime.
	at time.Time
}

// parse validates the flags; changed reports whether a flag was given.
// Zone-less --to-datetime values are in loc.
func (r *resetOptions) parse(changed func(string) bool, loc *time.Location) (resetSpec, []topicPartitions, error) {
	if strings.TrimSpace(r.group) == "" {
		return resetSpec{}, nil, errors.New("name the group with --group")
	}
	var given []string
	for _, s := range resetScenarios {
		if changed(s) {
			given = append(given, "--"+s)
		}
	}
	switch len(given) {
	case 0:
		return resetSpec{}, nil, errors.New("say where to reset to: --to-earliest, --to-latest, --to-offset, --to-datetime or --shift-by")
	case 1:
	default:
		return resetSpec{}, nil, fmt.Errorf("%s exclude each other", strings.Join(given, " and "))
	}
	var spec resetSpec
	switch {
	case changed("to-earliest"):
		if !r.toEarliest {
			return resetSpec{}, nil, errors.New("say where to reset to: --to-earliest, --to-latest, --to-offset, --to-datetime or --shift-by")
		}
		spec.kind = resetToEarliest
	case changed("to-latest"):
		if !r.toLatest {
			return resetSpec{}, nil, errors.New("say where to reset to: --to-earliest, --to-latest, --to-offset, --to-datetime or --shift-by")
		}
		spec.kind = resetToLatest
	case changed("to-offset"):
		if r.toOffset < 0 {
			return resetSpec{}, nil, fmt.Errorf("--to-offset %d: want an offset >= 0", r.toOffset)
		}
		spec = resetSpec{kind: resetToOffset, n: r.toOffset}
	case changed("to-datetime"):
		at, err := parseDatetime(r.toDatetime, loc)
		if err != nil {
			return resetSpec{}, nil, err
		}
		spec = resetSpec{kind: resetToDatetime, at: at}
	case changed("shift-by"):
		spec = resetSpec{kind: resetShiftBy, n: r.shiftBy}
	}
	switch {
	case r.allTopics && len(r.topics) > 0:
		return resetSpec{}, nil, errors.New("--topic and --all-topics exclude each other")
	case r.allTopics:
		return spec, nil, nil
	case len(r.topics) == 0:
		return resetSpec{}, nil, errors.New("name the partitions to reset with --topic, or give --all-topics")
	}
	var sel []topicPartitions
	for _, t := range r.topics {
		tp, err := parseTopicPartitions(t)
		if err != nil {
			return resetSpec{}, nil, err
		}
		sel = append(sel, tp)
	}
	return spec, sel, nil
}

// plannedOffset is one line of the reset plan.
type plannedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// plan asks the cluster what plan needs and computes it. The group must
// exist unless partitions are named; with --execute it must be inactive.
func (r *resetOptions) plan(ctx context.Context, adm *kadm.Client, spec resetSpec, sel []topicPartitions) ([]plannedOffset, error) {
	described, err := adm.DescribeGroups(ctx, r.group)
	if err != nil {
		return nil, fmt.Errorf("describing group %q: %w", r.group, err)
	}
	dg, ok := described[r.group]
	if !ok {
		return nil, fmt.Errorf("describing group %q: no answer for it", r.group)
	}
	if dg.Err != nil {
		return nil, fmt.Errorf("describing group %q: %w", r.group, kafkaErr(dg.Err, dg.ErrMessage))
	}
	if r.execute {
		if err := checkGroupInactive(dg); err != nil {
			return nil, err
		}
	}
	commits, err := adm.FetchOffsets(ctx, r.group)
	if err != nil {
		return nil, fmt.Errorf("fetching the offsets of group %q: %w", r.group, err)
	}
	if err := commits.Error(); err != nil {
		return nil, fmt.Errorf("fetching the offsets of group %q: %w", r.group, err)
	}
	var topics []string
	if sel == nil {
		if len(commits) == 0 {
			if dg.State == groupDeadState {
				return nil, fmt.Errorf("consumer group %q %w", r.group, errGroupNotFound)
			}
			return nil, fmt.Errorf("consumer group %q has no committed offsets: name the partitions with --topic", r.group)
		}
		topics = sortedKeys(commits)
	} else {
		for _, s := range sel {
			topics = append(topics, s.Topic)
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	if err := topicLoadError(details); err != nil {
		return nil, err
	}
	parts, err := resetPartitions(sel, details, commits)
	if err != nil {
		return nil, err
	}
	start, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing earliest offsets: %w", err)
	}
	end, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing latest offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if spec.kind == resetToDatetime {
		byTime, err = adm.ListOffsetsAfterMilli(ctx, spec.at.UnixMilli(), topics...)
		if err != nil {
			return nil, fmt.Errorf("listing offsets by time: %w", err)
		}
	}
	return planReset(spec, parts, commits, start, end, byTime)
}

// checkGroupInactive refuses groups with members, as Kafka only lets an
// inactive group's offsets be reset.
func checkGroupInactive(dg kadm.DescribedGroup) error {
	if dg.State == "Empty" || dg.State == groupDeadState {
		return nil
	}
	return fmt.Errorf("consumer group %q is not inactive (state %s, %d %s): offsets can only be reset while the group has no members; stop its consumers first",
		dg.Group, dg.State, len(dg.Members), plural(len(dg.Members), "member", "members"))
}

// resetPartitions resolves the selected partitions against the topics'
// metadata: every partition of a topic named alone, the named partitions
// (which must exist) otherwise, or with no selection the partitions the
// group committed. Sorted by topic and partition.
func resetPartitions(sel []topicPartitions, details kadm.TopicDetails, commits kadm.OffsetResponses) ([]kadm.Partition, error) {
	seen := map[kadm.Partition]bool{}
	var out []kadm.Partition
	add := func(t string, p int32) {
		k := kadm.Partition{Topic: t, Partition: p}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if sel == nil {
		commits.Each(func(o kadm.OffsetResponse) { add(o.Topic, o.Partition) })
	}
	for _, s := range sel {
		td, ok := details[s.Topic]
		if !ok {
			return nil, fmt.Errorf("topic %q does not exist", s.Topic)
		}
		if s.Partitions == nil {
			for p := range td.Partitions {
				add(s.Topic, p)
			}
			continue
		}
		for _, p := range s.Partitions {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", s.Topic, p, len(td.Partitions))
			}
			add(s.Topic, p)
		}
	}
	slices.SortFunc(out, func(a, b kadm.Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// planReset computes the new offset of each partition from its committed,
// earliest, latest and (for --to-datetime) by-time offsets. --to-offset and
// --shift-by are clamped to [earliest, latest], as kafka-consumer-groups
// does.
func planReset(spec resetSpec, parts []kadm.Partition, commits kadm.OffsetResponses, start, end, byTime kadm.ListedOffsets) ([]plannedOffset, error) {
	listed := func(what string, l kadm.ListedOffsets, p kadm.Partition) (int64, error) {
		o, ok := l.Lookup(p.Topic, p.Partition)
		switch {
		case !ok:
			return 0, fmt.Errorf("no %s offset for %s-%d", what, p.Topic, p.Partition)
		case o.Err != nil:
			return 0, fmt.Errorf("%s offset of %s-%d: %w", what, p.Topic, p.Partition, o.Err)
		case o.Offset < 0:
			return 0, fmt.Errorf("no %s offset for %s-%d", what, p.Topic, p.Partition)
		}
		return o.Offset, nil
	}
	var plan []plannedOffset
	for _, p := range parts {
		lo, err := listed("earliest", start, p)
		if err != nil {
			return nil, err
		}
		hi, err := listed("latest", end, p)
		if err != nil {
			return nil, err
		}
		var n int64
		switch spec.kind {
		case resetToEarliest:
			n = lo
		case resetToLatest:
			n = hi
		case resetToOffset:
			n = min(max(spec.n, lo), hi)
		case resetToDatetime:
			if n, err = listed("by-time", byTime, p); err != nil {
				return nil, err
			}
		case resetShiftBy:
			c, ok := commits.Lookup(p.Topic, p.Partition)
			if !ok || c.Err != nil || c.At < 0 {
				return nil, fmt.Errorf("cannot shift the offset of %s-%d: the group has no committed offset for it", p.Topic, p.Partition)
			}
			n = c.At + spec.n
			if spec.n > 0 && n < c.At { // overflow
				n = hi
			}
			n = min(max(n, lo), hi)
		}
		plan = append(plan, plannedOffset{Topic: p.Topic, Partition: p.Partition, Offset: n})
	}
	return plan, nil
}

// commitResetPlan commits the plan as a simple commit (no member, no
// generation), the way Kafka's admin client does.
func commitResetPlan(ctx context.Context, adm *kadm.Client, group string, plan []plannedOffset) error {
	if len(plan) == 0 {
		return nil
	}
	offsets := kadm.Offsets{}
	for _, p := range plan {
		offsets.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return fmt.Errorf("committing the offsets of group %q: %w", group, err)
	}
	var errs []error
	for _, p := range plan {
		r, ok := resps.Lookup(p.Topic, p.Partition)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("committing %s-%d: no answer for it", p.Topic, p.Partition))
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("committing %s-%d for group %q: %w", p.Topic, p.Partition, group, r.Err))
		}
	}
	return errors.Join(errs...)
}

// printResetPlan writes the plan as kafka-consumer-groups --reset-offsets.
func printResetPlan(w io.Writer, group string, plan []plannedOffset) error {
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET\n")
	for _, p := range plan {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, p.Topic, p.Partition, p.Offset)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}
