package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func init() { extraCommands = append(extraCommands, newClusterCmd) }

// clusterOptions are shared by the `cluster` subcommands.
type clusterOptions struct {
	globalOptions
	// timeout bounds a whole cluster subcommand, retries included.
	timeout time.Duration
}

// withAdmin runs fn with an admin client for the brokers of the root's
// --bootstrap-server. The command registers through extraCommands, whose
// constructors get no shared options, so the flag is read here, after
// parsing.
func (o *clusterOptions) withAdmin(cmd *cobra.Command, fn func(context.Context, *kadm.Client) error) error {
	if f := cmd.Flag("bootstrap-server"); f != nil {
		o.bootstrap = f.Value.String()
	}
	return o.globalOptions.withAdmin(cmd.Context(), o.timeout, fn)
}

func newClusterCmd() *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Describe the cluster and run leader elections",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	cmd.AddCommand(newClusterDescribeCmd(o), newClusterElectCmd(o))
	return cmd
}
