package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// electOptions are `samsa cluster elect-leaders`' flags, like
// kafka-leader-election.sh's.
type electOptions struct {
	*extraOptions
	electionType string
	topic        string
	partition    int32
	all          bool
	dryRun       bool
}

func newClusterElectCmd(o *extraOptions) *cobra.Command {
	e := &electOptions{extraOptions: o}
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Run preferred (or unclean) leader elections, like kafka-leader-election.sh",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			how, set, err := e.request()
			if err != nil {
				return err
			}
			if e.dryRun && how != kadm.ElectLiveReplica {
				return fmt.Errorf("--dry-run goes with --election-type unclean")
			}
			return e.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				if e.dryRun {
					lines, err := uncleanDryRun(ctx, adm, set)
					if err != nil {
						return err
					}
					return printDryRun(cmd.OutOrStdout(), lines)
				}
				res, err := adm.ElectLeaders(ctx, how, set)
				if err != nil {
					return err
				}
				return printElections(cmd.OutOrStdout(), res)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&e.electionType, "election-type", "preferred", "preferred or unclean")
	f.StringVar(&e.topic, "topic", "", "elect for this topic only")
	f.Int32Var(&e.partition, "partition", -1, "with --topic: elect for this partition only")
	f.BoolVar(&e.all, "all-topic-partitions", false, "elect for every partition")
	f.BoolVar(&e.dryRun, "dry-run", false, "with --election-type unclean: elect nothing; print, per partition without a live leader, the replica an unclean election would choose and the records it would lose (samsa brokers, from their metrics listeners)")
	return cmd
}

// request turns the flags into kadm's arguments.
func (e *electOptions) request() (kadm.ElectLeadersHow, kadm.TopicsSet, error) {
	var how kadm.ElectLeadersHow
	switch strings.ToLower(e.electionType) {
	case "preferred":
		how = kadm.ElectPreferredReplica
	case "unclean":
		how = kadm.ElectLiveReplica
	default:
		return 0, nil, fmt.Errorf("--election-type %q: want preferred or unclean", e.electionType)
	}
	switch {
	case e.all && e.topic != "":
		return 0, nil, fmt.Errorf("--all-topic-partitions and --topic exclude each other")
	case e.all:
		return how, nil, nil // every partition
	case e.topic == "":
		return 0, nil, fmt.Errorf("name a --topic or give --all-topic-partitions")
	case e.partition >= 0:
		return how, kadm.TopicsSet{e.topic: {e.partition: {}}}, nil
	}
	return how, kadm.TopicsSet{e.topic: nil}, nil
}

// printDryRun prints the dry run's verdicts, one line per partition.
func printDryRun(w io.Writer, lines []dryRunLine) error {
	for _, l := range lines {
		tp := l.topic
		if l.partition >= 0 {
			tp += "-" + strconv.Itoa(int(l.partition))
		}
		if _, err := fmt.Fprintf(w, "Partition %s: %s\n", tp, l.text); err != nil {
			return err
		}
	}
	return nil
}

// printElections prints one line per partition, sorted, in the words of
// kafka-leader-election.sh.
func printElections(w io.Writer, res kadm.ElectLeadersResults) error {
	type line struct {
		topic     string
		partition int32
		err       error
	}
	var lines []line
	for topic, ps := range res {
		for p, r := range ps {
			lines = append(lines, line{topic, p, r.Err})
		}
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].topic != lines[j].topic {
			return lines[i].topic < lines[j].topic
		}
		return lines[i].partition < lines[j].partition
	})
	for _, l := range lines {
		tp := l.topic + "-" + strconv.Itoa(int(l.partition))
		var err error
		if l.err == nil {
			_, err = fmt.Fprintf(w, "Successfully completed leader election for partition %s\n", tp)
		} else {
			_, err = fmt.Fprintf(w, "Election for partition %s: %v\n", tp, l.err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
