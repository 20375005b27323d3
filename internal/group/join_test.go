package group

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinMemberIDRequired(t *testing.T) {
	h := newHarness(t)
	for _, v := range []int16{4, 5, 6, 7, 9} {
		g := fmt.Sprintf("g-v%d", v)
		r := h.join(joinReq(g, "", v))
		wantCode(t, "first JoinGroup", r.ErrorCode, kerr.MemberIDRequired.Code)
		if r.MemberID == "" || r.Generation != -1 {
			t.Fatalf("v%d: MEMBER_ID_REQUIRED with member id %q, generation %d", v, r.MemberID, r.Generation)
		}
		if s := h.state(g); s != "Empty" {
			t.Fatalf("v%d: handing out a member id moved the group to %s", v, s)
		}
		id := r.MemberID
		r = h.join(joinReq(g, id, v))
		wantCode(t, "JoinGroup with the handed-out id", r.ErrorCode, 0)
		if r.MemberID != id || r.LeaderID != id || r.Generation != 1 || len(r.Members) != 1 || r.Members[0].MemberID != id {
			t.Fatalf("v%d: join: %+v", v, r)
		}
		if r.Protocol == nil || *r.Protocol != "range" {
			t.Fatalf("v%d: protocol %v", v, r.Protocol)
		}
	}
	// A member id that was never handed out is refused.
	r := h.join(joinReq("g-v5", "made-up", 5))
	wantCode(t, "JoinGroup with an unknown member id", r.ErrorCode, kerr.UnknownMemberID.Code)
}

func TestJoinDirectBeforeV4(t *testing.T) {
	h := newHarness(t)
	for v := range int16(4) {
		g := fmt.Sprintf("g-v%d", v)
		r := h.join(joinReq(g, "", v))
		wantCode(t, fmt.Sprintf("v%d JoinGroup", v), r.ErrorCode, 0)
		if r.MemberID == "" || r.LeaderID != r.MemberID || r.Generation != 1 {
			t.Fatalf("v%d: join: %+v", v, r)
		}
		if s := h.state(g); s != "CompletingRebalance" {
			t.Fatalf("v%d: state %s", v, s)
		}
	}
}

// A handed-out member id that is not used within the session timeout is
// forgotten, and no longer holds up the group's rebalance.
func TestPendingMemberExpires(t *testing.T) {
	h := newHarness(t)
	a, gen := h.joinOne("g", []byte("a"))
	r := h.join(joinReq("g", "", 5))
	wantCode(t, "join", r.ErrorCode, kerr.MemberIDRequired.Code)
	pendingID := r.MemberID

	// The leader rejoins: the rebalance waits for the pending member.
	ja := h.joinAsync(joinReq("g", a, 5), "a")
	h.waitJoining("g", 1)
	h.tick(5 * time.Second)
	pending(t, ja, "leader's JoinGroup")
	heartbeat(h, "g", a, gen) // keep a alive
	h.tick(5*time.Second + time.Millisecond)
	ra := recv(t, ja)
	wantCode(t, "leader's JoinGroup", ra.ErrorCode, 0)
	if ra.Generation != gen+1 || len(ra.Members) != 1 {
		t.Fatalf("rejoin: %+v", ra)
	}
	r = h.join(joinReq("g", pendingID, 5))
	wantCode(t, "JoinGroup with an expired member id", r.ErrorCode, kerr.UnknownMemberID.Code)
}

// threeMembers joins three members (v3: no MEMBER_ID_REQUIRED) into an
// empty group held by the initial rebalance delay, and returns their
// responses.
func threeMembers(t *testing.T, h *harness, protocols [][]kmsg.JoinGroupRequestProtocol) []*kmsg.JoinGroupResponse {
	t.Helper()
	var chans []<-chan *kmsg.JoinGroupResponse
	for i, ps := range protocols {
		chans = append(chans, h.joinAsync(joinReq("g", "", 3, ps...), fmt.Sprintf("client-%d", i)))
		h.waitJoining("g", i+1)
		h.clk.Advance(time.Second)
		h.c.Tick()
	}
	for _, ch := range chans {
		pending(t, ch, "JoinGroup during the initial delay")
	}
	h.tick(h.cfg.InitialRebalanceDelay)
	var out []*kmsg.JoinGroupResponse
	for _, ch := range chans {
		r := recv(t, ch)
		wantCode(t, "JoinGroup", r.ErrorCode, 0)
		out = append(out, r)
	}
	return out
}

func TestRebalanceThreeMembers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	protocols := [][]kmsg.JoinGroupRequestProtocol{
		{proto("range", "t1"), proto("roundrobin", "t1"), proto("only-mine", "t1")},
		{proto("roundrobin", "t1", "t2"), proto("range", "t1", "t2")},
		{proto("roundrobin", "t3"), proto("range", "t3"), proto("sticky", "t3")},
	}
	rs := threeMembers(t, h, protocols)
	leaders := 0
	ids := map[string]int{}
	for i, r := range rs {
		ids[r.MemberID] = i
		if r.Generation != 1 || r.LeaderID != rs[0].LeaderID || r.Protocol == nil || *r.Protocol != "roundrobin" {
			t.Fatalf("member %d: generation %d leader %q protocol %v", i, r.Generation, r.LeaderID, r.Protocol)
		}
		if r.ProtocolType == nil || *r.ProtocolType != "consumer" {
			t.Fatalf("member %d: protocol type %v", i, r.ProtocolType)
		}
		if r.LeaderID == r.MemberID {
			leaders++
			if len(r.Members) != 3 {
				t.Fatalf("the leader got %d members", len(r.Members))
			}
		} else if len(r.Members) != 0 {
			t.Fatalf("follower %d got the members", i)
		}
	}
	if leaders != 1 || len(ids) != 3 {
		t.Fatalf("%d leaders among %d distinct members", leaders, len(ids))
	}
	// Check every member's metadata now that all ids are known.
	for _, r := range rs {
		if r.LeaderID != r.MemberID {
			continue
		}
		for _, m := range r.Members {
			j := ids[m.MemberID]
			if !bytes.Equal(m.ProtocolMetadata, protocols[j][protocolIndex(protocols[j], "roundrobin")].Metadata) {
				t.Fatalf("leader got the wrong metadata for member %d", j)
			}
		}
	}
	if s := h.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s", s)
	}

	// A member with no protocol in common, or another protocol type.
	r := h.join(joinReq("g", "", 3, proto("sticky", "t1")))
	wantCode(t, "JoinGroup without a common protocol", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	other := joinReq("g", "", 3, proto("roundrobin", "t1"))
	other.ProtocolType = "connect"
	r = h.join(other)
	wantCode(t, "JoinGroup of another protocol type", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	// Nor is one handed a member id (it would hold up rebalances).
	r = h.join(joinReq("g", "", 5, proto("sticky", "t1")))
	wantCode(t, "v5 JoinGroup without a common protocol", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	h.inspect("g", func(g *group) {
		if len(g.pending) != 0 || len(g.members) != 3 {
			t.Errorf("after refused joins: %d pending, %d members", len(g.pending), len(g.members))
		}
	})
}

func protocolIndex(ps []kmsg.JoinGroupRequestProtocol, name string) int {
	for i, p := range ps {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// stableGroup forms group "g" of n dynamic members and completes its sync;
// it returns the join responses (the first is the leader's) and the
// assignment each member got.
func stableGroup(t *testing.T, h *harness, n int) []*kmsg.JoinGroupResponse {
	t.Helper()
	var chans []<-chan *kmsg.JoinGroupResponse
	var leader *kmsg.JoinGroupResponse
	var rs []*kmsg.JoinGroupResponse
	if n == 0 {
		return nil
	}
	// The first member forms generation 1 alone; the others are handed
	// member ids (which holds the rebalance) and join with it rejoining.
	id, _ := h.joinOne("g", []byte("solo"))
	var ids []string
	for i := 1; i < n; i++ {
		r := h.join(joinReq("g", "", 5))
		wantCode(t, "join", r.ErrorCode, kerr.MemberIDRequired.Code)
		ids = append(ids, r.MemberID)
	}
	chans = append(chans, h.joinAsync(joinReq("g", id, 5), "client-0"))
	for i, mid := range ids {
		h.waitJoining("g", i+1)
		chans = append(chans, h.joinAsync(joinReq("g", mid, 5), fmt.Sprintf("client-%d", i+1)))
	}
	for _, ch := range chans {
		r := recv(t, ch)
		wantCode(t, "join", r.ErrorCode, 0)
		if r.LeaderID == r.MemberID {
			leader = r
		}
		rs = append(rs, r)
	}
	if leader == nil || len(leader.Members) != n {
		t.Fatalf("no leader with %d members", n)
	}
	assignments := map[string][]byte{}
	for _, r := range rs {
		assignments[r.MemberID] = []byte("assigned-" + r.MemberID)
	}
	var syncs []<-chan *kmsg.SyncGroupResponse
	for _, r := range rs {
		var a map[string][]byte
		if r == leader {
			continue
		}
		syncs = append(syncs, h.syncAsync(syncReq("g", r.MemberID, r.Generation, a)))
		h.waitSyncing("g", r.MemberID)
	}
	syncs = append(syncs, h.syncAsync(syncReq("g", leader.MemberID, leader.Generation, assignments)))
	for _, ch := range syncs {
		s := recv(t, ch)
		wantCode(t, "sync", s.ErrorCode, 0)
	}
	// The leader first.
	out := []*kmsg.JoinGroupResponse{leader}
	for _, r := range rs {
		if r != leader {
			out = append(out, r)
		}
	}
	return out
}

func TestSyncGroup(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	rs := threeMembers(t, h, [][]kmsg.JoinGroupRequestProtocol{
		{proto("range", "t")}, {proto("range", "t")}, {proto("range", "t")},
	})
	var leader *kmsg.JoinGroupResponse
	var followers []*kmsg.JoinGroupResponse
	for _, r := range rs {
		if r.MemberID == r.LeaderID {
			leader = r
		} else {
			followers = append(followers, r)
		}
	}
	// One follower syncs before the leader and waits for it.
	f0 := h.syncAsync(syncReq("g", followers[0].MemberID, 1, nil))
	h.waitSyncing("g", followers[0].MemberID)
	pending(t, f0, "follower's SyncGroup")

	// A SyncGroup of the wrong generation, of an unknown member.
	s := h.c.Sync(context.Background(), syncReq("g", followers[1].MemberID, 2, nil))
	wantCode(t, "SyncGroup of another generation", s.ErrorCode, kerr.IllegalGeneration.Code)
	s = h.c.Sync(context.Background(), syncReq("g", "nobody", 1, nil))
	wantCode(t, "SyncGroup of an unknown member", s.ErrorCode, kerr.UnknownMemberID.Code)
	bad := syncReq("g", followers[1].MemberID, 1, nil)
	bad.Protocol = kmsg.StringPtr("roundrobin")
	s = h.c.Sync(context.Background(), bad)
	wantCode(t, "SyncGroup of another protocol", s.ErrorCode, kerr.InconsistentGroupProtocol.Code)

	assignments := map[string][]byte{}
	for _, r := range rs {
		assignments[r.MemberID] = []byte("for-" + r.MemberID)
	}
	entered, release := h.store.hold()
	ls := h.syncAsync(syncReq("g", leader.MemberID, 1, assignments))
	recv(t, entered)
	// The assignment is appended, but nobody is answered before it is
	// committed.
	pending(t, f0, "follower's SyncGroup")
	pending(t, ls, "leader's SyncGroup")
	if _, ok := h.store.lastGroupRecord(t, "g"); !ok {
		t.Fatal("group metadata not appended")
	}
	release()
	for _, c := range []struct {
		ch <-chan *kmsg.SyncGroupResponse
		id string
	}{{ls, leader.MemberID}, {f0, followers[0].MemberID}} {
		s := recv(t, c.ch)
		wantCode(t, "SyncGroup", s.ErrorCode, 0)
		if string(s.MemberAssignment) != "for-"+c.id {
			t.Fatalf("member %s was assigned %q", c.id, s.MemberAssignment)
		}
		if s.Protocol == nil || *s.Protocol != "range" || s.ProtocolType == nil || *s.ProtocolType != "consumer" {
			t.Fatalf("SyncGroup protocol %v type %v", s.Protocol, s.ProtocolType)
		}
	}
	d, ok := h.store.lastGroupRecord(t, "g")
	if !ok || d.meta == nil {
		t.Fatal("no group metadata stored")
	}
	if d.meta.Generation != 1 || d.meta.Protocol == nil || *d.meta.Protocol != "range" || d.meta.Leader == nil || *d.meta.Leader != leader.MemberID ||
		d.meta.ProtocolType != "consumer" || len(d.meta.Members) != 3 {
		t.Fatalf("stored metadata: %+v", d.meta)
	}
	for _, m := range d.meta.Members {
		if string(m.Assignment) != "for-"+m.MemberID || m.SessionTimeoutMillis != 10_000 || m.RebalanceTimeoutMillis != 60_000 {
			t.Fatalf("stored member: %+v", m)
		}
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	// The follower syncing late gets its assignment at once.
	s = recv(t, h.syncAsync(syncReq("g", followers[1].MemberID, 1, nil)))
	wantCode(t, "late SyncGroup", s.ErrorCode, 0)
	if string(s.MemberAssignment) != "for-"+followers[1].MemberID {
		t.Fatalf("late follower assigned %q", s.MemberAssignment)
	}
	dg := h.c.Describe([]string{"g"})
	if len(dg) != 1 || dg[0].State != "Stable" || len(dg[0].Members) != 3 {
		t.Fatalf("describe: %+v", dg)
	}
	for _, m := range dg[0].Members {
		if string(m.MemberAssignment) != "for-"+m.MemberID {
			t.Fatalf("describe: member %s assignment %q", m.MemberID, m.MemberAssignment)
		}
	}
}

func TestSyncStoreFailureRebalances(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int16
	}{
		{"failure", errStoreDown, kerr.CoordinatorNotAvailable.Code},
		{"not leader", fmt.Errorf("wrapped: %w", ErrNotLeader), kerr.NotCoordinator.Code},
		// Kafka answers a timed-out group write COORDINATOR_NOT_AVAILABLE:
		// REQUEST_TIMED_OUT is fatal to a Java consumer's SyncGroup.
		{"timeout", context.DeadlineExceeded, kerr.CoordinatorNotAvailable.Code},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			rs := stableGroup(t, h, 2)
			leader, follower := rs[0], rs[1]
			// The leader rejoins: a new generation.
			jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
			h.waitJoining("g", 1)
			if code := heartbeat(h, "g", follower.MemberID, 2); code != kerr.RebalanceInProgress.Code {
				t.Fatalf("follower heartbeat: %s", errName(code))
			}
			jf := h.joinAsync(joinReq("g", follower.MemberID, 5), "f")
			rl, rf := recv(t, jl), recv(t, jf)
			if rl.Generation != 3 || rf.Generation != 3 {
				t.Fatalf("generations %d %d", rl.Generation, rf.Generation)
			}
			fs := h.syncAsync(syncReq("g", follower.MemberID, 3, nil))
			h.waitSyncing("g", follower.MemberID)
			h.store.fail(c.err)
			before := len(h.store.snapshot())
			s := recv(t, h.syncAsync(syncReq("g", leader.MemberID, 3, map[string][]byte{leader.MemberID: []byte("l"), follower.MemberID: []byte("f")})))
			wantCode(t, "leader's SyncGroup", s.ErrorCode, c.want)
			wantCode(t, "follower's SyncGroup", recv(t, fs).ErrorCode, c.want)
			if len(h.store.snapshot()) != before {
				t.Fatal("a failed write stored something")
			}
			if st := h.state("g"); st != "PreparingRebalance" {
				t.Fatalf("state after a failed sync: %s", st)
			}
			wantCode(t, "heartbeat", heartbeat(h, "g", follower.MemberID, 3), kerr.RebalanceInProgress.Code)
			// Both rejoin: generation 4, stored this time.
			jl = h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
			jf = h.joinAsync(joinReq("g", follower.MemberID, 5), "f")
			rl, rf = recv(t, jl), recv(t, jf)
			if rl.ErrorCode != 0 || rf.ErrorCode != 0 || rl.Generation != 4 || rf.Generation != 4 {
				t.Fatalf("rejoin: %+v %+v", rl, rf)
			}
			s = recv(t, h.syncAsync(syncReq("g", rl.LeaderID, 4, map[string][]byte{leader.MemberID: []byte("l"), follower.MemberID: []byte("f")})))
			wantCode(t, "SyncGroup after rejoining", s.ErrorCode, 0)
			if d, ok := h.store.lastGroupRecord(t, "g"); !ok || d.meta == nil || d.meta.Generation != 4 {
				t.Fatalf("stored metadata after rejoining: %+v", d.meta)
			}
		})
	}
}

// The leader of a new generation syncs while the previous generation's
// assignment is still being written: its SyncGroup must still complete
// the new generation.
func TestSyncNewGenerationWhileOldWriteInFlight(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
	h.waitJoining("g", 1)
	jf := h.joinAsync(joinReq("g", follower.MemberID, 5), "f")
	rl, rf := recv(t, jl), recv(t, jf)
	gen := rl.Generation
	if rf.Generation != gen {
		t.Fatalf("generations %d %d", rl.Generation, rf.Generation)
	}
	entered, release := h.store.hold()
	defer release()
	old := h.syncAsync(syncReq("g", leader.MemberID, gen, map[string][]byte{leader.MemberID: []byte("old")}))
	recv(t, entered)
	// The follower leaves meanwhile: the leader rejoins alone.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "g", follower.MemberID
	wantCode(t, "LeaveGroup", h.c.Leave(lv).ErrorCode, 0)
	// (The leader's SyncGroup returns once its write does.)
	r := h.join(joinReq("g", leader.MemberID, 5))
	wantCode(t, "rejoin", r.ErrorCode, 0)
	if r.Generation != gen+1 {
		t.Fatalf("generation %d, want %d", r.Generation, gen+1)
	}
	s := h.syncAsync(syncReq("g", leader.MemberID, gen+1, map[string][]byte{leader.MemberID: []byte("new")}))
	recv(t, entered)
	release()
	wantCode(t, "old SyncGroup", recv(t, old).ErrorCode, kerr.RebalanceInProgress.Code)
	got := recv(t, s)
	wantCode(t, "new generation's SyncGroup", got.ErrorCode, 0)
	if string(got.MemberAssignment) != "new" {
		t.Fatalf("assignment %q", got.MemberAssignment)
	}
	if st := h.state("g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
}

func TestHeartbeat(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	gen := leader.Generation
	wantCode(t, "heartbeat", heartbeat(h, "g", follower.MemberID, gen), 0)
	wantCode(t, "heartbeat of another generation", heartbeat(h, "g", follower.MemberID, gen-1), kerr.IllegalGeneration.Code)
	wantCode(t, "heartbeat of an unknown member", heartbeat(h, "g", "nobody", gen), kerr.UnknownMemberID.Code)
	wantCode(t, "heartbeat to an unknown group", heartbeat(h, "nogroup", "nobody", 1), kerr.UnknownMemberID.Code)
	wantCode(t, "heartbeat without a group id", heartbeat(h, "", "x", 1), kerr.InvalidGroupID.Code)

	// A new member: PreparingRebalance.
	r := h.join(joinReq("g", "", 5))
	jn := h.joinAsync(joinReq("g", r.MemberID, 5), "new")
	h.waitJoining("g", 1)
	wantCode(t, "heartbeat while preparing", heartbeat(h, "g", follower.MemberID, gen), kerr.RebalanceInProgress.Code)
	wantCode(t, "heartbeat while preparing", heartbeat(h, "g", leader.MemberID, gen), kerr.RebalanceInProgress.Code)
	jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
	jf := h.joinAsync(joinReq("g", follower.MemberID, 5), "f")
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{jn, jl, jf} {
		if r := recv(t, ch); r.ErrorCode != 0 || r.Generation != gen+1 {
			t.Fatalf("rejoin: %+v", r)
		}
	}
	// CompletingRebalance: heartbeats are fine (of the new generation).
	wantCode(t, "heartbeat while completing", heartbeat(h, "g", follower.MemberID, gen+1), 0)
	wantCode(t, "old-generation heartbeat while completing", heartbeat(h, "g", follower.MemberID, gen), kerr.IllegalGeneration.Code)
}

func TestSessionExpiryRebalances(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 3)
	gen := rs[0].Generation
	// Two members heartbeat, the third does not.
	for range 3 {
		h.clk.Advance(4 * time.Second)
		wantCode(t, "heartbeat", heartbeat(h, "g", rs[0].MemberID, gen), 0)
		wantCode(t, "heartbeat", heartbeat(h, "g", rs[1].MemberID, gen), 0)
		h.c.Tick()
	}
	h.inspect("g", func(g *group) {
		if g.members[rs[2].MemberID] != nil {
			t.Fatal("an expired member is still in the group")
		}
	})
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	wantCode(t, "expired member's heartbeat", heartbeat(h, "g", rs[2].MemberID, gen), kerr.UnknownMemberID.Code)
	wantCode(t, "heartbeat", heartbeat(h, "g", rs[1].MemberID, gen), kerr.RebalanceInProgress.Code)
	j0 := h.joinAsync(joinReq("g", rs[0].MemberID, 5), "0")
	h.waitJoining("g", 1)
	pending(t, j0, "JoinGroup")
	j1 := h.joinAsync(joinReq("g", rs[1].MemberID, 5), "1")
	r0, r1 := recv(t, j0), recv(t, j1)
	if r0.Generation != gen+1 || r1.Generation != gen+1 || r0.LeaderID != rs[0].MemberID || len(r0.Members) != 2 {
		t.Fatalf("rejoin: %+v / %+v", r0, r1)
	}
}

// A member that keeps heartbeating but does not rejoin is removed when the
// rebalance timeout passes.
func TestRebalanceTimeoutRemovesMembers(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	gen := leader.Generation
	jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
	h.waitJoining("g", 1)
	for elapsed := time.Duration(0); elapsed < 55*time.Second; elapsed += 5 * time.Second {
		h.clk.Advance(5 * time.Second)
		wantCode(t, "heartbeat", heartbeat(h, "g", follower.MemberID, gen), kerr.RebalanceInProgress.Code)
		h.c.Tick()
		pending(t, jl, "JoinGroup")
	}
	h.tick(5 * time.Second) // 60s: the rebalance timeout
	r := recv(t, jl)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 || r.Members[0].MemberID != leader.MemberID {
		t.Fatalf("join after the rebalance timeout: %+v", r)
	}
	wantCode(t, "removed member's heartbeat", heartbeat(h, "g", follower.MemberID, gen), kerr.UnknownMemberID.Code)
	r = h.join(joinReq("g", follower.MemberID, 5))
	wantCode(t, "removed member's JoinGroup", r.ErrorCode, kerr.UnknownMemberID.Code)
}

// A member that stops heartbeating during a rebalance is removed after its
// session timeout, not held until the rebalance timeout.
func TestSessionExpiryDuringRebalance(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
	h.waitJoining("g", 1)
	h.tick(10*time.Second + time.Millisecond)
	r := recv(t, jl)
	if r.ErrorCode != 0 || len(r.Members) != 1 {
		t.Fatalf("join: %+v", r)
	}
	wantCode(t, "expired member's heartbeat", heartbeat(h, "g", follower.MemberID, r.Generation), kerr.UnknownMemberID.Code)
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	gen := leader.Generation
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version = 0
	lv.Group, lv.MemberID = "g", "nobody"
	wantCode(t, "LeaveGroup of an unknown member", h.c.Leave(lv).ErrorCode, kerr.UnknownMemberID.Code)
	lv.MemberID = follower.MemberID
	wantCode(t, "LeaveGroup v0", h.c.Leave(lv).ErrorCode, 0)
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	r := h.join(joinReq("g", leader.MemberID, 5))
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
	lv.MemberID = leader.MemberID
	wantCode(t, "last member's LeaveGroup", h.c.Leave(lv).ErrorCode, 0)
	if s := h.state("g"); s != "Empty" {
		t.Fatalf("state %s", s)
	}
	// The empty group is stored.
	waitFor(t, "the empty group to be stored", func() bool {
		d, ok := h.store.lastGroupRecord(t, "g")
		return ok && d.meta != nil && len(d.meta.Members) == 0 && d.meta.Generation == gen+2
	})
}

func TestLeaveGroupBatch(t *testing.T) {
	h := newHarness(t)
	ra := h.join(staticJoinReq("g", "", "a"))
	wantCode(t, "static join", ra.ErrorCode, 0)
	r := h.join(joinReq("g", "", 5))
	wantCode(t, "join", r.ErrorCode, kerr.MemberIDRequired.Code)
	jb := h.joinAsync(staticJoinReq("g", "", "b"), "b")
	h.waitJoining("g", 1)
	ja := h.joinAsync(staticJoinReq("g", ra.MemberID, "a"), "a")
	h.waitJoining("g", 2)
	jd := h.joinAsync(joinReq("g", r.MemberID, 5), "d")
	ra, rb, rd := recv(t, ja), recv(t, jb), recv(t, jd)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || rd.ErrorCode != 0 {
		t.Fatalf("joins: %d %d %d", ra.ErrorCode, rb.ErrorCode, rd.ErrorCode)
	}
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version = 3
	lv.Group = "g"
	member := func(id string, instance *string) kmsg.LeaveGroupRequestMember {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.InstanceID = id, instance
		return m
	}
	lv.Members = []kmsg.LeaveGroupRequestMember{
		member("", kmsg.StringPtr("a")),
		member(rd.MemberID, nil),
		member("", kmsg.StringPtr("unknown")),
		member("not-b", kmsg.StringPtr("b")),
		member("nobody", nil),
	}
	resp := h.c.Leave(lv)
	wantCode(t, "LeaveGroup v3", resp.ErrorCode, 0)
	want := []int16{0, 0, kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code, kerr.UnknownMemberID.Code}
	if len(resp.Members) != len(want) {
		t.Fatalf("%d member results", len(resp.Members))
	}
	for i, m := range resp.Members {
		wantCode(t, fmt.Sprintf("leaving member %d", i), m.ErrorCode, want[i])
		if m.MemberID != lv.Members[i].MemberID {
			t.Fatalf("member %d: id %q", i, m.MemberID)
		}
	}
	h.inspect("g", func(g *group) {
		if len(g.members) != 1 || g.members[rb.MemberID] == nil || g.static["a"] != "" {
			t.Fatalf("members left: %v, static %v", len(g.members), g.static)
		}
	})
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
}

// staticGroup forms a stable group of static members "a" (the leader) and
// "b"; it returns their member ids and the generation.
func staticGroup(t *testing.T, h *harness) (a, b string, gen int32) {
	t.Helper()
	ra := h.join(staticJoinReq("g", "", "a"))
	wantCode(t, "static join", ra.ErrorCode, 0)
	jb := h.joinAsync(staticJoinReq("g", "", "b"), "b")
	h.waitJoining("g", 1)
	ja := h.joinAsync(staticJoinReq("g", ra.MemberID, "a"), "a")
	ra, rb := recv(t, ja), recv(t, jb)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.LeaderID != ra.MemberID || rb.Generation != ra.Generation {
		t.Fatalf("static joins: %+v %+v", ra, rb)
	}
	bs := h.syncAsync(syncReq("g", rb.MemberID, rb.Generation, nil))
	h.waitSyncing("g", rb.MemberID)
	s := recv(t, h.syncAsync(syncReq("g", ra.MemberID, ra.Generation, map[string][]byte{ra.MemberID: []byte("A"), rb.MemberID: []byte("B")})))
	wantCode(t, "leader sync", s.ErrorCode, 0)
	wantCode(t, "follower sync", recv(t, bs).ErrorCode, 0)
	return ra.MemberID, rb.MemberID, ra.Generation
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	h := newHarness(t)
	a, b, gen := staticGroup(t, h)
	// b restarts: it rejoins with no member id and the same protocols.
	r := h.join(staticJoinReq("g", "", "b"))
	wantCode(t, "static rejoin", r.ErrorCode, 0)
	if r.MemberID == b || r.MemberID == "" || r.Generation != gen || r.LeaderID != a || r.Protocol == nil || *r.Protocol != "range" || len(r.Members) != 0 {
		t.Fatalf("static rejoin: %+v", r)
	}
	if s := h.state("g"); s != "Stable" || h.generation("g") != gen {
		t.Fatalf("state %s generation %d", s, h.generation("g"))
	}
	// Its old member id is fenced; the leader is undisturbed.
	wantCode(t, "old id's heartbeat", heartbeat(h, "g", b, gen, "b"), kerr.FencedInstanceID.Code)
	wantCode(t, "leader's heartbeat", heartbeat(h, "g", a, gen, "a"), 0)
	wantCode(t, "new id's heartbeat", heartbeat(h, "g", r.MemberID, gen, "b"), 0)
	old := syncReq("g", b, gen, nil)
	old.InstanceID = kmsg.StringPtr("b")
	wantCode(t, "old id's SyncGroup", recv(t, h.syncAsync(old)).ErrorCode, kerr.FencedInstanceID.Code)
	// The new id gets the old assignment.
	sr := syncReq("g", r.MemberID, gen, nil)
	sr.InstanceID = kmsg.StringPtr("b")
	s := recv(t, h.syncAsync(sr))
	wantCode(t, "new id's SyncGroup", s.ErrorCode, 0)
	if string(s.MemberAssignment) != "B" {
		t.Fatalf("assignment %q", s.MemberAssignment)
	}
	// The replacement is stored.
	d, ok := h.store.lastGroupRecord(t, "g")
	if !ok || d.meta == nil || d.meta.Generation != gen {
		t.Fatal("replacement not stored")
	}
	found := false
	for _, m := range d.meta.Members {
		if m.InstanceID != nil && *m.InstanceID == "b" {
			found = m.MemberID == r.MemberID && string(m.Assignment) == "B"
		}
	}
	if !found {
		t.Fatalf("stored members: %+v", d.meta.Members)
	}
}

func TestStaticMemberRejoinRebalances(t *testing.T) {
	t.Run("changed subscription, same protocol", func(t *testing.T) {
		// As Kafka: a static member that still supports the group's
		// protocol takes its place without a rebalance, whatever its
		// metadata (a restarted cooperative consumer owns nothing yet).
		h := newHarness(t)
		_, b, gen := staticGroup(t, h)
		r := h.join(staticJoinReq("g", "", "b", proto("range", "t", "u")))
		if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == b || h.state("g") != "Stable" {
			t.Fatalf("static rejoin: %+v (%s)", r, h.state("g"))
		}
		wantCode(t, "old id's heartbeat", heartbeat(h, "g", b, gen, "b"), kerr.FencedInstanceID.Code)
		h.inspect("g", func(g *group) {
			if !bytes.Equal(g.members[r.MemberID].metadataFor("range"), consumerMeta("t", "u")) {
				t.Error("the member's new subscription was not kept")
			}
		})
	})
	t.Run("group protocol dropped", func(t *testing.T) {
		h := newHarness(t)
		both := []kmsg.JoinGroupRequestProtocol{proto("range", "t"), proto("roundrobin", "t")}
		ra := h.join(staticJoinReq("g", "", "a", both...))
		jb := h.joinAsync(staticJoinReq("g", "", "b", both...), "b")
		h.waitJoining("g", 1)
		ja := h.joinAsync(staticJoinReq("g", ra.MemberID, "a", both...), "a")
		ra, rb := recv(t, ja), recv(t, jb)
		gen := ra.Generation
		if ra.ErrorCode != 0 || rb.ErrorCode != 0 || *ra.Protocol != "range" {
			t.Fatalf("joins: %+v %+v", ra, rb)
		}
		bs := h.syncAsync(syncReq("g", rb.MemberID, gen, nil))
		h.waitSyncing("g", rb.MemberID)
		wantCode(t, "leader sync", recv(t, h.syncAsync(syncReq("g", ra.MemberID, gen, nil))).ErrorCode, 0)
		wantCode(t, "follower sync", recv(t, bs).ErrorCode, 0)

		jb = h.joinAsync(staticJoinReq("g", "", "b", proto("roundrobin", "t")), "b")
		h.waitJoining("g", 1)
		if s := h.state("g"); s != "PreparingRebalance" {
			t.Fatalf("state %s", s)
		}
		wantCode(t, "old id's heartbeat", heartbeat(h, "g", rb.MemberID, gen, "b"), kerr.FencedInstanceID.Code)
		ja = h.joinAsync(staticJoinReq("g", ra.MemberID, "a", both...), "a")
		ra2, rb2 := recv(t, ja), recv(t, jb)
		if ra2.ErrorCode != 0 || rb2.ErrorCode != 0 || ra2.Generation != gen+1 || rb2.Generation != gen+1 || *rb2.Protocol != "roundrobin" {
			t.Fatalf("rejoin: %+v %+v", ra2, rb2)
		}
	})
	t.Run("leader, JoinGroup v8", func(t *testing.T) {
		// Before v9 (KIP-814) a returning static leader is told that the
		// id it replaced leads, so that it does not assign: no rebalance,
		// as in Kafka (sarama's static membership tests send v8).
		h := newHarness(t)
		a, b, gen := staticGroup(t, h)
		r := h.join(staticJoinReq("g", "", "a"))
		wantCode(t, "static leader rejoin", r.ErrorCode, 0)
		if r.SkipAssignment || r.LeaderID != a || r.MemberID == a || r.MemberID == "" || r.Generation != gen || len(r.Members) != 0 {
			t.Fatalf("static leader rejoin: %+v", r)
		}
		staticLeaderReplaced(t, h, a, b, r.MemberID, gen)
		wantCode(t, "new leader id's heartbeat", heartbeat(h, "g", r.MemberID, gen, "a"), 0)
	})
	t.Run("leader, JoinGroup v9", func(t *testing.T) {
		// KIP-814: a returning static leader is told it leads, with the
		// members, and to skip the assignment: no rebalance.
		h := newHarness(t)
		a, b, gen := staticGroup(t, h)
		req := staticJoinReq("g", "", "a")
		req.Version = 9
		r := h.join(req)
		wantCode(t, "static leader rejoin", r.ErrorCode, 0)
		if !r.SkipAssignment || r.LeaderID != r.MemberID || r.MemberID == a || r.Generation != gen || len(r.Members) != 2 {
			t.Fatalf("static leader rejoin: %+v", r)
		}
		staticLeaderReplaced(t, h, a, b, r.MemberID, gen)
	})
	t.Run("inconsistent protocols keep the old member", func(t *testing.T) {
		h := newHarness(t)
		a, b, gen := staticGroup(t, h)
		r := h.join(staticJoinReq("g", "", "b", proto("sticky", "t")))
		wantCode(t, "inconsistent static rejoin", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
		wantCode(t, "old id's heartbeat", heartbeat(h, "g", b, gen, "b"), 0)
		wantCode(t, "leader's heartbeat", heartbeat(h, "g", a, gen, "a"), 0)
		if s := h.state("g"); s != "Stable" {
			t.Fatalf("state %s", s)
		}
	})
}

func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	ja := h.joinAsync(joinReq("g", "", 3), "a")
	h.waitJoining("g", 1)
	h.tick(2 * time.Second)
	pending(t, ja, "first JoinGroup")
	jb := h.joinAsync(joinReq("g", "", 3), "b")
	h.waitJoining("g", 2)
	h.tick(2 * time.Second) // 4s: the delay restarted when b joined
	pending(t, ja, "first JoinGroup")
	pending(t, jb, "second JoinGroup")
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	h.tick(time.Second) // 5s
	ra, rb := recv(t, ja), recv(t, jb)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != 1 || rb.Generation != 1 || ra.LeaderID != rb.LeaderID {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
}

// Members keep joining within the delay: the rebalance still completes
// once the rebalance timeout has passed (Kafka bounds the initial delay by
// it).
func TestInitialRebalanceDelayBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	req := func() *kmsg.JoinGroupRequest {
		r := joinReq("g", "", 3)
		r.RebalanceTimeoutMillis = 10_000
		return r
	}
	first := h.joinAsync(req(), "c")
	h.waitJoining("g", 1)
	for i := 1; i < 10; i++ {
		h.tick(2 * time.Second)
		if h.state("g") != "PreparingRebalance" {
			if r := recv(t, first); r.ErrorCode != 0 || len(r.Members) != i {
				t.Fatalf("join: %+v", r)
			}
			if elapsed := time.Duration(i) * 2 * time.Second; elapsed > 12*time.Second {
				t.Fatalf("rebalance completed after %v", elapsed)
			}
			return
		}
		h.joinAsync(req(), "c")
		h.waitJoining("g", i+1)
	}
	t.Fatal("the initial delay never ended while members kept joining")
}

// A member waiting in SyncGroup for its leader is not expired meanwhile
// (Kafka keeps members awaiting a JoinGroup or SyncGroup answer alive).
func TestNoExpiryWhileAwaitingSync(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
	h.waitJoining("g", 1)
	jf := h.joinAsync(joinReq("g", follower.MemberID, 5), "f")
	rl, _ := recv(t, jl), recv(t, jf)
	fs := h.syncAsync(syncReq("g", follower.MemberID, rl.Generation, nil))
	h.waitSyncing("g", follower.MemberID)
	for range 3 {
		h.clk.Advance(4 * time.Second)
		wantCode(t, "leader's heartbeat", heartbeat(h, "g", leader.MemberID, rl.Generation), 0)
		h.c.Tick()
	}
	pending(t, fs, "follower's SyncGroup")
	s := recv(t, h.syncAsync(syncReq("g", leader.MemberID, rl.Generation, map[string][]byte{follower.MemberID: []byte("f")})))
	wantCode(t, "leader's SyncGroup", s.ErrorCode, 0)
	if r := recv(t, fs); r.ErrorCode != 0 || string(r.MemberAssignment) != "f" {
		t.Fatalf("follower's SyncGroup: %d %q", r.ErrorCode, r.MemberAssignment)
	}
}

// staticLeaderReplaced checks a static group after its leader (instance
// "a", member a) rejoined as member newID without a rebalance: still
// Stable in generation gen, the old id fenced, the follower b unaffected,
// and the new id's SyncGroup answered with the leader's assignment.
func staticLeaderReplaced(t *testing.T, h *harness, a, b, newID string, gen int32) {
	t.Helper()
	if s := h.state("g"); s != "Stable" || h.generation("g") != gen {
		t.Fatalf("state %s generation %d", s, h.generation("g"))
	}
	wantCode(t, "old leader id's heartbeat", heartbeat(h, "g", a, gen, "a"), kerr.FencedInstanceID.Code)
	wantCode(t, "follower's heartbeat", heartbeat(h, "g", b, gen, "b"), 0)
	sr := syncReq("g", newID, gen, nil)
	sr.InstanceID = kmsg.StringPtr("a")
	s := recv(t, h.syncAsync(sr))
	wantCode(t, "new leader id's SyncGroup", s.ErrorCode, 0)
	if string(s.MemberAssignment) != "A" {
		t.Fatalf("assignment %q", s.MemberAssignment)
	}
}
