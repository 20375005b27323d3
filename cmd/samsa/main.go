// Command samsa is the one samsa binary: `samsa server` runs a broker, and
// the other subcommands (topic, produce, consume) are plain Kafka clients
// built on franz-go, so they work against Apache Kafka as well.
//
// This package only parses flags and wires things together. Each command
// lives in its own file; output formatting lives in printers.go and
// describe_print.go as pure functions with table tests.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// extraCommands holds constructors of subcommands that register themselves
// from their own file, so that they can be written (and compiled in)
// independently of this one. A file adds itself with:
//
//	func init() { extraCommands = append(extraCommands, newServerCmd) }
//
// The `server` subcommand is wired this way.
var extraCommands []func() *cobra.Command

// defaultBootstrap is used when neither --bootstrap-server nor
// SAMSA_BOOTSTRAP is set.
const defaultBootstrap = "localhost:9092"

// bootstrapEnv names the environment variable that overrides the default of
// --bootstrap-server.
const bootstrapEnv = "SAMSA_BOOTSTRAP"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "samsa: %v\n", err)
		os.Exit(1)
	}
}

// run executes the CLI with the given arguments (without the program name)
// and streams. It never calls os.Exit, so tests can drive the whole CLI
// in-process. Cancelling ctx stops a running command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd()
	if args == nil {
		// cobra falls back to os.Args when given nil.
		args = []string{}
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// globalOptions are the flags shared by all client commands.
type globalOptions struct {
	// bootstrap is the raw --bootstrap-server value: comma-separated
	// host:port pairs.
	bootstrap string
	// commandConfig is --command-config: a client.properties file with
	// the security settings (security.go).
	commandConfig string
}

func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "samsa",
		Short: "A Kafka-compatible replicated commit log",
		Long: "samsa is a Kafka-compatible replicated commit log.\n\n" +
			"`samsa server` runs a broker. The other commands are Kafka clients and\n" +
			"work against any Kafka-compatible cluster.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})

	def := defaultBootstrap
	if v, ok := os.LookupEnv(bootstrapEnv); ok && v != "" {
		def = v
	}
	root.PersistentFlags().StringVarP(&g.bootstrap, "bootstrap-server", "b", def,
		"comma-separated host:port list of brokers to connect to (env "+bootstrapEnv+")")
	root.PersistentFlags().StringVar(&g.commandConfig, "command-config", "",
		"client.properties file with security.protocol, sasl.mechanism, sasl.jaas.config and ssl.* settings")

	root.AddCommand(
		newTopicCmd(g),
		newProduceCmd(g),
		newConsumeCmd(g),
	)
	for _, newCmd := range extraCommands {
		root.AddCommand(newCmd())
	}
	return root
}
