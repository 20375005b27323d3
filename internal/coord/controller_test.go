package coord

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
)

// One broker wins; the other waits until the winner's session ends, then
// takes over with a higher epoch. The cache reports the controller, and a
// write fenced by the old epoch fails.
func TestControllerElection(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	c1 := connect(t, eps, cluster)
	c2 := connect(t, eps, cluster)
	s1 := register(t, c1, testBroker(1), 10*time.Second)
	s2 := register(t, c2, testBroker(2), 10*time.Second)

	epoch1, err := s1.Campaign(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s1.Campaign(testCtx(t)); err != nil || again != epoch1 {
		t.Fatalf("campaign while holding: epoch %d, %v; want %d", again, err, epoch1)
	}
	cache, err := c2.NewCache(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	waitFor(t, 10*time.Second, func() error {
		if s := cache.Snapshot(); s.ControllerID != 1 || s.ControllerEpoch != epoch1 {
			return fmt.Errorf("cache says controller %d epoch %d", s.ControllerID, s.ControllerEpoch)
		}
		return nil
	})

	// A partition state to fence writes on.
	topic := meta.Topic{Name: "fenced", ID: meta.NewTopicID(), Partitions: [][]int32{{1, 2}}}
	st := meta.PartitionState{Topic: "fenced", Partition: 0, Leader: 1, ISR: []int32{1, 2}}
	if err := c1.CreateTopic(testCtx(t), topic, []meta.PartitionState{st}); err != nil {
		t.Fatal(err)
	}
	vps, err := c1.PartitionStates(testCtx(t), "fenced")
	if err != nil {
		t.Fatal(err)
	}
	st.LeaderEpoch, st.ControllerEpoch = 1, epoch1
	rev, err := c1.CASPartitionState(testCtx(t), st, vps[0].ModRevision, ControllerIs(epoch1))
	if err != nil {
		t.Fatalf("fenced write by the controller: %v", err)
	}

	won := make(chan int64, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		e, err := s2.Campaign(ctx)
		if err != nil {
			e = -1
		}
		won <- e
	}()
	select {
	case e := <-won:
		t.Fatalf("second candidate won (epoch %d) while the first held the role", e)
	case <-time.After(200 * time.Millisecond):
	}
	if err := s1.Resign(testCtx(t), epoch1); err != nil {
		t.Fatal(err)
	}
	epoch2 := <-won
	if epoch2 <= epoch1 {
		t.Fatalf("new controller epoch %d, want > %d", epoch2, epoch1)
	}
	waitFor(t, 10*time.Second, func() error {
		if s := cache.Snapshot(); s.ControllerID != 2 || s.ControllerEpoch != epoch2 {
			return fmt.Errorf("cache says controller %d epoch %d", s.ControllerID, s.ControllerEpoch)
		}
		return nil
	})
	// The deposed controller's fenced write fails.
	st.LeaderEpoch = 2
	_, err = c1.CASPartitionState(testCtx(t), st, rev, ControllerIs(epoch1))
	if !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("write fenced by a stale controller epoch: got %v, want ErrConditionFailed", err)
	}
	// The session ending (lease revoked) also ends the role.
	if err := s2.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() error {
		if s := cache.Snapshot(); s.ControllerID != -1 {
			return fmt.Errorf("controller %d after its session closed", s.ControllerID)
		}
		return nil
	})
}
