// Package test holds samsa's end-to-end tests: real brokers (in-process, or
// the samsa binary as a child process) on 127.0.0.1, driven by real Kafka
// clients. This file is the harness the tests share.
package test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
)

// Broker is an in-process broker started for one test.
type Broker struct {
	*broker.Broker
	// Addr is the Kafka listener's host:port.
	Addr string
	// Config is what the broker was started with; Restart reuses it.
	Config broker.Config
}

// StartBroker starts a single-node broker with an embedded etcd, all on
// 127.0.0.1 with free ports and data in a temporary directory. Options adjust
// the configuration first. The broker is closed when the test ends.
func StartBroker(t testing.TB, opts ...func(*broker.Config)) *Broker {
	t.Helper()
	cfg := broker.DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.DataDir = t.TempDir()
	cfg.MetadataClientURL = "http://127.0.0.1:0"
	cfg.MetadataPeerURL = "http://127.0.0.1:0"
	cfg.Logger = testLogger()
	// Broker.Start, unlike broker.Run (the samsa binary), does not
	// register again after losing its session, and under the race
	// detector on a loaded 2-core machine renewals have stalled for more
	// than the default's 1.5 s: these single brokers keep Kafka's 9 s.
	// The failover tests run the binary with the default.
	cfg.SessionTimeout = 9 * time.Second
	for _, o := range opts {
		o(&cfg)
	}
	return startBroker(t, cfg)
}

func startBroker(t testing.TB, cfg broker.Config) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	tb := &Broker{Broker: b, Addr: b.Addrs()[0], Config: cfg}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return tb
}

// Restart closes the broker cleanly and starts it again on the same data
// directory and listener address.
func (b *Broker) Restart(t testing.TB) *Broker {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatalf("close broker: %v", err)
	}
	cfg := b.Config
	cfg.Listeners = []string{"PLAINTEXT://" + b.Addr}
	return startBroker(t, cfg)
}

// testLogger logs to stderr when SAMSA_TEST_LOG is set, else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// WaitFor polls cond until it returns nil or the timeout passes, then fails
// the test with cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
