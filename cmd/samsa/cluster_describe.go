package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newClusterDescribeCmd(o *extraOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe",
		Short: "Show the brokers (alive or not), the controller, and each broker's partition leaders and replicas",
		Long: "Show the cluster id, the controller, and one line per broker: its advertised\n" +
			"address, rack, whether it is alive (registered, so in the cluster metadata),\n" +
			"and how many partitions it leads and holds a replica of. A broker that is a\n" +
			"replica of some partition but not alive is listed too, without an address.\n" +
			"A last line counts partitions without a live leader (offline) and with\n" +
			"fewer in-sync replicas than replicas (under-replicated).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				md, err := adm.Metadata(ctx)
				if err != nil {
					return err
				}
				if err := topicLoadError(md.Topics); err != nil {
					return err
				}
				return printClusterDescription(cmd.OutOrStdout(), buildClusterDescription(md))
			})
		},
	}
}
