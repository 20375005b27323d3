package main

import (
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newClusterCmd) }

func newClusterCmd() *cobra.Command {
	o := &extraOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Describe the cluster and run leader elections",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	cmd.AddCommand(newClusterDescribeCmd(o), newClusterElectCmd(o))
	return cmd
}
