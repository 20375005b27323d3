package docker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestDockerCuts exercises the packet-filter faults and the loss of a log
// tail, each healed, under an acks=all producer:
//   - the leader cut from its followers on the Kafka port only: its etcd
//     session stays alive, so it stays leader and shrinks the ISR to itself
//     (the followers' fetches stop); clients still reach every broker;
//     healed, the followers rejoin the ISR;
//   - a follower cut from the other etcd members only: it loses its
//     registration (and exits, restarted by the supervisor, still cut off)
//     while it still reaches the leader; healed, it registers again and
//     rejoins;
//   - a follower killed and its log tails cut (LoseTail): it recovers,
//     truncates, catches up and rejoins.
//
// Then no acknowledged record is lost and the replica logs agree below the
// high watermark (CheckReplicas).
func TestDockerCuts(t *testing.T) {
	const topic = "cuts"
	c := Start(t, 3, WithOverrides("replica.lag.time.max.ms=2000"))
	c.CreateTopic(topic, 1, 3, rf3)
	p := c.StartProducer(topic, 2*time.Millisecond)
	p.WaitAcked(t, 0, 200, 30*time.Second)

	st, err := c.Node(1).Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Node(st.Leader)
	var followers []*Node
	for _, n := range c.Nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}

	// 1. The leader cut from its followers on the Kafka port.
	cutAt := time.Now()
	for _, f := range followers {
		c.Cut(leader, f, KafkaPort)
	}
	t.Logf("cut broker %d (leader of %s/0, epoch %d) from its followers on port %d: %s", leader.ID, topic, st.LeaderEpoch, KafkaPort, leader.Cuts())
	c.WaitFor(30*time.Second, func() error {
		for _, n := range c.Nodes {
			now, err := n.Partition(topic, 0)
			if err != nil {
				return err
			}
			if now.Leader != leader.ID || now.LeaderEpoch != st.LeaderEpoch || !slices.Equal(now.ISR, []int32{leader.ID}) {
				return fmt.Errorf("broker %d: %s/0 led by %d in epoch %d, ISR %v", n.ID, topic, now.Leader, now.LeaderEpoch, now.ISR)
			}
		}
		return nil
	})
	t.Logf("ISR shrank to the leader alone %v after the cut; it kept its leadership and every broker answers clients", time.Since(cutAt).Round(time.Millisecond))
	for _, n := range c.Nodes {
		if err := n.ready(3); err != nil {
			t.Errorf("during the Kafka-port cut: %v", err)
		}
	}
	c.HealCuts()
	healedAt := time.Now()
	c.WaitFor(60*time.Second, func() error { return c.fullISRs(topic) })
	t.Logf("followers back in the ISR %v after healing", time.Since(healedAt).Round(time.Millisecond))
	p.WaitAcked(t, 0, 200, 30*time.Second)

	// 2. A follower cut from the etcd members.
	victim := followers[0]
	for _, n := range c.Nodes {
		if n != victim {
			c.Cut(victim, n, etcdPeerPort)
		}
	}
	cutAt = time.Now()
	c.WaitFor(c.SessionTimeout+30*time.Second, func() error {
		for _, n := range c.Nodes {
			if n != victim {
				if err := n.ready(2); err != nil {
					return err
				}
			}
		}
		return nil
	})
	t.Logf("broker %d, cut from etcd only, lost its registration %v after the cut", victim.ID, time.Since(cutAt).Round(time.Millisecond))
	p.WaitAcked(t, 0, 200, 30*time.Second)
	c.HealCuts()
	healedAt = time.Now()
	c.WaitFor(90*time.Second, func() error { return c.fullISRs(topic) })
	t.Logf("broker %d registered and back in the ISR %v after healing (restarted by the supervisor %d times)",
		victim.ID, time.Since(healedAt).Round(time.Millisecond), victim.Restarts())

	// 3. A follower loses the tail of its logs in a crash.
	victim = followers[1]
	victim.Kill()
	lost := victim.LoseTail(rand.New(rand.NewPCG(1, 2)), 64<<10)
	if lost == "" {
		t.Fatalf("broker %d: LoseTail cut nothing", victim.ID)
	}
	t.Logf("broker %d killed, log tails cut: %s", victim.ID, lost)
	victim.Start()
	c.WaitFor(90*time.Second, func() error { return c.fullISRs(topic) })
	p.WaitAcked(t, 0, 200, 30*time.Second)

	acked, sent, failed := p.Stop(t)
	t.Logf("producer: %d sent, %d acknowledged, %d failed", sent, len(acked), failed)
	CheckNoLoss(t, acked, c.ReadAll(topic))
	if err := c.CheckReplicas(topic, 1, 30*time.Second); err != nil {
		t.Errorf("replicas: %v", err)
	}
}
