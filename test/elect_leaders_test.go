package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/broker"
)

// restartBroker1AndWaitNonPreferred stops broker 1 (its leaderships move
// away), restarts it and waits until it is back in every ISR while not
// leading the partitions it prefers.
func restartBroker1AndWaitNonPreferred(t *testing.T, ctx context.Context, c *inProcessCluster, adm *kadm.Client, topic string) {
	t.Helper()
	c.brokers[1] = c.brokers[1].Restart(t)
	WaitFor(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.ISR) != 3 {
				return fmt.Errorf("partition %d ISR %v", p.Partition, p.ISR)
			}
		}
		return nil
	})
}

// nonPreferred counts partitions not led by their first replica.
func nonPreferred(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1, err
	}
	n := 0
	for _, p := range md.Topics[topic].Partitions {
		if p.Leader != p.Replicas[0] {
			n++
		}
	}
	return n, nil
}

// ElectLeaders (PREFERRED) gives every partition back to its preferred
// replica after a restart moved leadership away; a second call finds
// nothing to do.
func TestElectPreferredLeaders(t *testing.T) {
	c := startInProcessCluster(t, 3, func(cfg *broker.Config) { cfg.AutoLeaderRebalance = false })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := c.adminWithTopic(ctx, t, "pref", 6, 3)
	restartBroker1AndWaitNonPreferred(t, ctx, c, adm, "pref")
	if n, err := nonPreferred(ctx, adm, "pref"); err != nil || n != 2 {
		t.Fatalf("%d partitions led by a non-preferred replica after the restart (%v), want broker 1's 2", n, err)
	}
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatal(err)
	}
	elected := 0
	for _, ps := range res {
		for _, r := range ps {
			if r.Err == nil {
				elected++
			}
		}
	}
	if elected != 2 {
		t.Fatalf("%d preferred elections succeeded, want 2: %+v", elected, res)
	}
	WaitFor(t, 10*time.Second, func() error {
		if n, err := nonPreferred(ctx, adm, "pref"); err != nil || n != 0 {
			return fmt.Errorf("%d partitions led by a non-preferred replica (%v)", n, err)
		}
		return nil
	})
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["pref"][0]; r.Err == nil || r.Err.Error() == "" {
		t.Fatalf("second election: %+v, want ELECTION_NOT_NEEDED", r)
	}
	CheckReplication(t, c, "pref")
}

// With auto.leader.rebalance.enable, the controller restores preferred
// leaders by itself.
func TestAutoLeaderRebalance(t *testing.T) {
	c := startInProcessCluster(t, 3, func(cfg *broker.Config) {
		cfg.AutoLeaderRebalance = true
		cfg.LeaderImbalanceCheckInterval = 500 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := c.adminWithTopic(ctx, t, "auto", 6, 3)
	restartBroker1AndWaitNonPreferred(t, ctx, c, adm, "auto")
	WaitFor(t, 30*time.Second, func() error {
		if n, err := nonPreferred(ctx, adm, "auto"); err != nil || n != 0 {
			return fmt.Errorf("%d partitions led by a non-preferred replica (%v)", n, err)
		}
		return nil
	})
	CheckReplication(t, c, "auto")
}
