package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newGroupDescribeCmd(o *extraOptions) *cobra.Command {
	var members, state bool
	cmd := &cobra.Command{
		Use:   "describe [group...]",
		Short: "Show groups' offsets and lag per partition, like kafka-consumer-groups.sh --describe (all groups if none named)",
		Long: "For each group, print a header line (state, protocol, coordinator, number of\n" +
			"members) and a table of its partitions: the group's committed offset\n" +
			"(CURRENT-OFFSET), the partition's log end offset, their difference (LAG),\n" +
			"and the member consuming it. \"-\" marks what is unknown: a partition without\n" +
			"a committed offset, a partition no member is assigned.\n\n" +
			"--members lists the members with their assignments instead, --state one\n" +
			"line per group. Fails, after printing the others, if a named group does\n" +
			"not exist.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				groups, missing, err := describeGroups(ctx, adm, args)
				if err != nil {
					return err
				}
				switch {
				case members:
					err = printGroupMembers(cmd.OutOrStdout(), groups)
				case state:
					err = printGroupStates(cmd.OutOrStdout(), groups)
				default:
					err = printGroupOffsets(cmd.OutOrStdout(), groups)
				}
				if err != nil {
					return err
				}
				return missing
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&members, "members", false, "list the members: id, instance id, host, client id, number of partitions and assignment")
	f.BoolVar(&state, "state", false, "one line per group: coordinator, assignment strategy, state and number of members")
	cmd.MarkFlagsMutuallyExclusive("members", "state")
	return cmd
}

// errGroupNotFound is wrapped by the errors about groups that do not exist.
var errGroupNotFound = errors.New("does not exist")

// describeGroups describes the named groups (all groups if none), sorted
// by name. missing is non-nil when some named group does not exist: the
// coordinator calls it Dead and it has no committed offsets.
func describeGroups(ctx context.Context, adm *kadm.Client, names []string) (groups []groupDescription, missing error, err error) {
	if len(names) == 0 {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("listing groups: %w", err)
		}
		names = listed.Groups()
		if len(names) == 0 {
			return nil, nil, nil
		}
	} else {
		names = slices.Clone(names)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	described, err := adm.DescribeGroups(ctx, names...)
	if err != nil {
		return nil, nil, fmt.Errorf("describing groups: %w", err)
	}
	type found struct {
		dg      kadm.DescribedGroup
		members []groupMember
		commits kadm.OffsetResponses
	}
	var (
		all     []found
		topics  = map[string]bool{}
		notHere []error
	)
	for _, name := range names {
		dg, ok := described[name]
		if !ok {
			return nil, nil, fmt.Errorf("describing group %q: no answer for it", name)
		}
		if dg.Err != nil {
			return nil, nil, fmt.Errorf("describing group %q: %w", name, kafkaErr(dg.Err, dg.ErrMessage))
		}
		commits, err := adm.FetchOffsets(ctx, name)
		if err != nil {
			return nil, nil, fmt.Errorf("fetching the offsets of group %q: %w", name, err)
		}
		if err := commits.Error(); err != nil {
			return nil, nil, fmt.Errorf("fetching the offsets of group %q: %w", name, err)
		}
		if dg.State == groupDeadState && len(dg.Members) == 0 && len(commits) == 0 {
			notHere = append(notHere, fmt.Errorf("consumer group %q %w", name, errGroupNotFound))
			continue
		}
		f := found{dg: dg, members: groupMembers(dg), commits: commits}
		for _, m := range f.members {
			for t := range m.Assigned {
				topics[t] = true
			}
		}
		for t := range commits {
			topics[t] = true
		}
		all = append(all, f)
	}
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		ends, err = adm.ListEndOffsets(ctx, sortedKeys(topics)...)
		if err != nil {
			return nil, nil, fmt.Errorf("listing log end offsets: %w", err)
		}
	}
	for _, f := range all {
		groups = append(groups, buildGroupDescription(f.dg.Group, f.dg.State, f.dg.ProtocolType, f.dg.Protocol,
			coordinatorString(f.dg.Coordinator), f.members, f.commits, ends))
	}
	return groups, errors.Join(notHere...), nil
}
