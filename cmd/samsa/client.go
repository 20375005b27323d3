package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultTimeout bounds commands that do not get a --timeout of their own.
const defaultTimeout = 30 * time.Second

// maxDialTimeout caps how long one TCP connect may take.
const maxDialTimeout = 10 * time.Second

// newClient builds a franz-go client for the configured brokers. timeout
// bounds every request including its retries (kgo.RetryTimeout) and each
// dial, so that nothing built on this client waits forever for a dead
// broker. Fetches and produces are not covered by RetryTimeout; their
// commands bound them separately.
func (g *globalOptions) newClient(timeout time.Duration, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := parseBootstrap(g.bootstrap)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("samsa-cli"),
		kgo.DialTimeout(min(timeout, maxDialTimeout)),
		kgo.RetryTimeout(timeout),
	}
	sec, err := g.securityOpts()
	if err != nil {
		return nil, err
	}
	base = append(base, sec...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return cl, nil
}

// withAdmin runs fn with an admin client whose whole run, requests and
// retries included, is bounded by timeout.
func (g *globalOptions) withAdmin(ctx context.Context, timeout time.Duration, fn func(context.Context, *kadm.Client) error) error {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	cl, err := g.newClient(timeout)
	if err != nil {
		return err
	}
	defer cl.Close()

	adm := kadm.NewClient(cl)
	// The broker-side timeout of CreateTopics/DeleteTopics/CreatePartitions
	// must end before our own deadline for the answer to reach us.
	adm.SetTimeoutMillis(int32(min(timeout*3/4, 15*time.Second).Milliseconds()))

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = fn(ctx, adm)
	return explainDeadline(ctx, err, g.bootstrap, timeout)
}

// explainDeadline turns a bare "context deadline exceeded" into a message
// that says which brokers did not answer in time.
func explainDeadline(ctx context.Context, err error, bootstrap string, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %v (is the broker running? raise --timeout to wait longer): %w", bootstrap, timeout, err)
	}
	return err
}

// kafkaErr formats a per-resource Kafka error with its optional message.
func kafkaErr(err error, msg string) error {
	if err == nil {
		return nil
	}
	if msg == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, msg)
}

// extraOptions are shared by the subcommands of a command registered
// through extraCommands (cluster, group).
type extraOptions struct {
	globalOptions
	// timeout bounds a whole subcommand, retries included.
	timeout time.Duration
}

// withAdmin runs fn with an admin client for the brokers of the root's
// --bootstrap-server. extraCommands constructors get no shared options, so
// the flag is read here, after parsing.
func (o *extraOptions) withAdmin(cmd *cobra.Command, fn func(context.Context, *kadm.Client) error) error {
	if f := cmd.Flag("bootstrap-server"); f != nil {
		o.bootstrap = f.Value.String()
	}
	o.readCommandConfig(cmd)
	return o.globalOptions.withAdmin(cmd.Context(), o.timeout, fn)
}
