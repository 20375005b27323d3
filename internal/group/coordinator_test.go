package group

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

func TestPartitionFor(t *testing.T) {
	// Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1], in int32.
	// "a": 97. "hello": 99162322 (a well-known value).
	// "group": ((((103*31+114)*31+111)*31+117)*31+112) = 98629247.
	// "my-group" overflows to -1906497762; "polygenelubricants" hashes to
	// Integer.MIN_VALUE, which Kafka's Utils.abs maps to 0.
	for _, c := range []struct {
		group string
		hash  int64
		n     int32
		want  int32
	}{
		{"a", 97, 50, 47},
		{"hello", 99162322, 50, 22},
		{"group", 98629247, 50, 47},
		{"group", 98629247, 3, 2},
		{"my-group", -1906497762, 50, 12},
		{"test-consumer-group", -1793216381, 50, 31},
		{"polygenelubricants", -2147483648, 50, 0},
		{"", 0, 50, 0},
	} {
		// The expected hash, computed here independently.
		var h int32
		for i := 0; i < len(c.group); i++ {
			h = h*31 + int32(c.group[i])
		}
		if int64(h) != c.hash {
			t.Fatalf("%q: test hash %d, want %d", c.group, h, c.hash)
		}
		abs := c.hash
		if abs == -1<<31 {
			abs = 0
		} else if abs < 0 {
			abs = -abs
		}
		if int32(abs%int64(c.n)) != c.want {
			t.Fatalf("%q: test formula disagrees", c.group)
		}
		if got := PartitionFor(c.group, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
	// A character outside the BMP is two UTF-16 units in Java:
	// "😀" is \uD83D\uDE00: 55357*31 + 56832 = 1772899.
	if got := PartitionFor("😀", 1000); got != 1772899%1000 {
		t.Errorf("PartitionFor(emoji) = %d", got)
	}
}

func TestLoadInProgress(t *testing.T) {
	clk := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	cfg := testConfig(clk)
	c := New(cfg)
	defer c.Close()
	st := &memStore{loadGate: make(chan struct{})}
	c.Elected(0, 1, 1, st)

	wantCode(t, "JoinGroup while loading", c.Join(context.Background(), joinReq("g", "", 5), "c", "h").ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	wantCode(t, "SyncGroup while loading", c.Sync(context.Background(), syncReq("g", "m", 1, nil)).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	// Kafka's GroupCoordinatorService.heartbeat: "the group is still
	// loading, so blindly respond" (issue 15).
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	wantCode(t, "Heartbeat while loading", c.Heartbeat(hb).ErrorCode, 0)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version, lv.Group = 4, "g"
	lv.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	wantCode(t, "LeaveGroup while loading", c.Leave(lv).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	wantCode(t, "DeleteGroups while loading", c.Delete(context.Background(), []string{"g"})[0].ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	wantCode(t, "OffsetDelete while loading", c.DeleteOffsets(context.Background(), od).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	wantCode(t, "OffsetFetch while loading", c.FetchOffsets(of).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	oc := commitCodes(c.CommitOffsets(context.Background(), commitReq("g", "", -1, 8, commitPartition{topic: "t"})))
	wantCode(t, "OffsetCommit while loading", oc["t/0"], kerr.CoordinatorLoadInProgress.Code)
	if _, code := c.List(nil); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("ListGroups while loading: %d", code)
	}
	wantCode(t, "DescribeGroups while loading", c.Describe([]string{"g"})[0].ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	c.Tick() // does nothing to a loading partition

	close(st.loadGate)
	h := &harness{t: t, clk: clk, store: st, c: c, cfg: cfg}
	h.waitLoaded(0)
	if _, code := c.List(nil); code != 0 {
		t.Fatalf("ListGroups after loading: %d", code)
	}
	wantCode(t, "JoinGroup after loading", h.join(joinReq("g", "", 3)).ErrorCode, 0)
}

// A failed load is tried again while the partition is led here: its
// groups are served once a load succeeds, instead of the partition being
// dropped until the next change of leadership.
func TestLoadRetriedAfterFailure(t *testing.T) {
	h := newHarness(t)
	wantAll(t, "commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 5})), 0)
	h.settle()
	h.store.mu.Lock()
	h.store.loadFailures = 4
	h.store.mu.Unlock()
	h.c.Elected(0, 2, 1, h.store)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	wantCode(t, "OffsetFetch while the loads fail", h.c.FetchOffsets(of).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.waitLoaded(0)
	if got, code := h.fetch("g", "t/0"); code != 0 || got["t/0"].offset != 5 {
		t.Fatalf("after the load: offset %+v (error %s), want 5", got, errName(code))
	}
	h.store.mu.Lock()
	left := h.store.loadFailures
	h.store.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d load failures left", left)
	}
}

// A shard whose loads keep failing keeps only the markers written since
// its current attempt started: each attempt reads the log up to its end
// at its start, so it replays the earlier ones itself (helper-63: the
// list grew by one entry per marker for as long as the loads failed).
func TestLateMarkersKeptForOneLoadAttempt(t *testing.T) {
	h := newHarness(t)
	steps := make(chan chan struct{})
	h.store.mu.Lock()
	h.store.loadFailures, h.store.loadSteps = 1000, steps
	h.store.mu.Unlock()
	lateMarkers := func() int {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return len(h.c.shards[0].lateMarkers)
	}
	h.c.Elected(0, 2, 1, h.store)
	first := <-steps
	h.c.CompleteTxn(0, 2, 7, true, 3)
	h.c.CompleteTxn(0, 2, 8, false, 4)
	if n := lateMarkers(); n != 2 {
		t.Fatalf("%d late markers while the first attempt runs, want 2", n)
	}
	close(first) // it fails
	second := <-steps
	if n := lateMarkers(); n != 0 {
		t.Fatalf("%d late markers once the second attempt started, want 0 (it reads both)", n)
	}
	h.c.CompleteTxn(0, 2, 9, true, 5)
	if n := lateMarkers(); n != 1 {
		t.Fatalf("%d late markers after a marker written during the second attempt, want 1", n)
	}
	close(second)
}

// A marker written while a load attempt runs and fails is applied by the
// next attempt, which reads it from the log: the transaction's offsets
// are committed once the shard is served.
func TestMarkerWrittenDuringFailedLoadIsApplied(t *testing.T) {
	h := newHarness(t)
	resp := h.c.StartTxnCommitOffsets(txnCommitReq(3, 7, 10), 1)(context.Background())
	wantCode(t, "TxnOffsetCommit", resp.Topics[0].Partitions[0].ErrorCode, 0)

	steps := make(chan chan struct{})
	h.store.mu.Lock()
	h.store.loadFailures, h.store.loadSteps = 1, steps
	h.store.mu.Unlock()
	h.c.Elected(0, 2, 1, h.store)
	first := <-steps
	h.c.CompleteTxn(0, 2, 7, true, h.store.appendMarker(7, true))
	close(first) // it fails
	close(<-steps)
	h.waitLoaded(0)
	if got, code := h.fetch("g", "t/0"); code != 0 || got["t/0"].offset != 10 {
		t.Fatalf("after the load: offset %+v (error %s), want 10 (committed by the marker)", got, errName(code))
	}
}

// Close waits for a shard's load, which ends when the shard is dropped.
func TestCloseWaitsForLoad(t *testing.T) {
	cfg := testConfig(&fakeClock{now: time.UnixMilli(1_700_000_000_000)})
	c := New(cfg)
	steps := make(chan chan struct{})
	st := &memStore{loadSteps: steps}
	c.Elected(0, 1, 1, st)
	<-steps // the load is under way, and stays so until dropped
	c.Close()
	loads := func() int {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.loadsReturned
	}
	if n := loads(); n != 1 {
		t.Fatalf("Close returned before the load: %d loads returned, want 1", n)
	}
	c.Elected(0, 2, 1, st) // after Close: nothing is led, nothing loads
	c.mu.Lock()
	n := len(c.shards)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("Elected after Close: %d shards led, want none", n)
	}
}

func TestNotCoordinator(t *testing.T) {
	h := newHarness(t)
	// Partition 0 of 2 is led here: "group" is on partition 1 of 2
	// (98629247 is odd), "hello" (even) on 0.
	h.c.Resigned(0, 1)
	st := &memStore{}
	h.c.Elected(0, 2, 2, st)
	h.waitLoaded(0)
	wantCode(t, "JoinGroup of another partition's group", h.join(joinReq("group", "", 3)).ErrorCode, kerr.NotCoordinator.Code)
	wantCode(t, "JoinGroup of this partition's group", h.join(joinReq("hello", "", 3)).ErrorCode, 0)
	wantCode(t, "DescribeGroups", h.c.Describe([]string{"group"})[0].ErrorCode, kerr.NotCoordinator.Code)
	wantCode(t, "DeleteGroups", h.c.Delete(context.Background(), []string{"group"})[0].ErrorCode, kerr.NotCoordinator.Code)
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "group"
	wantCode(t, "OffsetDelete", h.c.DeleteOffsets(context.Background(), del).ErrorCode, kerr.NotCoordinator.Code)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "group", "m"
	wantCode(t, "LeaveGroup", h.c.Leave(lv).ErrorCode, kerr.NotCoordinator.Code)
}

// TestFailover writes groups and offsets with one coordinator and loads
// them into a second one over the same records.
func TestFailover(t *testing.T) {
	h := newHarness(t)
	a, b, gen := staticGroup(t, h)
	wantAll(t, "commit", h.commit(commitReq("g", a, gen, 8,
		commitPartition{topic: "t", partition: 0, offset: 100, epoch: 7, metadata: kmsg.StringPtr("m")},
		commitPartition{topic: "t", partition: 1, offset: 200, epoch: 7})), 0)
	wantAll(t, "commit", h.commit(commitReq("g", b, gen, 8, commitPartition{topic: "t", partition: 1, offset: 201, epoch: 8})), 0)
	// A group that emptied, with an offset.
	id, egen := h.joinOne("emptied", []byte("x"))
	wantAll(t, "commit", h.commit(commitReq("emptied", id, egen, 8, commitPartition{topic: "u", offset: 5})), 0)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "emptied", id
	wantCode(t, "leave", h.c.Leave(lv).ErrorCode, 0)
	waitFor(t, "the emptied group to be stored", func() bool {
		d, ok := h.store.lastGroupRecord(t, "emptied")
		return ok && d.meta != nil && len(d.meta.Members) == 0
	})
	// A deleted group, and a deleted offset.
	wantAll(t, "commit", h.commit(commitReq("deleted", "", -1, 8, commitPartition{topic: "v", offset: 1})), 0)
	wantCode(t, "delete", h.c.Delete(context.Background(), []string{"deleted"})[0].ErrorCode, 0)
	wantAll(t, "commit", h.commit(commitReq("simple", "", -1, 8,
		commitPartition{topic: "w", partition: 0, offset: 1}, commitPartition{topic: "w", partition: 1, offset: 2})), 0)
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "simple"
	dt := kmsg.NewOffsetDeleteRequestTopic()
	dt.Topic = "w"
	dp := kmsg.NewOffsetDeleteRequestTopicPartition()
	dp.Partition = 1
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	wantCode(t, "OffsetDelete", h.c.DeleteOffsets(context.Background(), del).ErrorCode, 0)
	// An undecodable record is skipped.
	h.store.mu.Lock()
	h.store.recs = append(h.store.recs, records.KV{Key: []byte{0, 9, 1}, Value: []byte{1}}, records.KV{Key: []byte{0}})
	h.store.mu.Unlock()

	// The first coordinator resigns; a second one takes over.
	h.c.Resigned(0, 1)
	wantCode(t, "heartbeat after resigning", heartbeat(h, "g", a, gen), kerr.NotCoordinator.Code)
	h.clk.Advance(time.Minute)
	h2 := &harness{t: t, clk: h.clk, store: h.store, cfg: h.cfg, c: New(h.cfg)}
	defer h2.c.Close()
	h2.c.Elected(0, 2, 1, h.store)
	h2.waitLoaded(0)

	groups, code := h2.c.List(nil)
	if code != 0 {
		t.Fatalf("list: %d", code)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Group+":"+g.GroupState)
	}
	if want := []string{"emptied:Empty", "g:Stable", "simple:Empty"}; len(names) != len(want) || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Fatalf("groups after failover: %v, want %v", names, want)
	}
	if h2.generation("g") != gen || h2.generation("emptied") != egen+1 {
		t.Fatalf("generations %d %d", h2.generation("g"), h2.generation("emptied"))
	}
	got, _ := h2.fetch("g")
	if got["t/0"] != (fetched{100, 7, "m"}) || got["t/1"] != (fetched{201, 8, ""}) || len(got) != 2 {
		t.Fatalf("offsets after failover: %v", got)
	}
	if got, _ := h2.fetch("emptied"); got["u/0"].offset != 5 {
		t.Fatalf("emptied group's offsets: %v", got)
	}
	if got, _ := h2.fetch("simple"); len(got) != 1 || got["w/0"].offset != 1 {
		t.Fatalf("simple group's offsets: %v", got)
	}
	if got, _ := h2.fetch("deleted"); len(got) != 0 {
		t.Fatalf("deleted group's offsets: %v", got)
	}
	// The members carry on: heartbeats, their assignment, fencing.
	wantCode(t, "heartbeat after failover", heartbeat(h2, "g", a, gen, "a"), 0)
	wantCode(t, "heartbeat after failover", heartbeat(h2, "g", b, gen, "b"), 0)
	wantCode(t, "fenced heartbeat", heartbeat(h2, "g", "other", gen, "b"), kerr.FencedInstanceID.Code)
	s := recv(t, h2.syncAsync(syncReq("g", b, gen, nil)))
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "B" {
		t.Fatalf("sync after failover: %d %q", s.ErrorCode, s.MemberAssignment)
	}
	d := h2.c.Describe([]string{"g"})[0]
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 || d.Members[0].MemberID != a || d.Members[0].InstanceID == nil ||
		*d.Members[0].InstanceID != "a" || d.Members[0].ClientID != "a" {
		t.Fatalf("describe after failover: %+v", d)
	}
	// A static member restarts: no rebalance, as before the failover.
	r := h2.join(staticJoinReq("g", "", "b"))
	if r.ErrorCode != 0 || r.Generation != gen || h2.state("g") != "Stable" {
		t.Fatalf("static rejoin after failover: %+v (%s)", r, h2.state("g"))
	}
	// Members that stop heartbeating expire.
	h2.tick(11 * time.Second)
	if s := h2.state("g"); s != "PreparingRebalance" && s != "Empty" {
		t.Fatalf("state after the sessions expired: %s", s)
	}
}

func TestResigned(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	// A SyncGroup waits for its leader.
	js := h.joinAsync(joinReq("g", "", 3), "a")
	h.waitJoining("g", 1)
	jt := h.joinAsync(joinReq("g", "", 3), "b")
	h.waitJoining("g", 2)
	h.tick(3 * time.Second)
	ra, rb := recv(t, js), recv(t, jt)
	follower := ra
	if ra.LeaderID == ra.MemberID {
		follower = rb
	}
	s := h.syncAsync(syncReq("g", follower.MemberID, follower.Generation, nil))
	h.waitSyncing("g", follower.MemberID)
	// A JoinGroup waits for the initial delay.
	j := h.joinAsync(joinReq("waiting", "", 3), "c")
	h.waitJoining("waiting", 1)

	// A resignation of an older epoch changes nothing.
	h.c.Resigned(0, 0)
	pending(t, j, "JoinGroup")
	h.c.Resigned(0, 1)
	wantCode(t, "waiting JoinGroup", recv(t, j).ErrorCode, kerr.NotCoordinator.Code)
	wantCode(t, "waiting SyncGroup", recv(t, s).ErrorCode, kerr.NotCoordinator.Code)
	wantCode(t, "JoinGroup", h.join(joinReq("g", "", 3)).ErrorCode, kerr.NotCoordinator.Code)
	wantCode(t, "heartbeat", heartbeat(h, "g", follower.MemberID, follower.Generation), kerr.NotCoordinator.Code)
	groups, code := h.c.List(nil)
	if code != 0 || len(groups) != 0 {
		t.Fatalf("list after resigning: %v %d", groups, code)
	}

	// An election of an older epoch than the current one is ignored.
	st := &memStore{}
	h.c.Elected(0, 5, 1, st)
	h.waitLoaded(0)
	h.c.Elected(0, 4, 1, &memStore{loadGate: make(chan struct{})})
	j = h.joinAsync(joinReq("g", "", 3), "c")
	h.waitJoining("g", 1)
	h.tick(3 * time.Second)
	wantCode(t, "JoinGroup", recv(t, j).ErrorCode, 0)
}

func TestResignedWhileLoading(t *testing.T) {
	h := newHarness(t)
	h.c.Resigned(0, 1)
	st := &memStore{loadGate: make(chan struct{})}
	h.c.Elected(0, 2, 1, st)
	wantCode(t, "JoinGroup while loading", h.join(joinReq("g", "", 3)).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.c.Resigned(0, 2)
	close(st.loadGate)
	wantCode(t, "JoinGroup after resigning", h.join(joinReq("g", "", 3)).ErrorCode, kerr.NotCoordinator.Code)
}

// A load that keeps failing leaves the partition loading (retriable
// COORDINATOR_LOAD_IN_PROGRESS) and is tried again until this broker
// resigns the partition.
func TestLoadFailure(t *testing.T) {
	h := newHarness(t)
	h.c.Resigned(0, 1)
	st := &failingLoad{}
	h.c.Elected(0, 2, 1, st)
	waitFor(t, "a second load", func() bool { return st.loads.Load() >= 2 })
	wantCode(t, "JoinGroup while the loads fail", h.join(joinReq("g", "", 3)).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	h.c.Resigned(0, 2)
	wantCode(t, "JoinGroup after resigning", h.join(joinReq("g", "", 3)).ErrorCode, kerr.NotCoordinator.Code)
}

type failingLoad struct {
	memStore
	loads atomic.Int32
}

func (s *failingLoad) Load(context.Context, func(Record) error) (int64, error) {
	s.loads.Add(1)
	return 0, errStoreDown
}

// Group metadata records can land out of order (an emptied group's is
// written in the background): on load the highest generation wins, and an
// empty group's offsets expire counting from when it emptied, not from
// the load.
func TestLoadOrderAndEmptySince(t *testing.T) {
	clk := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	cfg := testConfig(clk)
	cfg.OffsetsRetention = time.Hour
	value := func(gen int32, members int, since time.Time) []byte {
		g := newGroup("g", since)
		g.protocolType, g.generation = "consumer", gen
		for i := range members {
			id := fmt.Sprintf("m%d", i)
			g.members[id] = &member{id: id, sessionTimeout: 10 * time.Second, rebalanceTimeout: 10 * time.Second}
		}
		if members > 0 {
			g.protocol, g.leader = "range", "m0"
			for _, m := range g.members {
				m.protocols = []protocol{{"range", consumerMeta("t")}}
			}
		}
		return groupValue(g)
	}
	emptied := clk.now.Add(-50 * time.Minute)
	store := &memStore{recs: []records.KV{
		{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 5, LeaderEpoch: -1, CommitTimestamp: emptied.Add(-time.Hour).UnixMilli()})},
		{Key: groupKey("g"), Value: value(3, 0, emptied)},                   // generation 3: emptied
		{Key: groupKey("g"), Value: value(2, 2, emptied.Add(-time.Minute))}, // a late write of generation 2
	}}
	c := New(cfg)
	defer c.Close()
	c.Elected(0, 1, 1, store)
	h := &harness{t: t, clk: clk, store: store, c: c, cfg: cfg}
	h.waitLoaded(0)
	h.inspect("g", func(g *group) {
		if g == nil || g.generation != 3 || len(g.members) != 0 || g.state != stateEmpty {
			t.Fatalf("loaded group: %+v", g)
		}
	})
	// Emptied 50 minutes ago with a one-hour retention: the offset lives
	// 10 more minutes, not a full hour from the load.
	h.tick(9 * time.Minute)
	if got, _ := h.fetch("g"); len(got) != 1 {
		t.Fatalf("offsets expired early: %v", got)
	}
	h.tick(2 * time.Minute)
	waitFor(t, "the offset to expire", func() bool { got, _ := h.fetch("g"); return len(got) == 0 })
}
