package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/web"
)

func init() { extraCommands = append(extraCommands, newServerCmd) }

// serverOptions are `samsa server`'s flags. Every broker setting can also be
// given by its Kafka name in a server.properties file (--config) or with
// --override name=value; flags win over the file, --override over both.
type serverOptions struct {
	configFile          string
	overrides           []string
	nodeID              int32
	listeners           string
	advertisedListeners string
	dataDir             string
	metadataEndpoints   string
	logLevel            string
	logFormat           string
	addScram            []string
}

func newServerCmd() *cobra.Command {
	o := &serverOptions{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a samsa broker",
		Long: "Run a samsa broker. With no flags: a ready single-node cluster on\n" +
			"localhost:9092 with an embedded etcd and its data in ./samsa-data.\n" +
			"SIGINT or SIGTERM shuts it down cleanly (logs flushed and closed).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runServer(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configFile, "config", "", "server.properties file with Kafka-named settings")
	f.StringArrayVar(&o.overrides, "override", nil, "a setting as name=value (repeatable), e.g. --override num.partitions=3")
	f.Int32Var(&o.nodeID, "node-id", 1, "node.id of this broker")
	f.StringVar(&o.listeners, "listeners", "PLAINTEXT://localhost:9092", "listeners")
	f.StringVar(&o.advertisedListeners, "advertised-listeners", "", "advertised.listeners (default: the listener)")
	f.StringVar(&o.dataDir, "data-dir", "samsa-data", "log.dirs: partition logs and the embedded etcd's data")
	f.StringVar(&o.metadataEndpoints, "metadata-endpoints", "", "external etcd client URLs (comma-separated); empty: embedded etcd")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "text or json (log/slog's handlers)")
	f.StringArrayVar(&o.addScram, "add-scram", nil, "a SCRAM credential to create at start if absent, as kafka-storage format --add-scram: 'SCRAM-SHA-256=[name=admin,password=admin-secret]' (repeatable)")
	return cmd
}

// config builds the broker configuration: defaults, then the file, then
// explicitly set flags, then overrides.
func (o *serverOptions) config(cmd *cobra.Command, logTo io.Writer) (broker.Config, error) {
	cfg := broker.DefaultConfig()
	cfg.MetricsListener = broker.DefaultMetricsListener
	if o.configFile != "" {
		if err := cfg.LoadPropertiesFile(o.configFile); err != nil {
			return cfg, fmt.Errorf("%s: %w", o.configFile, err)
		}
	}
	flagSettings := []struct{ flag, key, value string }{
		{"node-id", "node.id", strconv.Itoa(int(o.nodeID))},
		{"listeners", "listeners", o.listeners},
		{"advertised-listeners", "advertised.listeners", o.advertisedListeners},
		{"data-dir", "log.dirs", o.dataDir},
		{"metadata-endpoints", "metadata.etcd.endpoints", o.metadataEndpoints},
	}
	for _, s := range flagSettings {
		if cmd.Flags().Changed(s.flag) {
			if err := cfg.Set(s.key, s.value); err != nil {
				return cfg, err
			}
		}
	}
	for _, kv := range o.overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, fmt.Errorf("--override %q: want name=value", kv)
		}
		if err := cfg.Set(strings.TrimSpace(k), v); err != nil {
			return cfg, err
		}
	}
	for _, s := range o.addScram {
		c, err := broker.ParseAddScram(s)
		if err != nil {
			return cfg, err
		}
		cfg.InitialScram = append(cfg.InitialScram, c)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return cfg, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(logTo, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(logTo, opts))
	default:
		return cfg, fmt.Errorf("--log-format %q: want text or json", o.logFormat)
	}
	return cfg, nil
}

// runServer runs the broker with its metrics and console: the HTTP
// listener of metrics.listener (/metrics, /healthz, /readyz, the console)
// serves from before the broker starts (/readyz says 503 until it serves)
// until it has stopped.
func runServer(ctx context.Context, cfg broker.Config) error {
	cfg.Current = &broker.Current{}
	m := metrics.New(cfg.Current)
	cfg.Observer = m
	if cfg.MetricsListener != "" {
		mux := m.Handler()
		web.New(cfg.Current, func() map[string]web.TopicTotals {
			out := map[string]web.TopicTotals{}
			for topic, t := range m.TopicTotals() {
				out[topic] = web.TopicTotals(t)
			}
			return out
		}, cfg.Logger).Register(mux)
		bound, stop, err := metrics.Serve(cfg.MetricsListener, mux, cfg.Logger)
		if err != nil {
			return err
		}
		defer stop()
		// The port it bound, for the registration's advertised URL.
		cfg.MetricsListener = bound
	}
	return broker.Run(ctx, cfg)
}
