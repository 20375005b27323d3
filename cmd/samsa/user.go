package main

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/auth"
)

func init() { extraCommands = append(extraCommands, newUserCmd) }

// `samsa user scram set|list|delete` manages SCRAM credentials with
// AlterUserScramCredentials and DescribeUserScramCredentials, as
// kafka-configs.sh --entity-type users --alter --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=...]' does. The password is
// salted here (PBKDF2, a random salt): the broker never receives it.
func newUserCmd() *cobra.Command {
	o := &extraOptions{}
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage users' SCRAM credentials, like kafka-configs.sh --entity-type users",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	scramCmd := &cobra.Command{Use: "scram", Short: "Set, list and delete SCRAM credentials"}
	scramCmd.AddCommand(newUserScramSetCmd(o), newUserScramListCmd(o), newUserScramDeleteCmd(o))
	cmd.AddCommand(scramCmd)
	return cmd
}

// parseScramMechanism parses a mechanism name.
func parseScramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func newUserScramSetCmd(o *extraOptions) *cobra.Command {
	var mechanism, password, passwordFile string
	var iterations int32
	cmd := &cobra.Command{
		Use:   "set USER",
		Short: "Create or replace a user's SCRAM credential for one mechanism",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mech, err := parseScramMechanism(mechanism)
			if err != nil {
				return err
			}
			if (password == "") == (passwordFile == "") {
				return errors.New("give exactly one of --password and --password-file")
			}
			// Checked before PBKDF2 runs: a huge count would keep it
			// busy for hours before the broker refused it.
			if iterations < auth.ScramMinIterations || iterations > auth.ScramMaxIterations {
				return fmt.Errorf("--iterations %d: want %d to %d, as Kafka", iterations, auth.ScramMinIterations, auth.ScramMaxIterations)
			}
			if passwordFile != "" {
				b, err := os.ReadFile(passwordFile)
				if err != nil {
					return err
				}
				password = strings.TrimRight(string(b), "\r\n")
			}
			if password == "" {
				return errors.New("the password is empty")
			}
			// The salt is made here, of the length and with the
			// iterations the broker gives unknown users' fake
			// credentials, so that its first answer does not tell a
			// prober whether a user exists.
			salt := make([]byte, 32)
			rand.Read(salt)
			hash := sha256.New
			if mech == kadm.ScramSha512 {
				hash = sha512.New
			}
			salted, err := pbkdf2.Key(hash, password, salt, int(iterations), hash().Size())
			if err != nil {
				return err
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
					User: args[0], Mechanism: mech, Iterations: iterations, Salt: salt, SaltedPassword: salted}})
				if err != nil {
					return err
				}
				for _, r := range res {
					if r.Err != nil {
						return kafkaErr(r.Err, r.ErrMessage)
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Set %s credential of user %s.\n", mech, args[0])
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&mechanism, "mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	f.StringVar(&password, "password", "", "the password (visible to other users of this machine; prefer --password-file)")
	f.StringVar(&passwordFile, "password-file", "", "a file holding the password")
	f.Int32Var(&iterations, "iterations", 4096, "PBKDF2 iterations, 4096 to 16384")
	return cmd
}

func newUserScramListCmd(o *extraOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list [USER...]",
		Short: "List users' SCRAM mechanisms and iterations (never salts or keys)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeUserSCRAMs(ctx, args...)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
				var firstErr error
				for _, d := range described.Sorted() {
					if d.Err != nil {
						if firstErr == nil {
							firstErr = fmt.Errorf("user %s: %w", d.User, kafkaErr(d.Err, d.ErrMessage))
						}
						continue
					}
					for _, ci := range d.CredInfos {
						fmt.Fprintf(tw, "%s\t%s\t%d\n", d.User, ci.Mechanism, ci.Iterations)
					}
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				return firstErr
			})
		},
	}
}

func newUserScramDeleteCmd(o *extraOptions) *cobra.Command {
	var mechanism string
	cmd := &cobra.Command{
		Use:   "delete USER",
		Short: "Delete a user's SCRAM credential for one mechanism",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mech, err := parseScramMechanism(mechanism)
			if err != nil {
				return err
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: args[0], Mechanism: mech}}, nil)
				if err != nil {
					return err
				}
				for _, r := range res {
					if r.Err != nil {
						return kafkaErr(r.Err, r.ErrMessage)
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted %s credential of user %s.\n", mech, args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&mechanism, "mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	return cmd
}
