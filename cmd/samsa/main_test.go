package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// runCLI runs the CLI in-process and returns its stdout, stderr and error.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestHelpListsCommands(t *testing.T) {
	out, _, err := runCLI(t, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"topic", "produce", "consume", "--bootstrap-server", "localhost:9092"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not mention %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, "", "topic", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"create", "list", "describe", "alter", "delete", "--timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("topic help does not mention %q:\n%s", want, out)
		}
	}
}

func TestBootstrapFromEnv(t *testing.T) {
	t.Setenv(bootstrapEnv, "broker-a:1234,broker-b:1234")
	out, _, err := runCLI(t, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `(default "broker-a:1234,broker-b:1234")`) {
		t.Errorf("help does not show the %s default:\n%s", bootstrapEnv, out)
	}
}

// TestUsageErrors checks flag validation that must fail before any broker is
// contacted (the bootstrap address would hang if it were dialed).
func TestUsageErrors(t *testing.T) {
	blackhole := startBlackhole(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown command", []string{"nosuch"}, `unknown command "nosuch"`},
		{"unknown flag gives a usage hint", []string{"topic", "list", "--bogus"}, "Run 'samsa topic list --help' for usage."},
		{"create needs a name", []string{"topic", "create"}, "accepts 1 arg"},
		{"create zero partitions", []string{"topic", "create", "t", "--partitions", "0"}, "--partitions must be at least 1"},
		{"create zero replicas", []string{"topic", "create", "t", "--replication-factor", "0"}, "--replication-factor must be at least 1"},
		{"create bad config", []string{"topic", "create", "t", "--config", "retention.ms"}, "want key=value"},
		{"create replication factor overflow", []string{"topic", "create", "t", "--replication-factor", "40000"}, "invalid argument"},
		{"alter nothing", []string{"topic", "alter", "t"}, "nothing to alter"},
		{"alter set and delete", []string{"topic", "alter", "t", "--config", "a=1", "--delete-config", "a"}, "both set and deleted"},
		{"delete needs names", []string{"topic", "delete"}, "requires at least 1 arg"},
		{"describe two filters", []string{"topic", "describe", "--under-replicated-partitions", "--unavailable-partitions"}, "none of the others can be"},
		{"produce key and separator", []string{"produce", "t", "--key", "k", "--key-separator", ":"}, "none of the others can be"},
		{"produce bad acks", []string{"produce", "t", "--acks", "2"}, "invalid --acks"},
		{"produce idempotent needs acks all", []string{"produce", "t", "--acks", "1", "--idempotent=true"}, "requires --acks all"},
		{"consume offset needs partition", []string{"consume", "t", "--offset", "5"}, "needs --partition"},
		{"consume from-beginning and offset", []string{"consume", "t", "--from-beginning", "--offset", "latest"}, "none of the others can be"},
		{"consume group and partition", []string{"consume", "t", "--group", "g", "--partition", "0"}, "none of the others can be"},
		{"empty bootstrap", []string{"-b", " ", "topic", "list"}, "--bootstrap-server is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			args := append([]string{"-b", blackhole}, tt.args...)
			_, _, err := runCLI(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v: a usage error must not wait for a broker", d)
			}
		})
	}
}

// startBlackhole listens on a loopback port, accepts connections and never
// answers: a broker that is up at the TCP level but dead above it.
func startBlackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestDeadBrokerIsBounded checks that every client command gives up, with an
// error, soon after its timeout when the broker accepts connections but
// never answers.
func TestDeadBrokerIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for timeouts")
	}
	blackhole := startBlackhole(t)
	tests := []struct {
		name  string
		stdin string
		args  []string
		limit time.Duration
	}{
		{"topic list", "", []string{"topic", "list", "--timeout", "1s"}, 4 * time.Second},
		{"topic describe", "", []string{"topic", "describe", "--timeout", "1s"}, 4 * time.Second},
		{"topic create", "", []string{"topic", "create", "t", "--timeout", "1s"}, 4 * time.Second},
		{"topic delete", "", []string{"topic", "delete", "t", "--timeout", "1s"}, 4 * time.Second},
		{"topic alter", "", []string{"topic", "alter", "t", "--config", "a=b", "--timeout", "1s"}, 4 * time.Second},
		{"consume", "", []string{"consume", "t", "--timeout", "1s"}, 4 * time.Second},
		{"consume group", "", []string{"consume", "t", "--group", "g", "--timeout", "1s"}, 4 * time.Second},
		// A produced record fails after --timeout; Flush allows 5s more.
		{"produce value", "", []string{"produce", "t", "--value", "v", "--timeout", "1s"}, 8 * time.Second},
		{"produce stdin", "a\nb\n", []string{"produce", "t", "--timeout", "1s"}, 8 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			args := append([]string{"-b", blackhole}, tt.args...)
			out, _, err := runCLI(t, tt.stdin, args...)
			d := time.Since(start)
			if err == nil {
				t.Fatalf("no error against a dead broker; stdout %q", out)
			}
			if d > tt.limit {
				t.Errorf("gave up after %v, want at most %v (err: %v)", d, tt.limit, err)
			}
			t.Logf("after %v: %v", d.Round(time.Millisecond), err)
		})
	}
}

func TestConnectionRefusedFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	_, _, err = runCLI(t, "", "-b", addr, "topic", "list", "--timeout", "5s")
	if err == nil {
		t.Fatal("no error with nothing listening")
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestExtraCommandsHook(t *testing.T) {
	saved := extraCommands
	t.Cleanup(func() { extraCommands = saved })
	called := false
	extraCommands = append(append([]func() *cobra.Command(nil), saved...), func() *cobra.Command {
		return &cobra.Command{
			Use: "hooked",
			RunE: func(cmd *cobra.Command, args []string) error {
				called = true
				_, err := cmd.OutOrStdout().Write([]byte("hi\n"))
				return err
			},
		}
	})
	out, _, err := runCLI(t, "", "hooked")
	if err != nil {
		t.Fatal(err)
	}
	if !called || out != "hi\n" {
		t.Errorf("hooked command: called=%v out=%q", called, out)
	}
}

func TestRunCancelled(t *testing.T) {
	blackhole := startBlackhole(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	err := run(ctx, []string{"-b", blackhole, "topic", "list", "--timeout", "30s"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("no error after cancellation")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancellation took %v to stop the command", d)
	}
}
