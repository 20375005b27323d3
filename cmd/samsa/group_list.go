package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newGroupListCmd(o *extraOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the groups of every broker with their state and protocol type",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := adm.ListGroups(ctx)
				if err != nil {
					return err
				}
				return printGroupList(cmd.OutOrStdout(), groups.Sorted())
			})
		},
	}
}
