package main

import (
	"time"

	"github.com/spf13/cobra"
)

// topicOptions are shared by the `topic` subcommands.
type topicOptions struct {
	*globalOptions
	// timeout bounds a whole topic subcommand, retries included.
	timeout time.Duration
}

func newTopicCmd(g *globalOptions) *cobra.Command {
	o := &topicOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	cmd.AddCommand(
		newTopicCreateCmd(o),
		newTopicListCmd(o),
		newTopicDescribeCmd(o),
		newTopicAlterCmd(o),
		newTopicDeleteCmd(o),
	)
	return cmd
}
