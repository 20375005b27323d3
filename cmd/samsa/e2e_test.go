package main

// End-to-end tests of the CLI against a real in-process samsa broker: each
// command runs through run(), exactly as main runs it, and its output is
// compared with what kafka-topics.sh / kafka-console-* would print.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	samsatest "github.com/samsa-io/samsa/test"
)

// e2eTimeout bounds each end-to-end test.
const e2eTimeout = 90 * time.Second

// e2eCLI runs CLI commands against one broker.
type e2eCLI struct {
	t    *testing.T
	ctx  context.Context
	addr string
}

// run executes the CLI with args plus --bootstrap-server and returns
// stdout, stderr and the error.
func (c *e2eCLI) run(stdin string, args ...string) (string, string, error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	args = append(slices.Clone(args), "--bootstrap-server", c.addr)
	err := run(c.ctx, args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// ok runs a command that must succeed with exactly wantOut on stdout and
// nothing on stderr.
func (c *e2eCLI) ok(wantOut string, args ...string) {
	c.t.Helper()
	c.okIn("", wantOut, args...)
}

func (c *e2eCLI) okIn(stdin, wantOut string, args ...string) {
	c.t.Helper()
	out, errOut, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("samsa %s: %v (stderr %q)", strings.Join(args, " "), err, errOut)
	}
	if out != wantOut || errOut != "" {
		c.t.Fatalf("samsa %s:\nstdout %q\nwant   %q\nstderr %q", strings.Join(args, " "), out, wantOut, errOut)
	}
}

// eventually polls a command until its stdout is wantOut (the metadata
// cache of the broker catches up with etcd asynchronously).
func (c *e2eCLI) eventually(wantOut string, args ...string) {
	c.t.Helper()
	samsatest.WaitFor(c.t, 20*time.Second, func() error {
		out, errOut, err := c.run("", args...)
		if err != nil {
			return fmt.Errorf("samsa %s: %v (stderr %q)", strings.Join(args, " "), err, errOut)
		}
		if out != wantOut {
			return fmt.Errorf("samsa %s:\nstdout %q\nwant   %q", strings.Join(args, " "), out, wantOut)
		}
		return nil
	})
}

// e2eDescribe renders the expected `topic describe` output of a healthy
// single-broker topic: header, one line per partition, summary.
func e2eDescribe(topic, id string, partitions int, configs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: 1\tConfigs: %s\n", topic, id, partitions, configs)
	for p := range partitions {
		fmt.Fprintf(&b, "\tTopic: %s\tPartition: %d\tLeader: 1\tReplicas: 1\tIsr: 1\n", topic, p)
	}
	b.WriteString(e2eSummary(partitions))
	return b.String()
}

func e2eSummary(healthy int) string {
	return fmt.Sprintf("Partitions: %d healthy, 0 under-replicated, 0 offline, 0 led by a non-preferred replica\n", healthy)
}

// e2eTopicID returns a topic's id as Kafka prints it (URL-safe base64
// without padding), asked of the broker with kadm.
func e2eTopicID(ctx context.Context, t *testing.T, addr, topic string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || td.ID == ([16]byte{}) {
		t.Fatalf("metadata of %s: present %v, err %v, id %x", topic, ok, td.Err, td.ID)
	}
	return base64.RawURLEncoding.EncodeToString(td.ID[:])
}

// TestE2ETopicLifecycle drives topic create, list, describe (with
// filters), produce, consume, alter and delete against a real broker.
func TestE2ETopicLifecycle(t *testing.T) {
	b := samsatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}

	c.ok("Created topic t.\n", "topic", "create", "t", "--partitions", "3", "--config", "retention.ms=1000000")
	_, _, err := c.run("", "topic", "create", "t", "--partitions", "3")
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("creating t twice: err = %v, want TOPIC_ALREADY_EXISTS", err)
	}
	c.ok("", "topic", "create", "t", "--if-not-exists")
	c.ok("t\n", "topic", "list")

	id := e2eTopicID(ctx, t, b.Addr, "t")
	c.ok(e2eDescribe("t", id, 3, "retention.ms=1000000"), "topic", "describe", "t")
	c.ok(e2eDescribe("t", id, 3, "retention.ms=1000000"), "topic", "describe")

	// Produce keyed lines: key k<i%5>, value v<i>.
	const n = 30
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "k%d:v%d\n", i%5, i)
	}
	c.okIn(in.String(), fmt.Sprintf("Produced %d records to topic t.\n", n), "produce", "t", "--key-separator", ":")

	out, errOut, err := c.run("", "consume", "t", "--from-beginning", "--max-messages", fmt.Sprint(n),
		"--print-partition", "--print-key", "--timeout", "20s")
	if err != nil {
		t.Fatalf("consume: %v (stderr %q)", err, errOut)
	}
	if want := fmt.Sprintf("Processed a total of %d messages\n", n); errOut != want {
		t.Errorf("consume stderr %q, want %q", errOut, want)
	}
	checkConsumed(t, out, n)

	// Configs: set, then remove the override.
	c.ok("Altered configs of topic t.\n", "topic", "alter", "t", "--config", "retention.ms=2000000")
	c.eventually(e2eDescribe("t", id, 3, "retention.ms=2000000"), "topic", "describe", "t")
	c.ok("Altered configs of topic t.\n", "topic", "alter", "t", "--delete-config", "retention.ms")
	c.eventually(e2eDescribe("t", id, 3, ""), "topic", "describe", "t")
	c.ok("", "topic", "describe", "--topics-with-overrides", "--summary=false")

	// Partitions can grow, not shrink.
	c.ok("Topic t now has 5 partitions.\n", "topic", "alter", "t", "--partitions", "5")
	c.eventually(e2eDescribe("t", id, 5, ""), "topic", "describe", "t")
	if _, _, err := c.run("", "topic", "alter", "t", "--partitions", "2"); !errors.Is(err, kerr.InvalidPartitions) {
		t.Errorf("shrinking t to 2 partitions: err = %v, want INVALID_PARTITIONS", err)
	}

	// Health filters: a healthy single-broker cluster has no partition to
	// show; only the summary line is printed (as kafka-topics, no header).
	for _, filter := range []string{"--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"} {
		c.ok(e2eSummary(5), "topic", "describe", "t", filter)
		c.ok("", "topic", "describe", "t", filter, "--summary=false")
	}
	// min.insync.replicas is 1, so every partition is at min ISR.
	var atMin strings.Builder
	for p := range 5 {
		fmt.Fprintf(&atMin, "\tTopic: t\tPartition: %d\tLeader: 1\tReplicas: 1\tIsr: 1\n", p)
	}
	c.ok(atMin.String(), "topic", "describe", "t", "--at-min-isr-partitions", "--summary=false")

	c.ok("Deleted topic t.\n", "topic", "delete", "t")
	c.eventually("", "topic", "list")
	if _, _, err := c.run("", "topic", "describe", "t"); err == nil || !strings.Contains(err.Error(), `topic "t" does not exist`) {
		t.Errorf("describing a deleted topic: err = %v, want `topic \"t\" does not exist`", err)
	}
	if _, _, err := c.run("", "topic", "delete", "t"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting t twice: err = %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	c.ok("", "topic", "delete", "t", "--if-exists")
}

// checkConsumed checks `consume --print-partition --print-key` output of
// the n records "k<i%5>:v<i>": every record exactly once, each key in a
// single partition, and each key's values in production order.
func checkConsumed(t *testing.T, out string, n int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("consumed %d lines, want %d:\n%s", len(lines), n, out)
	}
	partOf := map[string]string{}
	lastValue := map[string]int{}
	seen := map[int]bool{}
	for _, line := range lines {
		var part, key string
		var v int
		fields := strings.Split(line, "\t")
		if len(fields) != 3 || !strings.HasPrefix(fields[0], "Partition:") {
			t.Fatalf("line %q: want Partition:P<TAB>key<TAB>value", line)
		}
		part, key = fields[0], fields[1]
		if _, err := fmt.Sscanf(fields[2], "v%d", &v); err != nil || fmt.Sprintf("v%d", v) != fields[2] {
			t.Fatalf("line %q: bad value", line)
		}
		if v < 0 || v >= n || seen[v] {
			t.Fatalf("line %q: value out of range or repeated", line)
		}
		seen[v] = true
		if want := fmt.Sprintf("k%d", v%5); key != want {
			t.Errorf("line %q: key %s, want %s", line, key, want)
		}
		if p, ok := partOf[key]; ok && p != part {
			t.Errorf("key %s in %s and %s; a key maps to one partition", key, p, part)
		}
		partOf[key] = part
		if last, ok := lastValue[key]; ok && v < last {
			t.Errorf("key %s: v%d after v%d", key, v, last)
		}
		lastValue[key] = v
	}
}

// e2eFreePort returns a port on 127.0.0.1 that was free a moment ago.
func e2eFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestE2EServerConfigErrors checks that `samsa server` with a bad setting
// fails with an error before it starts anything: no data directory is
// created and nothing listens on the configured port.
func TestE2EServerConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// want is a substring of the error; isConfig: errors.Is ErrConfig.
		want     string
		isConfig bool
	}{
		{"override without =", []string{"--override", "bogus"}, `--override "bogus": want name=value`, false},
		{"unknown setting", []string{"--override", "no.such.setting=1"}, `unknown setting "no.such.setting"`, true},
		{"bad value", []string{"--override", "num.partitions=0"}, `num.partitions="0"`, true},
		{"bad topic default", []string{"--override", "log.flush.interval.messages=0"}, "below the minimum 1", true},
		{"two log dirs", []string{"--override", "log.dirs=/a,/b"}, "exactly one log directory", true},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level", false},
		{"TLS listener without a keystore", []string{"--listeners", "SSL://127.0.0.1:1"}, "needs ssl.keystore.location", true},
		{"listener without a security protocol", []string{"--listeners", "CLIENT://127.0.0.1:1"}, "has no security protocol", true},
		{"listener without port", []string{"--listeners", "PLAINTEXT://127.0.0.1"}, "listener", true},
		{"missing config file", []string{"--config", "/nonexistent/server.properties"}, "/nonexistent/server.properties", false},
		{"unknown flag", []string{"--no-such-flag"}, "unknown flag: --no-such-flag", false},
		{"positional argument", []string{"extra"}, `unknown command "extra"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dataDir := filepath.Join(t.TempDir(), "data")
			port := e2eFreePort(t)
			args := []string{"server", "--data-dir", dataDir,
				"--listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
				"--override", fmt.Sprintf("metadata.etcd.client.url=http://127.0.0.1:%d", e2eFreePort(t)),
				"--override", fmt.Sprintf("metadata.etcd.peer.url=http://127.0.0.1:%d", e2eFreePort(t)),
				"--log-level", "error",
			}
			args = append(args, tt.args...)
			var out, errOut bytes.Buffer
			err := run(ctx, args, strings.NewReader(""), &out, &errOut)
			if err == nil {
				t.Fatalf("samsa %s: no error", strings.Join(args, " "))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			if tt.isConfig && !errors.Is(err, broker.ErrConfig) {
				t.Errorf("error %q is not broker.ErrConfig", err)
			}
			if _, statErr := os.Stat(dataDir); !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("data dir %s exists after a config error (stat: %v)", dataDir, statErr)
			}
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
				c.Close()
				t.Errorf("something listens on port %d after a config error", port)
			}
		})
	}
}

// TestE2EServerRunAndCancel runs `samsa server` in-process, uses it with
// the client commands, and cancels its context (what SIGTERM does in
// main): run must return nil.
func TestE2EServerRunAndCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	dataDir := t.TempDir()
	var (
		addr string
		done chan error
	)
	serverCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	for attempt := 1; ; attempt++ {
		addr = fmt.Sprintf("127.0.0.1:%d", e2eFreePort(t))
		args := []string{"server", "--data-dir", dataDir, "--listeners", "PLAINTEXT://" + addr,
			"--override", "metadata.etcd.client.url=http://127.0.0.1:0",
			"--override", "metadata.etcd.peer.url=http://127.0.0.1:0",
			"--override", "metrics.listener=http://127.0.0.1:0",
			"--log-level", "error"}
		done = make(chan error, 1)
		go func() { done <- run(serverCtx, args, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}) }()
		var startErr error
		samsatest.WaitFor(t, 60*time.Second, func() error {
			select {
			case startErr = <-done:
				return nil
			default:
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			c.Close()
			return nil
		})
		if startErr == nil {
			break
		}
		if attempt < 5 && strings.Contains(startErr.Error(), "address already in use") {
			continue // the port was taken in between
		}
		t.Fatalf("samsa server: %v", startErr)
	}

	c := &e2eCLI{t: t, ctx: ctx, addr: addr}
	c.ok("Created topic s.\n", "topic", "create", "s", "--partitions", "1")
	c.okIn("a\nb\n", "Produced 2 records to topic s.\n", "produce", "s")
	out, _, err := c.run("", "consume", "s", "--from-beginning", "--max-messages", "2", "--timeout", "20s")
	if err != nil || out != "a\nb\n" {
		t.Fatalf("consume: %q, %v; want \"a\\nb\\n\"", out, err)
	}

	stopServer()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("samsa server after cancel: %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("samsa server did not return within 30s of cancel")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the server returned", addr)
	}
}
