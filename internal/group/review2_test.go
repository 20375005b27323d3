package group

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/records"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tests of the second review of the group coordinator's rework for issue
// 16 (of 2b27578).

// Group ids are int16-length strings in __consumer_offsets' records, but a
// flexible request (OffsetCommit v8, JoinGroup v6+) carries a compact
// string of any length. An id of len(victim)+65536 bytes was encoded with a
// length that wraps to len(victim); kmsg ignores trailing bytes, so on load
// the record decoded as the victim's offset of a topic and partition the
// attacker chose. Such an id is now INVALID_GROUP_ID.
func TestLongGroupIDCannotForgeAnotherGroupsOffset(t *testing.T) {
	h := newHarness(t)
	victim := "victim"
	wantAll(t, "victim's commit", h.commit(commitReq(victim, "", -1, 8, commitPartition{topic: "t", offset: 5})), 0)
	forged := []byte(victim)
	forged = append(forged, 0, 1, 't', 0, 0, 0, 0) // topic "t", partition 0
	for len(forged) < len(victim)+65536 {
		forged = append(forged, 'x')
	}
	attacker := string(forged)
	if PartitionFor(attacker, h.cfg.Partitions) != PartitionFor(victim, h.cfg.Partitions) {
		t.Skip("pad to collide the partitions")
	}
	before := h.store.appendCount()
	codes := h.commit(commitReq(attacker, "", -1, 8, commitPartition{topic: "anything", offset: 999}))
	t.Logf("attacker's commit (group id of %d bytes): %v", len(attacker), codes)
	wantAll(t, "the attacker's commit", codes, kerr.InvalidGroupID.Code)
	if n := h.store.appendCount(); n != before {
		t.Fatalf("the refused commit appended %d batches", n-before)
	}
	got, _ := h.fetch(victim, "t/0")
	t.Logf("victim's t/0 before a failover: %d", got["t/0"].offset)
	h2 := h.reload()
	got2, code := h2.fetch(victim, "t/0")
	t.Logf("victim's t/0 after a failover: %d (%s)", got2["t/0"].offset, errName(code))
	if got2["t/0"].offset != 5 {
		t.Fatalf("victim's committed offset changed from 5 to %d by another group's commit", got2["t/0"].offset)
	}
}

// The size bound at larger varints: many records per batch (offset deltas
// of 3 bytes) and large values (length varints of 3-4 bytes).
func TestSizeBoundLargeVarints(t *testing.T) {
	var recs []records.KV
	est := batchOverhead
	meta := strings.Repeat("m", 4096)
	for i := range 3000 {
		recs = append(recs, records.KV{Key: offsetKey("group", "topic", int32(i)), Value: offsetValue(Offset{Metadata: meta})})
		est += offsetRecordSize("group", "topic", meta)
	}
	if n := len(records.Build(recs, 0)); est < n {
		t.Fatalf("offsets: estimated %d < encoded %d", est, n)
	}
	g := newGroup("g", time.Now())
	g.protocol, g.protocolType, g.leader = "range", "consumer", "m0"
	for i := range 50 {
		id := fmt.Sprintf("m%d", i)
		g.members[id] = &member{id: id, clientID: "c", clientHost: "h", protocols: []protocol{{"range", make([]byte, 20000)}}, assignment: make([]byte, 30000)}
	}
	n := len(records.Build([]records.KV{{Key: groupKey(g.id), Value: groupValue(g)}}, 0))
	if est := batchOverhead + groupRecordSize(g); est < n {
		t.Fatalf("group: estimated %d < encoded %d", est, n)
	}
}

// offsetsOf lists every group's offsets, for comparing memory with a reload.
func offsetsOf(h *harness) map[string]int {
	out := map[string]int{}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	for _, sh := range h.c.shards {
		for id, g := range sh.groups {
			out[id] = len(g.offsets)
		}
	}
	return out
}

// A Tick's and a DeleteGroups' write split over several batches, one of
// which is refused midway: memory and a reload agree.
func TestSplitWriteRefusedMidway(t *testing.T) {
	for _, nth := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(nth), func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.OffsetsRetention = time.Hour })
			var ids []string
			for i := range 60 {
				id := fmt.Sprintf("g%d", i)
				ids = append(ids, id)
				wantAll(t, "commit", h.commit(commitReq(id, "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
			}
			var parts []commitPartition
			for p := range 60 {
				parts = append(parts, commitPartition{topic: "t", partition: int32(p), offset: 1})
			}
			wantAll(t, "commit", h.commit(commitReq("big", "", -1, 8, parts...)), 0)
			h.clk.Advance(2 * time.Hour)
			h.store.mu.Lock()
			h.store.maxBatch = 2048
			h.store.failNth = h.store.appends + nth
			h.store.mu.Unlock()
			h.c.Tick()
			h.settle()
			h.store.mu.Lock()
			h.store.failNth = 0
			h.store.mu.Unlock()
			mem, re := offsetsOf(h), offsetsOf(h.reload())
			if fmt.Sprint(mem) != fmt.Sprint(re) {
				t.Fatalf("after a refused tick batch: memory %v, reload %v", mem, re)
			}
			t.Logf("tick: %d groups left", len(mem))
			// DeleteGroups of what is left (recommit first), refused midway.
			for _, id := range append(ids, "big") {
				wantAll(t, "commit", h.commit(commitReq(id, "", -1, 8, parts[:20]...)), 0)
			}
			h.store.mu.Lock()
			h.store.failNth = h.store.appends + nth
			h.store.mu.Unlock()
			h.c.Delete(context.Background(), append(ids, "big"))
			h.settle()
			mem, re = offsetsOf(h), offsetsOf(h.reload())
			if fmt.Sprint(mem) != fmt.Sprint(re) {
				t.Fatalf("after a refused delete batch: memory %v, reload %v", mem, re)
			}
			t.Logf("delete: %d groups left", len(mem))
		})
	}
}

// A group deleted (tombstones in flight) and recreated by a simple commit
// (in flight too): no OffsetFetch answers either until committed, and a
// failover that truncates both serves the old committed offset.
func TestFetchDeletedRecreatedInFlight(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = 30 * time.Millisecond })
	wantAll(t, "commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
	keep := len(h.store.snapshot())
	_, release := h.store.hold()
	defer release()
	del := h.c.StartDelete([]string{"g"})
	got, code := h.fetch("g", "t/0")
	t.Logf("during the delete: %+v %s", got, errName(code))
	if got["t/0"].offset == -1 {
		t.Fatalf("fetch answered the uncommitted deletion")
	}
	cm := h.c.StartCommitOffsets(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 7}))
	got, code = h.fetch("g", "t/0")
	t.Logf("after the recreation: %+v %s", got, errName(code))
	if got["t/0"].offset == 7 || got["t/0"].offset == -1 {
		t.Fatalf("fetch answered an uncommitted offset")
	}
	_ = del(context.Background())
	_ = cm(context.Background())
	h.store.moveLeadership(2, keep)
	h.c.Elected(0, 2, 1, h.store)
	h.waitLoaded(0)
	got, code = h.fetch("g", "t/0")
	if code != 0 || got["t/0"].offset != 1 {
		t.Fatalf("after the failover: %+v %s", got, errName(code))
	}
}

// Every other string a write takes from a request is refused before
// anything changes if its record field could not hold it (int16 lengths):
// group ids in every request, topic names and metadata in OffsetCommit,
// instance ids, protocol types and names in JoinGroup. A long client id
// is cut in the member id it prefixes, and the group's record reads back.
func TestLongStringsRefusedBeforeWrite(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxMetadataBytes = 1 << 20 })
	long := strings.Repeat("x", maxRecordString+1)
	appends := h.store.appendCount()
	unchanged := func(what string) {
		t.Helper()
		if n := h.store.appendCount(); n != appends {
			t.Fatalf("%s: %d batches appended", what, n-appends)
		}
	}

	// Group ids.
	wantAll(t, "commit, long group", h.commit(commitReq(long, "", -1, 8, commitPartition{topic: "t"})), kerr.InvalidGroupID.Code)
	jr := joinReq(long, "", 6)
	wantCode(t, "join, long group", h.join(jr).ErrorCode, kerr.InvalidGroupID.Code)
	jr = staticJoinReq(long, "", "i")
	jr.Version = 6
	wantCode(t, "static join, long group", h.join(jr).ErrorCode, kerr.InvalidGroupID.Code)
	if got := h.c.Delete(context.Background(), []string{long}); got[0].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("delete, long group: %s", errName(got[0].ErrorCode))
	}
	unchanged("long group ids")

	// Topics and metadata in OffsetCommit: only the partition is refused.
	meta := strings.Repeat("m", maxRecordString+1)
	codes := h.commit(commitReq("g", "", -1, 8,
		commitPartition{topic: strings.Repeat("t", maxTopicName+1), offset: 1},
		commitPartition{topic: "u", offset: 2, metadata: &meta},
		commitPartition{topic: "v", offset: 3}))
	t.Logf("commit codes: %v", codes)
	for tp, want := range map[string]int16{
		strings.Repeat("t", maxTopicName+1) + "/0": kerr.UnknownTopicOrPartition.Code,
		"u/0": kerr.OffsetMetadataTooLarge.Code,
		"v/0": 0,
	} {
		wantCode(t, "commit "+tp[:min(len(tp), 8)], codes[tp], want)
	}
	appends = h.store.appendCount()

	// JoinGroup's strings.
	for name, mod := range map[string]func(r *kmsg.JoinGroupRequest){
		"instance id":   func(r *kmsg.JoinGroupRequest) { r.InstanceID = kmsg.StringPtr(long) },
		"protocol type": func(r *kmsg.JoinGroupRequest) { r.ProtocolType = long },
		"protocol name": func(r *kmsg.JoinGroupRequest) { r.Protocols = append(r.Protocols, proto(long, "t")) },
	} {
		r := joinReq("j", "", 6)
		mod(r)
		wantCode(t, "join, long "+name, h.join(r).ErrorCode, kerr.InvalidRequest.Code)
		if h.state("j") != "Dead" {
			t.Fatalf("join, long %s: the group exists (%s)", name, h.state("j"))
		}
	}
	unchanged("long JoinGroup strings")

	// A client id near the limit: the member id fits its record.
	r := joinReq("j", "", 5)
	r.InstanceID = kmsg.StringPtr("i")
	clientID := strings.Repeat("é", maxRecordString/2)
	resp := recv(t, h.joinAsync(r, clientID))
	wantCode(t, "static join, long client id", resp.ErrorCode, 0)
	if len(resp.MemberID) > maxRecordString {
		t.Fatalf("member id of %d bytes", len(resp.MemberID))
	}
	s := recv(t, h.syncAsync(syncReq("j", resp.MemberID, resp.Generation, map[string][]byte{resp.MemberID: {1}})))
	wantCode(t, "sync", s.ErrorCode, 0)
	h.settle()
	h2 := h.reload()
	wantCode(t, "heartbeat after a reload", heartbeat(h2, "j", resp.MemberID, resp.Generation, "i"), 0)
	got, code := h2.fetch("g", "v/0", "u/0")
	if code != 0 || got["v/0"].offset != 3 || got["u/0"].offset != -1 {
		t.Fatalf("after a reload: %+v %s", got, errName(code))
	}
}

// A record whose fields do not add up to its length (as the old code
// wrote a string of 65536+ bytes: its length wrapped) is skipped on load,
// not read as another group's key.
func TestLoadSkipsRecordsWithTrailingBytes(t *testing.T) {
	h := newHarness(t)
	wantAll(t, "victim's commit", h.commit(commitReq("victim", "", -1, 8, commitPartition{topic: "t", offset: 5})), 0)
	wantAll(t, "other's commit", h.commit(commitReq("other", "", -1, 8, commitPartition{topic: "t", offset: 6})), 0)
	h.settle()
	// What the old code wrote for a group id of 65536+len("victim") bytes.
	forged := []byte("victim")
	forged = append(forged, 0, 1, 't', 0, 0, 0, 0)
	for len(forged) < len("victim")+65536 {
		forged = append(forged, 'x')
	}
	key := offsetKey(string(forged), "anything", 0)
	if d, err := decodeRecord(key, offsetValue(Offset{Offset: 999})); err == nil {
		t.Fatalf("a key with trailing bytes decoded: %+v", d)
	}
	gkey := append(groupKey("other"), 'x')
	if _, err := decodeRecord(gkey, nil); err == nil {
		t.Fatalf("a group key with a trailing byte decoded")
	}
	okey := append(offsetKey("other", "t", 0), 'x')
	if _, err := decodeRecord(okey, nil); err == nil {
		t.Fatalf("an offset key with a trailing byte decoded")
	}
	value := append(offsetValue(Offset{Offset: 999}), 0)
	if _, err := decodeRecord(offsetKey("other", "t", 0), value); err == nil {
		t.Fatalf("an offset value with a trailing byte decoded")
	}
	h.store.mu.Lock()
	h.store.recs = append(h.store.recs,
		records.KV{Key: key, Value: offsetValue(Offset{Offset: 999})},
		records.KV{Key: offsetKey("other", "t", 0), Value: value},
		records.KV{Key: okey})
	h.store.mu.Unlock()
	h2 := h.reload()
	for id, want := range map[string]int64{"victim": 5, "other": 6} {
		got, code := h2.fetch(id, "t/0")
		if code != 0 || got["t/0"].offset != want {
			t.Fatalf("%s after a reload: %+v %s, want %d", id, got, errName(code), want)
		}
	}
}
