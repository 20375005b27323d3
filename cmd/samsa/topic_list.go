package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTopicListCmd(o *topicOptions) *cobra.Command {
	var excludeInternal bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topic names, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withAdmin(cmd.Context(), o.timeout, func(ctx context.Context, adm *kadm.Client) error {
				details, err := adm.ListTopicsWithInternal(ctx)
				if err != nil {
					return err
				}
				return printTopicList(cmd.OutOrStdout(), topicNames(details, excludeInternal))
			})
		},
	}
	cmd.Flags().BoolVar(&excludeInternal, "exclude-internal", false, "leave out internal topics")
	return cmd
}
