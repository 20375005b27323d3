package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func init() { extraCommands = append(extraCommands, newGroupCmd) }

// groupOptions are shared by the `group` subcommands.
type groupOptions struct {
	globalOptions
	// timeout bounds a whole group subcommand, retries included.
	timeout time.Duration
}

// withAdmin runs fn with an admin client for the brokers of the root's
// --bootstrap-server. Like `cluster`, the command registers through
// extraCommands, so the flag is read here, after parsing.
func (o *groupOptions) withAdmin(cmd *cobra.Command, fn func(context.Context, *kadm.Client) error) error {
	if f := cmd.Flag("bootstrap-server"); f != nil {
		o.bootstrap = f.Value.String()
	}
	return o.globalOptions.withAdmin(cmd.Context(), o.timeout, fn)
}

func newGroupCmd() *cobra.Command {
	o := &groupOptions{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe and delete consumer groups and reset their offsets, like kafka-consumer-groups.sh",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	cmd.AddCommand(
		newGroupListCmd(o),
		newGroupDescribeCmd(o),
		newGroupResetOffsetsCmd(o),
		newGroupDeleteCmd(o),
		newGroupDeleteOffsetsCmd(o),
	)
	return cmd
}
