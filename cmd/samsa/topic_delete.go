package main

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newTopicDeleteCmd(o *topicOptions) *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:   "delete <name>...",
		Short: "Delete topics",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			names := append([]string(nil), args...)
			sort.Strings(names)
			return o.withAdmin(cmd.Context(), o.timeout, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteTopics(ctx, names...)
				if err != nil {
					return err
				}
				var errs []error
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("deleting topic %q: no answer for it", name))
					case r.Err == nil:
						fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %s.\n", name)
					case ifExists && errors.Is(r.Err, kerr.UnknownTopicOrPartition):
					default:
						errs = append(errs, fmt.Errorf("deleting topic %q: %w", name, kafkaErr(r.Err, r.ErrMessage)))
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed for topics that do not exist")
	return cmd
}
