package test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUncleanElectionDryRun: a partition on brokers 1 and 2 whose
// follower (2) stopped, whose leader then took 5 more records alone and
// stopped too, with broker 2 back: offline, ISR [1]. `samsa cluster
// elect-leaders --election-type unclean --dry-run` names broker 2 as the
// replica an unclean election would choose, with its log end (10), says
// that what broker 1 held from offset 10 on would be lost, and elects
// nothing.
func TestUncleanElectionDryRun(t *testing.T) {
	c := StartCluster(t, 3)
	const topic = "dry"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, nil)
	waitPartition(t, c, topic, 0, 1, []int32{1, 2}, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	produce := func(n int) {
		t.Helper()
		cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		defer cl.Close()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(10)
	c.Stop(2)
	waitPartition(t, c, topic, 0, 1, []int32{1}, 60*time.Second)
	produce(5)
	c.Stop(1)
	waitPartition(t, c, topic, 0, -1, []int32{1}, 60*time.Second)
	c.Restart(2)

	dryRun := func() string {
		out, err := exec.CommandContext(ctx, procSamsaBinary(t), "cluster", "elect-leaders", "--election-type", "unclean", "--dry-run",
			"--topic", topic, "--bootstrap-server", c.Bootstrap()).CombinedOutput()
		if err != nil {
			t.Fatalf("samsa cluster elect-leaders --dry-run: %v\n%s", err, out)
		}
		return string(out)
	}
	// Broker 2's metrics listener answers once it serves.
	var text string
	WaitFor(t, 60*time.Second, func() error {
		text = dryRun()
		if !strings.Contains(text, "(log 0 to 10)") {
			return fmt.Errorf("dry run: %s", text)
		}
		return nil
	})
	for _, want := range []string{
		"Partition dry-0: would elect 2, outside the ISR [1] (log 0 to 10)",
		"whatever replicas [1] held from offset 10 on",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run lacks %q:\n%s", want, text)
		}
	}
	if p, err := partitionOf(c, topic, 0); err != nil || p.Leader != -1 {
		t.Errorf("after the dry run: leader %d (%v), want the partition still offline", p.Leader, err)
	}
}
