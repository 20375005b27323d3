package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	samsatest "github.com/samsa-io/samsa/test"
)

func TestClusterHelp(t *testing.T) {
	out, _, err := runCLI(t, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "cluster") {
		t.Errorf("help does not list the cluster command:\n%s", out)
	}
	out, _, err = runCLI(t, "", "cluster", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"describe", "--timeout", "--bootstrap-server"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster help does not mention %q:\n%s", want, out)
		}
	}
}

// TestClusterDescribeCommand runs the command against the fake broker of
// describeFixture: brokers 1 and 2 live, broker 3 gone but still a replica.
func TestClusterDescribeCommand(t *testing.T) {
	var b *fakeBroker
	b = startFakeBroker(t, describeFixture().handlers(&b))
	out, _, err := runCLI(t, "", "-b", b.addr(), "cluster", "describe", "--timeout", "10s")
	if err != nil {
		t.Fatal(err)
	}
	addr := b.addr()
	w := len(addr)
	want := "Cluster: fake  Controller: 1  Brokers: 3 (1 not alive)\n" +
		fmt.Sprintf("ID  %-*s  RACK  ALIVE  LEADERS  REPLICAS\n", w, "ADDRESS") +
		fmt.Sprintf("1   %-*s  -     yes    2        2\n", w, addr) +
		fmt.Sprintf("2   %-*s  -     yes    2        5\n", w, addr) +
		fmt.Sprintf("3   %-*s  -     no     0        1\n", w, "-") +
		"Partitions: 5  Offline: 1  Under-replicated: 2\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestClusterDescribeUsage(t *testing.T) {
	blackhole := startBlackhole(t)
	start := time.Now()
	_, _, err := runCLI(t, "", "-b", blackhole, "cluster", "describe", "extra")
	if err == nil || !strings.Contains(err.Error(), "unknown command") && !strings.Contains(err.Error(), "accepts 0 arg") {
		t.Errorf("cluster describe with an argument: err = %v, want a usage error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a usage error took %v: the broker was contacted", d)
	}
}

// TestE2EClusterDescribe runs `cluster describe` against a real
// single-node broker, through run() as main does.
func TestE2EClusterDescribe(t *testing.T) {
	b := samsatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}

	clusterID := e2eClusterID(ctx, t, b.Addr)
	w := max(len(b.Addr), len("ADDRESS"))
	describe := func(leaders, partitions int) string {
		return fmt.Sprintf("Cluster: %s  Controller: 1  Brokers: 1\n", clusterID) +
			fmt.Sprintf("ID  %-*s  RACK  ALIVE  LEADERS  REPLICAS\n", w, "ADDRESS") +
			fmt.Sprintf("1   %-*s  -     yes    %-7d  %d\n", w, b.Addr, leaders, partitions) +
			fmt.Sprintf("Partitions: %d  Offline: 0  Under-replicated: 0\n", partitions)
	}
	c.ok(describe(0, 0), "cluster", "describe")
	c.ok("Created topic t.\n", "topic", "create", "t", "--partitions", "3")
	c.ok("Created topic u.\n", "topic", "create", "u", "--partitions", "2")
	c.eventually(describe(5, 5), "cluster", "describe")
}

// e2eClusterID returns the cluster id that Metadata reports, asked with
// kadm.
func e2eClusterID(ctx context.Context, t *testing.T, addr string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil || md.Cluster == "" {
		t.Fatalf("metadata: cluster id %q, err %v", md.Cluster, err)
	}
	return md.Cluster
}
