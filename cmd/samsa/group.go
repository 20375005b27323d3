package main

import (
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newGroupCmd) }

func newGroupCmd() *cobra.Command {
	o := &extraOptions{}
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
