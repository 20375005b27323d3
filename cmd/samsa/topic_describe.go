package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// describeFilterFlags are the mutually exclusive filter flags of `topic
// describe`, with the filter each selects.
var describeFilterFlags = []struct {
	name   string
	filter describeFilter
	usage  string
}{
	{"under-replicated-partitions", filterUnderReplicated, "only show partitions whose ISR is smaller than their replica set"},
	{"unavailable-partitions", filterUnavailable, "only show partitions without a leader or whose leader is not a live broker"},
	{"under-min-isr-partitions", filterUnderMinISR, "only show partitions whose ISR is smaller than min.insync.replicas"},
	{"at-min-isr-partitions", filterAtMinISR, "only show partitions whose ISR size equals min.insync.replicas"},
	{"topics-with-overrides", filterOverrides, "only show the header line of topics that have non-default configs"},
}

func newTopicDescribeCmd(o *topicOptions) *cobra.Command {
	var (
		excludeInternal bool
		summary         bool
		explain         bool
		filterSet       = make([]bool, len(describeFilterFlags))
	)
	cmd := &cobra.Command{
		Use:   "describe [name...]",
		Short: "Describe topics in kafka-topics.sh --describe format (all topics if none named)",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := describeOptions{Summary: summary}
			for i, set := range filterSet {
				if set {
					opts.Filter = describeFilterFlags[i].filter
				}
			}
			return o.withAdmin(cmd.Context(), o.timeout, func(ctx context.Context, adm *kadm.Client) error {
				md, err := adm.Metadata(ctx, args...)
				if err != nil {
					return err
				}
				topics := md.Topics
				if len(args) == 0 && excludeInternal {
					topics.FilterInternal()
				}
				opts.LiveBrokers = make(map[int32]bool, len(md.Brokers))
				for _, b := range md.Brokers {
					opts.LiveBrokers[b.NodeID] = true
				}
				if err := topicLoadError(topics); err != nil {
					return err
				}
				var configs kadm.ResourceConfigs
				if names := topics.Names(); len(names) > 0 {
					configs, err = adm.DescribeTopicConfigs(ctx, names...)
					if err != nil {
						return fmt.Errorf("describing topic configs: %w", err)
					}
				}
				descs, err := buildTopicDescriptions(topics, configs)
				if err != nil {
					return err
				}
				if opts.Filter == filterUnderMinISR || opts.Filter == filterAtMinISR {
					for _, d := range descs {
						if d.MinISR == 0 {
							return fmt.Errorf("the cluster did not report %s for topic %q", minISRConfig, d.Name)
						}
					}
				}
				if explain {
					res := fetchExplanations(ctx, adm, md, descs)
					opts.Explain = &res
				}
				return printTopicDescriptions(cmd.OutOrStdout(), descs, opts)
			})
		},
	}
	f := cmd.Flags()
	names := make([]string, len(describeFilterFlags))
	for i, ff := range describeFilterFlags {
		f.BoolVar(&filterSet[i], ff.name, false, ff.usage)
		names[i] = ff.name
	}
	cmd.MarkFlagsMutuallyExclusive(names...)
	f.BoolVar(&excludeInternal, "exclude-internal", false, "leave out internal topics when no topic is named")
	f.BoolVar(&explain, "explain", false, "under each partition, its leader's account of every replica: log end, lag, last fetch, durability, and why one is out of the ISR (samsa brokers, from their metrics listener)")
	f.BoolVar(&summary, "summary", true, "end with a \"Partitions: ...\" health summary line (--summary=false gives kafka-topics' output alone)")
	return cmd
}
