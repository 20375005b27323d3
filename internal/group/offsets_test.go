package group

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type commitPartition struct {
	topic     string
	partition int32
	offset    int64
	epoch     int32
	metadata  *string
}

func commitReq(group, member string, gen int32, version int16, parts ...commitPartition) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = version
	r.Group, r.MemberID, r.Generation = group, member, gen
	for _, p := range parts {
		if len(r.Topics) == 0 || r.Topics[len(r.Topics)-1].Topic != p.topic {
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = p.topic
			r.Topics = append(r.Topics, t)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.offset, p.epoch, p.metadata
		t := &r.Topics[len(r.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return r
}

// commitCodes is every partition's error code, as "topic/partition" →
// code.
func commitCodes(resp *kmsg.OffsetCommitResponse) map[string]int16 {
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

func (h *harness) commit(req *kmsg.OffsetCommitRequest) map[string]int16 {
	return commitCodes(h.c.CommitOffsets(context.Background(), req))
}

func wantAll(t *testing.T, what string, codes map[string]int16, want int16) {
	t.Helper()
	if len(codes) == 0 {
		t.Fatalf("%s: no partitions answered", what)
	}
	for tp, code := range codes {
		wantCode(t, what+" "+tp, code, want)
	}
}

type fetched struct {
	offset   int64
	epoch    int32
	metadata string
}

// fetch is an OffsetFetch (v7) of the listed partitions ("topic/p"), or
// of all if none are given.
func (h *harness) fetch(group string, parts ...string) (map[string]fetched, int16) {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	for _, tp := range parts {
		var topic string
		var p int32
		if _, err := fmt.Sscanf(strings.Replace(tp, "/", " ", 1), "%s %d", &topic, &p); err != nil {
			panic(err)
		}
		if len(r.Topics) == 0 || r.Topics[len(r.Topics)-1].Topic != topic {
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic = topic
			r.Topics = append(r.Topics, t)
		}
		r.Topics[len(r.Topics)-1].Partitions = append(r.Topics[len(r.Topics)-1].Partitions, p)
	}
	resp := h.c.FetchOffsets(r)
	out := map[string]fetched{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			f := fetched{offset: p.Offset, epoch: p.LeaderEpoch}
			if p.Metadata != nil {
				f.metadata = *p.Metadata
			}
			if p.ErrorCode != 0 {
				f.offset = -1000 - int64(p.ErrorCode)
			}
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = f
		}
	}
	return out, resp.ErrorCode
}

func TestOffsetCommitMembers(t *testing.T) {
	h := newHarness(t)
	rs := stableGroup(t, h, 2)
	leader, follower := rs[0], rs[1]
	gen := leader.Generation
	tp := commitPartition{topic: "t", partition: 0, offset: 10, epoch: 3}

	wantAll(t, "commit of a member", h.commit(commitReq("g", follower.MemberID, gen, 8, tp)), 0)
	wantAll(t, "commit of another generation", h.commit(commitReq("g", follower.MemberID, gen-1, 8, tp)), kerr.IllegalGeneration.Code)
	wantAll(t, "commit of an unknown member", h.commit(commitReq("g", "nobody", gen, 8, tp)), kerr.UnknownMemberID.Code)
	wantAll(t, "simple commit to a group with members", h.commit(commitReq("g", "", -1, 8, tp)), kerr.UnknownMemberID.Code)
	// A member's commit with generation -1 is of another generation
	// (ClassicGroup.validateOffsetCommit); so are its heartbeat and sync.
	wantAll(t, "member's commit with generation -1", h.commit(commitReq("g", follower.MemberID, -1, 8, tp)), kerr.IllegalGeneration.Code)
	wantCode(t, "member's heartbeat with generation -1", heartbeat(h, "g", follower.MemberID, -1), kerr.IllegalGeneration.Code)
	static := commitReq("g", follower.MemberID, gen, 8, tp)
	static.InstanceID = kmsg.StringPtr("someone-else")
	wantAll(t, "commit with an instance id of a dynamic member", h.commit(static), 0)

	// While preparing a rebalance the current generation may still
	// commit; while completing it, it may not.
	r := h.join(joinReq("g", "", 5))
	jn := h.joinAsync(joinReq("g", r.MemberID, 5), "new")
	h.waitJoining("g", 1)
	wantAll(t, "commit while preparing", h.commit(commitReq("g", follower.MemberID, gen, 8, tp)), 0)
	jl := h.joinAsync(joinReq("g", leader.MemberID, 5), "l")
	jf := h.joinAsync(joinReq("g", follower.MemberID, 5), "f")
	recv(t, jn)
	recv(t, jl)
	recv(t, jf)
	wantAll(t, "commit while completing", h.commit(commitReq("g", follower.MemberID, gen+1, 8, tp)), kerr.RebalanceInProgress.Code)

	got, code := h.fetch("g", "t/0")
	wantCode(t, "fetch", code, 0)
	if got["t/0"] != (fetched{10, 3, ""}) {
		t.Fatalf("fetched %+v", got["t/0"])
	}
}

func TestOffsetCommitSimple(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("m", h.cfg.MaxMetadataBytes+1)
	codes := h.commit(commitReq("simple", "", -1, 8,
		commitPartition{topic: "a", partition: 0, offset: 5, epoch: 2, metadata: kmsg.StringPtr("meta")},
		commitPartition{topic: "a", partition: 1, offset: 6, epoch: 2, metadata: &long},
		commitPartition{topic: "b", partition: 3, offset: 7, epoch: -1},
	))
	want := map[string]int16{"a/0": 0, "a/1": kerr.OffsetMetadataTooLarge.Code, "b/3": 0}
	for tp, w := range want {
		wantCode(t, "simple commit of "+tp, codes[tp], w)
	}
	if s := h.state("simple"); s != "Empty" {
		t.Fatalf("state %s", s)
	}
	// Only the accepted partitions are stored.
	var stored []string
	for _, d := range h.store.decodedRecords(t) {
		if d.isOffset && d.group == "simple" {
			stored = append(stored, fmt.Sprintf("%s/%d@%d", d.topic, d.partition, d.offset.Offset))
			if d.offset.CommitTimestamp != h.clk.Now().UnixMilli() {
				t.Fatalf("commit timestamp %d", d.offset.CommitTimestamp)
			}
		}
	}
	if strings.Join(stored, ",") != "a/0@5,b/3@7" && strings.Join(stored, ",") != "b/3@7,a/0@5" {
		t.Fatalf("stored %v", stored)
	}

	// An empty group (members all left) takes simple commits too.
	id, gen := h.joinOne("g", nil)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "g", id
	wantCode(t, "leave", h.c.Leave(lv).ErrorCode, 0)
	waitFor(t, "the empty group to be stored", func() bool {
		d, ok := h.store.lastGroupRecord(t, "g")
		return ok && d.meta != nil && len(d.meta.Members) == 0
	})
	wantAll(t, "simple commit to an empty group", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "a", offset: 1})), 0)
	wantAll(t, "a former member's commit", h.commit(commitReq("g", id, gen, 8, commitPartition{topic: "a", offset: 1})), kerr.UnknownMemberID.Code)

	// A store failure fails every partition, and nothing is kept.
	h.store.fail(errStoreDown)
	wantAll(t, "commit while the store fails", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "a", offset: 99})), kerr.CoordinatorNotAvailable.Code)
	got, _ := h.fetch("g", "a/0")
	if got["a/0"].offset != 1 {
		t.Fatalf("after a failed commit: %+v", got["a/0"])
	}
	h.store.fail(ErrNotLeader)
	wantAll(t, "commit when not leader", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "a", offset: 99})), kerr.NotCoordinator.Code)
	// The empty group id is a group like any other for a commit (as in
	// Kafka, for backwards compatibility).
	wantAll(t, "commit with the empty group id", h.commit(commitReq("", "", -1, 8, commitPartition{topic: "a", offset: 99})), 0)
}

func TestOffsetFetch(t *testing.T) {
	h := newHarness(t)
	wantAll(t, "commit v8", h.commit(commitReq("g", "", -1, 8,
		commitPartition{topic: "b", partition: 1, offset: 11, epoch: 4, metadata: kmsg.StringPtr("x")},
		commitPartition{topic: "b", partition: 0, offset: 10, epoch: 4},
	)), 0)
	// Before v6 there is no leader epoch.
	wantAll(t, "commit v5", h.commit(commitReq("g", "", -1, 5, commitPartition{topic: "a", partition: 2, offset: 20, epoch: 9})), 0)

	all, code := h.fetch("g")
	wantCode(t, "fetch all", code, 0)
	want := map[string]fetched{"a/2": {20, -1, ""}, "b/0": {10, 4, ""}, "b/1": {11, 4, "x"}}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("fetch all: %v, want %v", all, want)
	}
	listed, _ := h.fetch("g", "b/1", "b/7", "c/0")
	want = map[string]fetched{"b/1": {11, 4, "x"}, "b/7": {-1, -1, ""}, "c/0": {-1, -1, ""}}
	if fmt.Sprint(listed) != fmt.Sprint(want) {
		t.Fatalf("fetch listed: %v, want %v", listed, want)
	}
	unknown, code := h.fetch("nogroup", "a/0")
	wantCode(t, "fetch of an unknown group", code, 0)
	if unknown["a/0"].offset != -1 {
		t.Fatalf("unknown group: %+v", unknown)
	}
	none, code := h.fetch("nogroup")
	if code != 0 || len(none) != 0 {
		t.Fatalf("fetch all of an unknown group: %v %d", none, code)
	}
}

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t)
	stableGroup(t, h, 1)
	wantAll(t, "commit", h.commit(commitReq("empty", "", -1, 8,
		commitPartition{topic: "a", partition: 0, offset: 1}, commitPartition{topic: "a", partition: 1, offset: 2})), 0)
	res := h.c.Delete(context.Background(), []string{"g", "nogroup", "empty", ""})
	// The empty group id is a group (as Kafka's), one that does not exist.
	want := []int16{kerr.NonEmptyGroup.Code, kerr.GroupIDNotFound.Code, 0, kerr.GroupIDNotFound.Code}
	if len(res) != len(want) {
		t.Fatalf("%d results", len(res))
	}
	for i, r := range res {
		wantCode(t, "delete "+r.Group, r.ErrorCode, want[i])
	}
	// Tombstones for the group and both offsets.
	var tombstones []string
	for _, d := range h.store.decodedRecords(t) {
		if d.group != "empty" {
			continue
		}
		switch {
		case d.isOffset && d.offset == nil:
			tombstones = append(tombstones, fmt.Sprintf("%s/%d", d.topic, d.partition))
		case !d.isOffset && d.meta == nil:
			tombstones = append(tombstones, "group")
		}
	}
	if len(tombstones) != 3 {
		t.Fatalf("tombstones: %v", tombstones)
	}
	if s := h.state("empty"); s != "Dead" {
		t.Fatalf("deleted group is %s", s)
	}
	got, _ := h.fetch("empty")
	if len(got) != 0 {
		t.Fatalf("deleted group's offsets: %v", got)
	}
	groups, code := h.c.List(nil)
	if code != 0 || len(groups) != 1 || groups[0].Group != "g" {
		t.Fatalf("list: %+v %d", groups, code)
	}
	wantCode(t, "delete again", h.c.Delete(context.Background(), []string{"empty"})[0].ErrorCode, kerr.GroupIDNotFound.Code)

	// A failed write deletes nothing.
	wantAll(t, "commit", h.commit(commitReq("empty2", "", -1, 8, commitPartition{topic: "a", offset: 1})), 0)
	h.store.fail(errStoreDown)
	wantCode(t, "delete while the store fails", h.c.Delete(context.Background(), []string{"empty2"})[0].ErrorCode, kerr.CoordinatorNotAvailable.Code)
	if s := h.state("empty2"); s != "Empty" {
		t.Fatalf("group after a failed delete: %s", s)
	}
}

func TestListAndDescribe(t *testing.T) {
	h := newHarness(t)
	stableGroup(t, h, 2)
	wantAll(t, "commit", h.commit(commitReq("simple", "", -1, 8, commitPartition{topic: "a", offset: 1})), 0)
	groups, code := h.c.List(nil)
	if code != 0 || len(groups) != 2 || groups[0].Group != "g" || groups[0].GroupState != "Stable" || groups[0].ProtocolType != "consumer" ||
		groups[1].Group != "simple" || groups[1].GroupState != "Empty" {
		t.Fatalf("list: %+v", groups)
	}
	groups, _ = h.c.List([]string{"empty"})
	if len(groups) != 1 || groups[0].Group != "simple" {
		t.Fatalf("list of empty groups: %+v", groups)
	}
	ds := h.c.Describe([]string{"g", "nogroup"})
	if len(ds) != 2 || ds[0].State != "Stable" || ds[0].Protocol != "range" || len(ds[0].Members) != 2 || ds[1].State != "Dead" || ds[1].ErrorCode != 0 {
		t.Fatalf("describe: %+v", ds)
	}
	for _, m := range ds[0].Members {
		if m.ClientHost != "/127.0.0.1" || !strings.HasPrefix(m.MemberID, "client") || !strings.HasPrefix(m.ClientID, "client-") {
			t.Fatalf("described member: %+v", m)
		}
	}
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t)
	// A consumer group subscribed to "sub".
	r := h.join(joinReq("g", "", 3, proto("range", "sub")))
	wantCode(t, "join", r.ErrorCode, 0)
	s := recv(t, h.syncAsync(syncReq("g", r.MemberID, r.Generation, map[string][]byte{r.MemberID: nil})))
	wantCode(t, "sync", s.ErrorCode, 0)
	wantAll(t, "commit", h.commit(commitReq("g", r.MemberID, r.Generation, 8,
		commitPartition{topic: "sub", partition: 0, offset: 1}, commitPartition{topic: "other", partition: 0, offset: 2},
		commitPartition{topic: "other", partition: 1, offset: 3})), 0)

	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"sub", []int32{0}}, {"other", []int32{0, 5}}} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = tp.topic
		for _, p := range tp.parts {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.c.DeleteOffsets(context.Background(), req)
	wantCode(t, "OffsetDelete", resp.ErrorCode, 0)
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	want := map[string]int16{"sub/0": kerr.GroupSubscribedToTopic.Code, "other/0": 0, "other/5": 0}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("OffsetDelete codes %v, want %v", codes, want)
	}
	got, _ := h.fetch("g")
	if len(got) != 2 || got["sub/0"].offset != 1 || got["other/1"].offset != 3 {
		t.Fatalf("offsets left: %v", got)
	}
	tombstone := false
	for _, d := range h.store.decodedRecords(t) {
		if d.isOffset && d.offset == nil {
			if d.topic != "other" || d.partition != 0 {
				t.Fatalf("tombstone for %s/%d", d.topic, d.partition)
			}
			tombstone = true
		}
	}
	if !tombstone {
		t.Fatal("no tombstone written")
	}

	req.Group = "nogroup"
	wantCode(t, "OffsetDelete of an unknown group", h.c.DeleteOffsets(context.Background(), req).ErrorCode, kerr.GroupIDNotFound.Code)

	// A group of another protocol type with members: NON_EMPTY_GROUP.
	other := joinReq("connect", "", 3, proto("default", "x"))
	other.ProtocolType = "connect"
	wantCode(t, "join", h.join(other).ErrorCode, 0)
	req.Group = "connect"
	wantCode(t, "OffsetDelete of a non-consumer group", h.c.DeleteOffsets(context.Background(), req).ErrorCode, kerr.NonEmptyGroup.Code)
}

func TestOffsetExpiry(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OffsetsRetention = time.Hour })
	wantAll(t, "commit", h.commit(commitReq("simple", "", -1, 8, commitPartition{topic: "a", offset: 1})), 0)
	// A group with a member: its offsets do not expire.
	id, gen := h.joinOne("g", nil)
	wantAll(t, "commit", h.commit(commitReq("g", id, gen, 8, commitPartition{topic: "a", offset: 2})), 0)
	for range 12 {
		h.clk.Advance(5 * time.Minute)
		wantCode(t, "heartbeat", heartbeat(h, "g", id, gen), 0)
		h.c.Tick()
	}
	// 60 minutes: not yet expired.
	if got, _ := h.fetch("simple", "a/0"); got["a/0"].offset != 1 {
		t.Fatalf("expired early: %+v", got)
	}
	h.clk.Advance(time.Second)
	wantCode(t, "heartbeat", heartbeat(h, "g", id, gen), 0)
	h.c.Tick()
	waitFor(t, "the simple group to expire", func() bool { return h.state("simple") == "Dead" })
	if got, _ := h.fetch("simple", "a/0"); got["a/0"].offset != -1 {
		t.Fatalf("not expired: %+v", got)
	}
	if got, _ := h.fetch("g", "a/0"); got["a/0"].offset != 2 {
		t.Fatalf("a stable group's offset expired: %+v", got)
	}
	var tombstones []string
	for _, d := range h.store.decodedRecords(t) {
		if d.group == "simple" && (d.isOffset && d.offset == nil || !d.isOffset && d.meta == nil) {
			tombstones = append(tombstones, fmt.Sprint(d.isOffset))
		}
	}
	if len(tombstones) != 2 {
		t.Fatalf("tombstones of the expired group: %v", tombstones)
	}

	// The member leaves: the retention runs from when the group became
	// empty, not from the commit.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "g", id
	wantCode(t, "leave", h.c.Leave(lv).ErrorCode, 0)
	h.tick(59 * time.Minute)
	if got, _ := h.fetch("g", "a/0"); got["a/0"].offset != 2 {
		t.Fatalf("expired early: %+v", got)
	}
	h.tick(2 * time.Minute)
	waitFor(t, "the group to expire", func() bool { return h.state("g") == "Dead" })
}
