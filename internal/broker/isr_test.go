package broker

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// isrFixture is broker 1 with a real embedded etcd, its registration, its
// metadata cache and the leader replica of t-0 (replicas 1 and 2, ISR {1},
// partition epoch 0), with broker 2 caught up and proposed to join.
type isrFixture struct {
	b  *Broker
	u  *isrUpdater
	lp *localPartition
}

func newISRFixture(t *testing.T) *isrFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := quietLogger()
	e := startTestEtcd(t)
	cl, err := coord.Connect(ctx, e.Endpoints(), "isr-test", coord.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	session, err := cl.RegisterBroker(ctx, meta.Broker{ID: 1, Host: "127.0.0.1", Port: 9092}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close(context.Background()) })
	topic := meta.Topic{Name: "t", ID: meta.NewTopicID(), Partitions: [][]int32{{1, 2}}}
	if err := cl.CreateTopic(ctx, topic, []meta.PartitionState{{Topic: "t", Partition: 0, Leader: 1, ISR: []int32{1}}}); err != nil {
		t.Fatal(err)
	}
	cache, err := cl.NewCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	if err := cache.WaitRevision(ctx, cl.LastRevision()); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.NodeID = 1
	cfg.DataDir = t.TempDir()
	b := &Broker{cfg: cfg, logger: quiet, client: cl, cache: cache, session: session}
	m := newPartitionManager(b)
	lp, err := m.open(topicPartition{"t", 0}, topic.ID, resolveTopicSettings(map[string]string{"flush.messages": "100"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lp.Close(false) })
	if err := lp.BecomeLeader(0, 0, []int32{1}, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := lp.AppendAsLeader(records.Build([]records.KV{{Key: []byte("k"), Value: []byte("v")}}, time.Now().UnixMilli())); err != nil {
		t.Fatal(err)
	}
	if expand, err := lp.FollowerFetch(2, -1, 1, time.Now(), true); err != nil || !expand {
		t.Fatalf("caught-up follower 2: expand %v, %v", expand, err)
	}
	return &isrFixture{b: b, u: newISRUpdater(b), lp: lp}
}

// history returns t-0's ISR history in etcd.
func (f *isrFixture) history(t *testing.T) []meta.ISRChange {
	t.Helper()
	h, err := f.b.client.ISRHistory(context.Background(), f.lp.topicID)
	if err != nil {
		t.Fatal(err)
	}
	return h[0]
}

// An expansion and a shrink the leader stores are recorded in the ISR
// history with the member and why; a store that fails records nothing.
func TestISRExpansionRecordedInHistory(t *testing.T) {
	f := newISRFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Broker 2 not registered: the expansion is refused, no entry.
	if _, err := f.u.store(ctx, f.lp); err == nil {
		t.Fatal("an expansion to an unregistered broker was stored")
	}
	if h := f.history(t); len(h) != 0 {
		t.Fatalf("a refused change left history: %+v", h)
	}
	s2, err := f.b.client.RegisterBroker(ctx, meta.Broker{ID: 2, Host: "127.0.0.1", Port: 9093}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close(context.Background()) })
	if err := f.b.cache.WaitRevision(ctx, f.b.client.LastRevision()); err != nil {
		t.Fatal(err)
	}
	// The refused attempt ends as the updater ends it; the follower's
	// next fetch proposes the expansion again if it was dropped.
	f.lp.ISRProposalFailed(0, false)
	if _, ok := f.lp.ProposedISR(); !ok {
		if _, err := f.lp.FollowerFetch(2, -1, 1, time.Now(), true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.u.store(ctx, f.lp); err != nil {
		t.Fatalf("storing the expansion: %v", err)
	}
	h := f.history(t)
	if len(h) != 1 {
		t.Fatalf("ISR history: %+v, want the expansion", h)
	}
	c := h[0]
	if c.By != "leader 1" || c.PartitionEpoch != 1 || !slices.Equal(c.PreviousISR, []int32{1}) || !slices.Equal(c.ISR, []int32{1, 2}) ||
		c.Leader != 1 || c.PreviousLeader != 1 || c.Reason != "replica 2 added: caught up to the high watermark (its log end 1)" {
		t.Errorf("ISR history entry: %+v", c)
	}

	// The stored expansion applied, follower 2 then stops fetching past
	// replica.lag.time.max.ms: the shrink is recorded with why.
	st := f.stored(t)
	if err := f.lp.BecomeLeader(0, st.PartitionEpoch, st.ISR, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := f.b.cache.WaitRevision(ctx, f.b.client.LastRevision()); err != nil {
		t.Fatal(err)
	}
	if !f.lp.MaybeShrinkISR(time.Now().Add(2 * time.Minute)) {
		t.Fatal("no shrink proposed for a follower silent past replica.lag.time.max.ms")
	}
	if _, err := f.u.store(ctx, f.lp); err != nil {
		t.Fatalf("storing the shrink: %v", err)
	}
	h = f.history(t)
	if len(h) != 2 {
		t.Fatalf("ISR history: %+v, want the expansion and the shrink", h)
	}
	c = h[1]
	if c.By != "leader 1" || c.PartitionEpoch != 2 || !slices.Equal(c.PreviousISR, []int32{1, 2}) || !slices.Equal(c.ISR, []int32{1}) ||
		!strings.HasPrefix(c.Reason, "replica 2 removed: ") || !strings.Contains(c.Reason, "replica.lag.time.max.ms") {
		t.Errorf("ISR history entry of the shrink: %+v", c)
	}
}

// stored returns t-0's partition state in etcd.
func (f *isrFixture) stored(t *testing.T) meta.PartitionState {
	t.Helper()
	ps, err := f.b.client.PartitionStates(context.Background(), "t")
	if err != nil || len(ps) != 1 {
		t.Fatalf("stored states: %v, %v", ps, err)
	}
	return ps[0].PartitionState
}

// Review finding (issue 10, hole 4): an expansion whose write had an unknown
// outcome and whose joiner then died (not registered: every write of it
// again would fail its eligibility check) is settled by storing the base
// state under a new partition epoch; the pending expansion, which pins the
// high watermark at the dead joiner's position, then ends.
func TestUnknownISRChangeSettledWhenItCannotBeWritten(t *testing.T) {
	f := newISRFixture(t)
	if retry := f.lp.ISRProposalFailed(0, true); !retry {
		t.Fatal("a change of unknown outcome is not retried")
	}
	if _, err := f.u.store(context.Background(), f.lp); err != nil {
		t.Fatalf("settling the change: %v", err)
	}
	st := f.stored(t)
	if st.PartitionEpoch != 1 || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("stored after settling: ISR %v, partition epoch %d; want [1], 1", st.ISR, st.PartitionEpoch)
	}
	// The ISR history records the settling, by the leader.
	if h := f.history(t); len(h) != 1 || h[0].By != "leader 1" || h[0].PartitionEpoch != 1 ||
		!strings.Contains(h[0].Reason, "unknown outcome") || !slices.Equal(h[0].ISR, []int32{1}) {
		t.Errorf("ISR history after settling: %+v", h)
	}
	// The partition manager applies the new state: the change ends.
	if err := f.lp.BecomeLeader(0, st.PartitionEpoch, st.ISR, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if prop, ok := f.lp.ProposedISR(); ok {
		t.Fatalf("still pending after the settled state: %+v", prop)
	}
	if _, err := f.lp.AppendAsLeader(records.Build([]records.KV{{Key: []byte("k"), Value: []byte("w")}}, time.Now().UnixMilli())); err != nil {
		t.Fatal(err)
	}
	if err := f.lp.Flush(); err != nil {
		t.Fatal(err)
	}
	if hw := f.lp.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after the dead joiner's change ended, want 2", hw)
	}
}

// If the write of unknown outcome did land, settling fails (the state moved
// on) and leaves the stored expansion as it is.
func TestUnknownISRChangeThatLandedIsKept(t *testing.T) {
	f := newISRFixture(t)
	vp, _ := f.b.cache.Snapshot().Partition("t", 0)
	// The first write lands, but its answer is lost.
	landed := vp.PartitionState.Clone()
	landed.ISR, landed.PartitionEpoch = []int32{1, 2}, 1
	if _, err := f.b.client.CASPartitionState(context.Background(), landed, vp.ModRevision); err != nil {
		t.Fatal(err)
	}
	f.lp.ISRProposalFailed(0, true)
	_, err := f.u.store(context.Background(), f.lp)
	if err == nil || !writeOutcomeKnown(err) {
		t.Fatalf("settling over a landed change: %v, want a known failure (conflict or stale)", err)
	}
	if retry := f.lp.ISRProposalFailed(0, false); !retry {
		t.Fatal("the change that may be stored was dropped")
	}
	if st := f.stored(t); st.PartitionEpoch != 1 || !slices.Equal(st.ISR, []int32{1, 2}) {
		t.Fatalf("stored after the failed settle: ISR %v, partition epoch %d; want [1 2], 1", st.ISR, st.PartitionEpoch)
	}
}

// A change built on an older partition state than the stored one is never
// written over it: a member the controller removed meanwhile cannot come
// back.
func TestISRChangeAppliesOnlyToItsPartitionEpoch(t *testing.T) {
	f := newISRFixture(t)
	vp, _ := f.b.cache.Snapshot().Partition("t", 0)
	// The controller writes a new state (say, another ISR change) that
	// this leader has not applied yet.
	next := vp.PartitionState.Clone()
	next.PartitionEpoch = 1
	rev, err := f.b.client.CASPartitionState(context.Background(), next, vp.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.b.cache.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := f.u.store(context.Background(), f.lp); err == nil {
		t.Fatal("a change built on partition epoch 0 was written over epoch 1")
	}
	if st := f.stored(t); st.PartitionEpoch != 1 || !slices.Equal(st.ISR, []int32{1}) {
		t.Fatalf("stored: ISR %v, partition epoch %d; want [1], 1", st.ISR, st.PartitionEpoch)
	}
}

// quietLogger discards everything.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startTestEtcd starts an embedded etcd member on free ports of 127.0.0.1
// with its data in a temporary directory; it stops at the test's end.
func startTestEtcd(t *testing.T) *coord.Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := coord.StartEmbedded(ctx, coord.EmbeddedConfig{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
