package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newTopicCreateCmd(o *topicOptions) *cobra.Command {
	var (
		partitions        int32
		replicationFactor int16
		configs           []string
		ifNotExists       bool
	)
	cmd := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a topic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if cmd.Flags().Changed("partitions") && partitions < 1 {
				return fmt.Errorf("--partitions must be at least 1")
			}
			if cmd.Flags().Changed("replication-factor") && replicationFactor < 1 {
				return fmt.Errorf("--replication-factor must be at least 1")
			}
			cfg, err := parseConfigPairs(configs)
			if err != nil {
				return err
			}
			return o.withAdmin(cmd.Context(), o.timeout, func(ctx context.Context, adm *kadm.Client) error {
				resp, err := adm.CreateTopic(ctx, partitions, replicationFactor, cfg, name)
				if ifNotExists && errors.Is(err, kerr.TopicAlreadyExists) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("creating topic %q: %w", name, kafkaErr(err, resp.ErrMessage))
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "Created topic %s.\n", name)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.Int32Var(&partitions, "partitions", -1, "number of partitions (default: the broker's num.partitions)")
	f.Int16Var(&replicationFactor, "replication-factor", -1, "replicas per partition (default: the broker's default.replication.factor)")
	f.StringArrayVar(&configs, "config", nil, "topic config override key=value (repeatable)")
	f.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the topic already exists")
	return cmd
}
