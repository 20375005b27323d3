package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTopicAlterCmd(o *topicOptions) *cobra.Command {
	var (
		configs       []string
		deleteConfigs []string
		partitions    int32
	)
	cmd := &cobra.Command{
		Use:   "alter <name>",
		Short: "Change a topic's configs (IncrementalAlterConfigs) or raise its partition count",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			setPartitions := cmd.Flags().Changed("partitions")
			if setPartitions && partitions < 1 {
				return fmt.Errorf("--partitions must be at least 1")
			}
			alts, err := buildAlterConfigs(configs, deleteConfigs)
			if err != nil {
				return err
			}
			if len(alts) == 0 && !setPartitions {
				return fmt.Errorf("nothing to alter: give --config, --delete-config or --partitions")
			}
			out := cmd.OutOrStdout()
			return o.withAdmin(cmd.Context(), o.timeout, func(ctx context.Context, adm *kadm.Client) error {
				if len(alts) > 0 {
					resps, err := adm.AlterTopicConfigs(ctx, alts, name)
					if err != nil {
						return fmt.Errorf("altering configs of topic %q: %w", name, err)
					}
					r, err := resps.On(name, nil)
					if err == nil {
						err = kafkaErr(r.Err, r.ErrMessage)
					}
					if err != nil {
						return fmt.Errorf("altering configs of topic %q: %w", name, err)
					}
					fmt.Fprintf(out, "Altered configs of topic %s.\n", name)
				}
				if setPartitions {
					resps, err := adm.UpdatePartitions(ctx, int(partitions), name)
					if err != nil {
						return fmt.Errorf("setting partition count of topic %q: %w", name, err)
					}
					r, err := resps.On(name, nil)
					if err == nil {
						err = kafkaErr(r.Err, r.ErrMessage)
					}
					if err != nil {
						return fmt.Errorf("setting partition count of topic %q: %w", name, err)
					}
					fmt.Fprintf(out, "Topic %s now has %d partitions.\n", name, partitions)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&configs, "config", nil, "set a topic config key=value (repeatable)")
	f.StringArrayVar(&deleteConfigs, "delete-config", nil, "remove a topic config override, reverting to the default (repeatable)")
	f.Int32Var(&partitions, "partitions", 0, "new total partition count (can only grow)")
	return cmd
}
