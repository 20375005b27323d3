package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupDeleteCmd(o *extraOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <group>...",
		Short: "Delete inactive groups and their committed offsets",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			names := slices.Clone(args)
			slices.Sort(names)
			names = slices.Compact(names)
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteGroups(ctx, names...)
				if err != nil {
					return err
				}
				var errs []error
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("deleting group %q: no answer for it", name))
					case r.Err == nil:
						fmt.Fprintf(cmd.OutOrStdout(), "Deleted consumer group %s.\n", name)
					default:
						errs = append(errs, groupDeleteErr(name, kafkaErr(r.Err, r.ErrMessage)))
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// groupDeleteErr explains the usual refusals of DeleteGroups.
func groupDeleteErr(group string, err error) error {
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("deleting group %q: consumer group %q %w (%w)", group, group, errGroupNotFound, err)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Errorf("deleting group %q: it has active members; stop its consumers first (%w)", group, err)
	}
	return fmt.Errorf("deleting group %q: %w", group, err)
}

func newGroupDeleteOffsetsCmd(o *extraOptions) *cobra.Command {
	var (
		group  string
		topics []string
	)
	cmd := &cobra.Command{
		Use:   "delete-offsets --group G --topic T[:p,p...]...",
		Short: "Delete a group's committed offsets of some partitions (topics the group does not consume)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if group == "" {
				return errors.New("name the group with --group")
			}
			if len(topics) == 0 {
				return errors.New("name the partitions with --topic")
			}
			var sel []topicPartitions
			for _, t := range topics {
				tp, err := parseTopicPartitions(t)
				if err != nil {
					return err
				}
				sel = append(sel, tp)
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var names []string
				for _, s := range sel {
					names = append(names, s.Topic)
				}
				details, err := adm.ListTopics(ctx, names...)
				if err != nil {
					return err
				}
				if err := topicLoadError(details); err != nil {
					return err
				}
				parts, err := resetPartitions(sel, details, nil)
				if err != nil {
					return err
				}
				set := kadm.TopicsSet{}
				for _, p := range parts {
					set.Add(p.Topic, p.Partition)
				}
				resps, err := adm.DeleteOffsets(ctx, group, set)
				switch {
				case errors.Is(err, kerr.GroupIDNotFound):
					return fmt.Errorf("consumer group %q %w", group, errGroupNotFound)
				case errors.Is(err, kerr.NonEmptyGroup):
					return fmt.Errorf("deleting offsets of group %q: the group is rebalancing or its members' subscriptions are unknown; try again (%w)", group, err)
				case err != nil:
					return fmt.Errorf("deleting offsets of group %q: %w", group, err)
				}
				return printDeletedOffsets(cmd.OutOrStdout(), parts, resps)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&group, "group", "", "the consumer group (required)")
	f.StringArrayVar(&topics, "topic", nil, "a topic, or topic:partition,partition...; repeatable")
	return cmd
}

// printDeletedOffsets writes TOPIC PARTITION STATUS per partition, as
// kafka-consumer-groups --delete-offsets, and fails if any partition
// failed.
func printDeletedOffsets(w io.Writer, parts []kadm.Partition, resps kadm.DeleteOffsetsResponses) error {
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "TOPIC\tPARTITION\tSTATUS\n")
	var errs []error
	for _, p := range parts {
		err, ok := resps.Lookup(p.Topic, p.Partition)
		status := "Successful"
		switch {
		case !ok:
			err = errors.New("no answer for it")
			fallthrough
		case err != nil:
			status = "Error: " + err.Error()
			if errors.Is(err, kerr.GroupSubscribedToTopic) {
				err = fmt.Errorf("%w (the group's members consume the topic)", err)
			}
			errs = append(errs, fmt.Errorf("deleting the offset of %s-%d: %w", p.Topic, p.Partition, err))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Topic, p.Partition, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return errors.Join(errs...)
}
