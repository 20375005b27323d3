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

// TestTopicDescribeExplain: `samsa topic describe --explain` against three
// samsa server processes shows, under the partition, its leader's account
// of each replica (from the leader's metrics listener, found through its
// metrics.listener config): with broker 3 stopped, replica 3 is out of the
// ISR because its broker is not registered, replica 2 is in it, and both
// in-ISR replicas are fsync'd to the high watermark the leader reports.
func TestTopicDescribeExplain(t *testing.T) {
	c := StartCluster(t, 3)
	const topic = "explained"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, nil)
	waitPartition(t, c, topic, 0, 1, []int32{1, 2, 3}, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.Stop(3)
	waitPartition(t, c, topic, 0, 1, []int32{1, 2}, 60*time.Second)

	out, err := exec.CommandContext(ctx, procSamsaBinary(t), "topic", "describe", topic, "--explain",
		"--bootstrap-server", c.Bootstrap()).CombinedOutput()
	if err != nil {
		t.Fatalf("samsa topic describe --explain: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"leader 1 in epoch",
		"high watermark 20",
		"Replica 1: leader, log end 20, fsync'd to the high watermark",
		"Replica 2: in ISR, log end 20, lag 0, last fetch",
		"Replica 3: OUT OF ISR: broker not registered",
		// The ISR history in etcd: the controller took broker 3 out
		// when it began its controlled shutdown.
		"ISR history (newest first, 1 of 1 kept):",
		"partition epoch 1, by controller ",
		"ISR [1,2,3] -> [1,2]: dead, shutting-down or recovering brokers removed from the ISR: broker 3 is in controlled shutdown",
		// When replica 3 left, from that history.
		"(out since ",
		// The live replicas' own truncation audits.
		"Replica 2: in ISR, log end 20, lag 0, last fetch",
		"fsync'd to the high watermark, no truncation since its broker opened it",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
