package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// candidate is one registered broker running a controller candidate.
type candidate struct {
	id      int32
	client  *coord.Client
	session *coord.Session
	cancel  context.CancelFunc
	done    chan error
}

func startCandidate(t *testing.T, endpoints []string, cluster string, id int32) *candidate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := quietLogger()
	cl, err := coord.Connect(ctx, endpoints, cluster, coord.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.RegisterBroker(ctx, meta.Broker{ID: id, Host: "127.0.0.1", Port: 9000 + id, StartedUnixMs: time.Now().UnixMilli()}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := cl.NewCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	c := &candidate{id: id, client: cl, session: s, cancel: stop, done: make(chan error, 1)}
	go func() {
		c.done <- New(Config{Client: cl, Cache: cache, Session: s, Logger: quiet,
			Unclean: func(meta.Topic) bool { return false }}).Run(runCtx)
	}()
	t.Cleanup(func() {
		c.stop(t)
		cache.Close()
		cl.Close()
	})
	return c
}

// stop ends the candidate as a crash would (its lease revoked at once, as a
// stand-in for expiry) and waits for Run to return.
func (c *candidate) stop(t *testing.T) {
	if c.cancel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.session.Close(ctx)
	c.cancel()
	select {
	case <-c.done:
	case <-ctx.Done():
		t.Fatalf("controller candidate %d did not stop", c.id)
	}
	c.cancel = nil
}

func waitFor(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startCandidates starts an embedded etcd and controller candidates for
// brokers 1, 2 and 3 of cluster, and returns them with an admin client and
// its metadata cache; all are closed when the test ends (etcd last).
func startCandidates(t *testing.T, cluster string) (map[int32]*candidate, *coord.Client, *coord.Cache) {
	t.Helper()
	e, err := coord.StartEmbedded(context.Background(), coord.EmbeddedConfig{
		Dir: t.TempDir(), Name: "ctl", ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so closed after the candidates' cleanups, which
	// still need it.
	t.Cleanup(func() { e.Close() })
	eps := e.Endpoints()
	cands := map[int32]*candidate{}
	for _, id := range []int32{1, 2, 3} {
		cands[id] = startCandidate(t, eps, cluster, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := coord.Connect(ctx, eps, cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	cache, err := admin.NewCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	return cands, admin, cache
}

// Three brokers; the leader of a partition dies, then the controller dies:
// each time a live ISR replica takes over with a higher leader epoch, and
// the new controller carries on from etcd state alone.
func TestControllerFailover(t *testing.T) {
	cands, admin, cache := startCandidates(t, "failover")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Partition 0 led by 2, partition 1 by 3.
	topic := meta.Topic{Name: "t", ID: meta.NewTopicID(), Partitions: [][]int32{{2, 3, 1}, {3, 1, 2}}}
	states := []meta.PartitionState{
		{Topic: "t", Partition: 0, Leader: 2, ISR: []int32{2, 3, 1}},
		{Topic: "t", Partition: 1, Leader: 3, ISR: []int32{3, 1, 2}},
	}
	if err := admin.CreateTopic(ctx, topic, states); err != nil {
		t.Fatal(err)
	}
	stateOf := func(p int32) meta.PartitionState {
		vp, _ := cache.Snapshot().Partition("t", p)
		return vp.PartitionState
	}
	expect := func(p int32, leader, epoch int32, isr string) {
		t.Helper()
		waitFor(t, 20*time.Second, func() error {
			st := stateOf(p)
			if st.Leader != leader || st.LeaderEpoch != epoch || fmt.Sprint(st.ISR) != isr {
				return fmt.Errorf("partition %d: leader %d epoch %d isr %v; want %d %d %s", p, st.Leader, st.LeaderEpoch, st.ISR, leader, epoch, isr)
			}
			return nil
		})
	}

	// Broker 2 dies: partition 0 moves to 3 (next in assignment and ISR);
	// partition 1 keeps its leader and loses 2 from its ISR.
	cands[2].stop(t)
	expect(0, 3, 1, "[3 1]")
	expect(1, 3, 0, "[3 1]")

	// The controller dies: another takes over and handles the next failure.
	waitFor(t, 10*time.Second, func() error {
		if cache.Snapshot().ControllerID < 0 {
			return fmt.Errorf("no controller")
		}
		return nil
	})
	first := cache.Snapshot().ControllerID
	cands[first].stop(t)
	waitFor(t, 20*time.Second, func() error {
		s := cache.Snapshot()
		if s.ControllerID < 0 || s.ControllerID == first {
			return fmt.Errorf("controller %d", s.ControllerID)
		}
		return nil
	})
	survivor := cache.Snapshot().ControllerID
	// The dead controller (1 or 3) leaves the ISRs; if it led, the survivor
	// leads now with the next epoch.
	want := fmt.Sprintf("[%d]", survivor)
	epoch0 := int32(1)
	if first == 3 {
		epoch0 = 2
	}
	expect(0, survivor, epoch0, want)
	if st := stateOf(0); st.ControllerEpoch != cache.Snapshot().ControllerEpoch && first == 3 {
		t.Fatalf("partition 0 written by controller epoch %d, want the new controller's %d", st.ControllerEpoch, cache.Snapshot().ControllerEpoch)
	}
	// The last broker dies: the partitions go offline, keeping the ISR.
	cands[survivor].stop(t)
	if s := cache.Snapshot(); s.ControllerID == survivor {
		waitFor(t, 10*time.Second, func() error {
			if id := cache.Snapshot().ControllerID; id != -1 {
				return fmt.Errorf("controller %d with no live broker", id)
			}
			return nil
		})
	}
	if st := stateOf(0); st.Leader != survivor {
		t.Fatalf("with no controller alive nothing should change, got leader %d", st.Leader)
	}
}

// A broker whose registration turns Recovering in place (as after a
// restart faster than its session timeout: nobody sees it die) loses its
// leadership and ISR memberships, and a controller elected after the flag
// was set (failover in the middle) acts on it from etcd alone.
func TestControllerActsOnRecoveringFlag(t *testing.T) {
	cands, admin, cache := startCandidates(t, "recovering")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, 10*time.Second, func() error {
		if cache.Snapshot().ControllerID < 0 {
			return fmt.Errorf("no controller")
		}
		return nil
	})
	// x is the controller, r the broker that will recover, y the third.
	x := cache.Snapshot().ControllerID
	var r, y int32 = -1, -1
	for _, id := range []int32{1, 2, 3} {
		switch {
		case id == x:
		case r < 0:
			r = id
		default:
			y = id
		}
	}
	// Partition 0 led by r, partition 1 by y; both ISRs full.
	topic := meta.Topic{Name: "t", ID: meta.NewTopicID(), Partitions: [][]int32{{r, x, y}, {y, r, x}}}
	states := []meta.PartitionState{
		{Topic: "t", Partition: 0, Leader: r, ISR: []int32{r, x, y}},
		{Topic: "t", Partition: 1, Leader: y, ISR: []int32{y, r, x}},
	}
	if err := admin.CreateTopic(ctx, topic, states); err != nil {
		t.Fatal(err)
	}
	stateOf := func(p int32) meta.PartitionState {
		vp, _ := cache.Snapshot().Partition("t", p)
		return vp.PartitionState
	}
	expect := func(p int32, leader, epoch int32, isr string) {
		t.Helper()
		waitFor(t, 20*time.Second, func() error {
			st := stateOf(p)
			if st.Leader != leader || st.LeaderEpoch != epoch || fmt.Sprint(st.ISR) != isr {
				return fmt.Errorf("partition %d: leader %d epoch %d isr %v; want %d %d %s", p, st.Leader, st.LeaderEpoch, st.ISR, leader, epoch, isr)
			}
			return nil
		})
	}

	// The controller dies, and before another is elected r's registration
	// turns Recovering, in place.
	cands[x].stop(t)
	if err := cands[r].session.SetRecovering(ctx, true); err != nil {
		t.Fatal(err)
	}
	// The next controller (r or y) sees only the result: x gone, r
	// recovering. y is the one eligible broker left.
	expect(0, y, 1, fmt.Sprintf("[%d]", y))
	expect(1, y, 0, fmt.Sprintf("[%d]", y))
	if id := cache.Snapshot().ControllerID; id == x || id < 0 {
		t.Fatalf("controller %d after %d died", id, x)
	}
}

// quietLogger discards everything.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
