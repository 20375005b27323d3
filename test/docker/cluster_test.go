package docker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The tests run one at a time (no t.Parallel): each starts three broker
// containers, which is what a 2-core machine carries alongside the rest of
// `go test ./...`.

// rf3 is a topic replicated three times that needs two in-sync replicas to
// acknowledge acks=all writes.
var rf3 = map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}

// TestDockerProduceConsume: three brokers in containers form one cluster
// (three embedded etcd members), a topic replicated three times takes
// acks=all writes, and every write reads back.
func TestDockerProduceConsume(t *testing.T) {
	start := time.Now()
	c := Start(t, 3)
	t.Logf("3 brokers up in %v", time.Since(start).Round(time.Millisecond))
	c.CreateTopic("orders", 3, 3, rf3)

	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 3000
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf("v-%08d", i))})
	}
	acked := map[string]Ack{}
	for _, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
		acked[string(r.Record.Value)] = Ack{Partition: r.Record.Partition, Offset: r.Record.Offset}
	}
	read := c.ReadAll("orders")
	CheckNoLoss(t, acked, read)
	total := 0
	for _, byOff := range read {
		total += len(byOff)
	}
	if total != n || len(read) != 3 {
		t.Errorf("read %d records from %d partitions, want %d from 3", total, len(read), n)
	}
}

// TestDockerKillLeader: kill -9 (docker kill) of a partition's leader under
// acks=all load. A new leader takes over, writes go on, no acknowledged
// record is lost, and the killed broker, started again, recovers and
// rejoins the ISR.
func TestDockerKillLeader(t *testing.T) {
	c := Start(t, 3)
	c.CreateTopic("kill", 3, 3, rf3)
	p := c.StartProducer("kill", 2*time.Millisecond)
	p.WaitAcked(t, 0, 200, 30*time.Second)

	st, err := c.Node(1).Partition("kill", 0)
	if err != nil {
		t.Fatal(err)
	}
	victim := c.Node(st.Leader)
	killedAt := time.Now()
	victim.Kill()
	t.Logf("killed broker %d, leader of kill/0 (epoch %d)", victim.ID, st.LeaderEpoch)

	other := c.Node(victim.ID%3 + 1)
	c.WaitFor(c.SessionTimeout+30*time.Second, func() error {
		now, err := other.Partition("kill", 0)
		if err != nil {
			return err
		}
		if now.Leader == victim.ID || now.Leader < 0 {
			return fmt.Errorf("kill/0 still led by %d", now.Leader)
		}
		return nil
	})
	t.Logf("new leader of kill/0 after %v", time.Since(killedAt).Round(time.Millisecond))
	p.WaitAcked(t, 0, 200, 60*time.Second)
	t.Logf("writes to kill/0 acknowledged again %v after the kill", time.Since(killedAt).Round(time.Millisecond))

	victim.Start()
	restartedAt := time.Now()
	c.WaitFor(60*time.Second, func() error { return c.fullISRs("kill") })
	t.Logf("broker %d back in every ISR %v after its restart", victim.ID, time.Since(restartedAt).Round(time.Millisecond))
	p.WaitAcked(t, -1, 200, 30*time.Second)

	acked, sent, failed := p.Stop(t)
	t.Logf("producer: %d sent, %d acknowledged, %d failed", sent, len(acked), failed)
	CheckNoLoss(t, acked, c.ReadAll("kill"))
}

// TestDockerPartitionLeader: the leader's container is cut off the network
// (from the other brokers, their etcd members and the clients). The
// majority elects a new leader and takes writes; reconnected, the old
// leader rejoins as a follower, back in the ISR, and no acknowledged record
// is lost. (Cut off longer than its session timeout, the old leader loses
// its registration and exits; the harness's supervisor starts it again
// once it is back on the network.)
func TestDockerPartitionLeader(t *testing.T) {
	c := Start(t, 3)
	c.CreateTopic("cut", 1, 3, rf3)
	p := c.StartProducer("cut", 2*time.Millisecond)
	p.WaitAcked(t, 0, 200, 30*time.Second)

	st, err := c.Node(1).Partition("cut", 0)
	if err != nil {
		t.Fatal(err)
	}
	old := c.Node(st.Leader)
	cutAt := time.Now()
	old.Disconnect()
	t.Logf("disconnected broker %d, leader of cut/0 (epoch %d)", old.ID, st.LeaderEpoch)

	var majority []*Node
	for _, n := range c.Nodes {
		if n != old {
			majority = append(majority, n)
		}
	}
	var newState PartitionState
	c.WaitFor(c.SessionTimeout+30*time.Second, func() error {
		for _, n := range majority {
			now, err := n.Partition("cut", 0)
			if err != nil {
				return err
			}
			if now.Leader == old.ID || now.Leader < 0 || now.LeaderEpoch <= st.LeaderEpoch {
				return fmt.Errorf("broker %d: cut/0 led by %d in epoch %d", n.ID, now.Leader, now.LeaderEpoch)
			}
			newState = now
		}
		return nil
	})
	t.Logf("broker %d leads cut/0 in epoch %d, %v after the cut", newState.Leader, newState.LeaderEpoch, time.Since(cutAt).Round(time.Millisecond))
	p.WaitAcked(t, 0, 200, 60*time.Second)
	t.Logf("writes acknowledged again %v after the cut", time.Since(cutAt).Round(time.Millisecond))

	old.Connect()
	healedAt := time.Now()
	c.WaitFor(60*time.Second, func() error {
		for _, n := range c.Nodes {
			now, err := n.Partition("cut", 0)
			if err != nil {
				return err
			}
			if now.Leader == old.ID || !slices.Contains(now.ISR, old.ID) || len(now.ISR) != 3 {
				return fmt.Errorf("broker %d: cut/0 led by %d, isr %v", n.ID, now.Leader, now.ISR)
			}
		}
		return nil
	})
	t.Logf("broker %d back in the ISR as a follower %v after reconnecting (restarted by the supervisor %d times)",
		old.ID, time.Since(healedAt).Round(time.Millisecond), old.Restarts())
	p.WaitAcked(t, 0, 200, 30*time.Second)

	acked, sent, failed := p.Stop(t)
	t.Logf("producer: %d sent, %d acknowledged, %d failed", sent, len(acked), failed)
	CheckNoLoss(t, acked, c.ReadAll("cut"))
}

// TestDockerFaultControls exercises the harness's other faults: a paused
// broker does not answer and answers again once thawed; stopped (SIGTERM)
// and started, and restarted, brokers register again.
func TestDockerFaultControls(t *testing.T) {
	c := Start(t, 3)
	ready := func(n *Node) func() error { return func() error { return n.ready(3) } }

	n3 := c.Node(3)
	n3.Pause()
	if err := n3.ready(3); err == nil {
		t.Errorf("paused broker 3 answered")
	}
	n3.Unpause()
	c.WaitFor(30*time.Second, ready(n3))

	n2 := c.Node(2)
	n2.Stop()
	if err := n2.ready(3); err == nil {
		t.Errorf("stopped broker 2 answered")
	}
	n2.Start()
	c.WaitFor(60*time.Second, ready(n2))

	n1 := c.Node(1)
	n1.Restart()
	c.WaitFor(60*time.Second, func() error {
		for _, n := range c.Nodes {
			if err := n.ready(3); err != nil {
				return err
			}
		}
		return nil
	})
	// Broker 3 was frozen about as long as its session timeout (the failed
	// request's timeout); if its session expired, it registered again in
	// the same process. No broker may have exited.
	for _, n := range []*Node{n1, n2, n3} {
		if r := n.Restarts(); r != 0 {
			t.Errorf("broker %d restarted by the supervisor %d times", n.ID, r)
		}
	}
}
