package group

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// Tests for the review of issue 16's group coordinator rework.

// Review finding 1: a commit whose write timed out stays in memory (it is
// in the leader's log, uncommitted); an OffsetFetch must not answer it
// until it is committed (UNSTABLE_OFFSET_COMMIT meanwhile), and a failover
// that truncates it never shows it to anyone.
func TestReviewFetchAfterTimedOutCommitReadsUncommitted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = 20 * time.Millisecond })
	wantAll(t, "first commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
	keep := len(h.store.snapshot())
	_, release := h.store.hold() // replication stalls (follower slow, ISR < minISR, ...)
	defer release()
	wantAll(t, "second commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 5})), kerr.RequestTimedOut.Code)
	got, code := h.fetch("g", "t/0")
	t.Logf("OffsetFetch after the timed-out commit: offset %d, error %s", got["t/0"].offset, errName(code))
	if code == 0 && got["t/0"].offset == 5 {
		t.Fatalf("OffsetFetch answered offset 5, which is not committed")
	}
	if want := -1000 - int64(kerr.UnstableOffsetCommit.Code); got["t/0"].offset != want {
		t.Fatalf("OffsetFetch v7 of an uncommitted offset: %+v, want UNSTABLE_OFFSET_COMMIT", got)
	}
	// Failover: the new leader lacks the uncommitted tail.
	h.store.moveLeadership(2, keep)
	h.c.Elected(0, 2, 1, h.store)
	h.waitLoaded(0)
	got2, code2 := h.fetch("g", "t/0")
	t.Logf("OffsetFetch after the failover: offset %d, error %s", got2["t/0"].offset, errName(code2))
	if code2 != 0 || got2["t/0"].offset != 1 {
		t.Fatalf("after the failover: %+v (error %s), want the committed 1", got2, errName(code2))
	}
}

// Review finding 1: once the timed-out write is committed after all, the
// offset is served.
func TestFetchServesTimedOutCommitOnceCommitted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = 20 * time.Millisecond })
	_, release := h.store.hold()
	wantAll(t, "commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 5})), kerr.RequestTimedOut.Code)
	// Older versions (no UNSTABLE_OFFSET_COMMIT): a retriable
	// COORDINATOR_LOAD_IN_PROGRESS, at the top and per partition.
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group = 5, "g"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	r.Topics = append(r.Topics, rt)
	resp := h.c.FetchOffsets(r)
	wantCode(t, "OffsetFetch v5 top level", resp.ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.CoordinatorLoadInProgress.Code || p.Offset != -1 {
		t.Fatalf("OffsetFetch v5 partition: %+v", p)
	}
	release()
	if got, code := h.fetch("g", "t/0"); code != 0 || got["t/0"].offset != 5 {
		t.Fatalf("after the commit: %+v (error %s), want 5", got, errName(code))
	}
}

// Review finding 1: after a failover the new coordinator loads its log to
// the end, uncommitted tail included; it serves what it loaded only once
// that is committed.
func TestFetchAfterLoadWaitsForLoadedTail(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = 20 * time.Millisecond })
	wantAll(t, "first commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
	_, release := h.store.hold()
	defer release()
	wantAll(t, "second commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 5})), kerr.RequestTimedOut.Code)
	// Another coordinator (a new leader epoch) loads the log, whose tail
	// is not committed.
	h2 := h.reload()
	h2.c.Elected(0, 2, 1, h.store)
	h2.waitLoaded(0)
	got, code := h2.fetch("g", "t/0")
	if code == 0 && got["t/0"].offset == 5 {
		t.Fatalf("OffsetFetch after the load answered the uncommitted 5")
	}
	release()
	if got, code := h2.fetch("g", "t/0"); code != 0 || got["t/0"].offset != 5 {
		t.Fatalf("after the commit: %+v (error %s), want 5", got, errName(code))
	}
}

// Review finding 2: a static replacement whose write fails is reverted in
// memory, and the write of the restored membership can be refused too (the
// same ISR trouble that failed the first); Tick writes it again until it
// lands, so that a reload agrees with memory.
func TestReviewStaticRevertWriteRefused(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = 20 * time.Millisecond })
	a, b, gen := staticGroup(t, h)
	entered, release := h.store.holdNext()
	defer release()
	done := make(chan string, 1)
	go func() {
		r := h.join(staticJoinReq("g", "", "b"))
		done <- r.MemberID
		if r.ErrorCode == 0 {
			t.Errorf("replacement answered without error")
		}
	}()
	recv(t, entered)           // the replacement is appended, its commit awaited
	h.store.fail(errStoreDown) // the next append (the revert's) is refused
	recv(t, done)
	h.settle()
	wantCode(t, "replaced member's heartbeat in memory", heartbeat(h, "g", b, gen, "b"), 0)
	wantCode(t, "leader's heartbeat", heartbeat(h, "g", a, gen, "a"), 0)
	h.tick(time.Second) // the partition takes writes again
	h.settle()
	h2 := h.reload()
	code := heartbeat(h2, "g", b, gen, "b")
	t.Logf("replaced member's heartbeat after a reload: %s", errName(code))
	wantCode(t, "replaced member's heartbeat after a reload", code, 0)
	// Nothing more to write once it landed.
	n := h.store.appendCount()
	h.tick(time.Second)
	h.settle()
	if d := h.store.appendCount() - n; d != 0 {
		t.Fatalf("%d more writes of a group whose metadata landed", d)
	}
}

// Review finding 3: a Tick expiring many groups appends one batch per
// partition (not one per group), awaited by one goroutine; so does a
// DeleteGroups of many groups.
func TestTickAndDeleteAppendOncePerPartition(t *testing.T) {
	for _, partitions := range []int32{1, 4} {
		t.Run(fmt.Sprint(partitions), func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Partitions = partitions; c.OffsetsRetention = time.Hour })
			const n = 1000
			var ids []string
			for i := range n {
				id := fmt.Sprintf("g%d", i)
				ids = append(ids, id)
				wantAll(t, "commit", h.commit(commitReq(id, "", -1, 8,
					commitPartition{topic: "t", offset: 1}, commitPartition{topic: "t", partition: 1, offset: 1})), 0)
			}
			h.clk.Advance(2 * time.Hour)
			before := h.store.appendCount()
			h.c.Tick()
			if d := h.store.appendCount() - before; d > int(partitions) {
				t.Fatalf("one Tick expiring %d groups made %d appends, want at most %d (one per partition)", n, d, partitions)
			}
			h.settle()
			groups, _ := h.c.List(nil)
			if len(groups) != 0 {
				t.Fatalf("%d groups left after the expiry", len(groups))
			}
			for i := range n {
				wantAll(t, "commit", h.commit(commitReq(ids[i], "", -1, 8, commitPartition{topic: "t", offset: 2})), 0)
			}
			before = h.store.appendCount()
			res := h.c.Delete(context.Background(), ids)
			if d := h.store.appendCount() - before; d > int(partitions) {
				t.Fatalf("one DeleteGroups of %d groups made %d appends, want at most %d", n, d, partitions)
			}
			for _, r := range res {
				wantCode(t, "delete "+r.Group, r.ErrorCode, 0)
			}
			h2 := h.reload()
			if groups, _ := h2.c.List(nil); len(groups) != 0 {
				t.Fatalf("%d groups after a reload", len(groups))
			}
		})
	}
}

// Review findings 3 and 4: a Tick's writes are split into batches that fit
// the partition's max.message.bytes, and memory and log agree.
func TestTickSplitsBatches(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OffsetsRetention = time.Hour })
	h.store.maxBatch = 4096
	const n = 300
	for i := range n {
		wantAll(t, "commit", h.commit(commitReq(fmt.Sprintf("g%d", i), "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
	}
	// One group with more offsets than a batch holds.
	var parts []commitPartition
	for p := range 40 {
		parts = append(parts, commitPartition{topic: "t", partition: int32(p), offset: 1})
	}
	wantAll(t, "commit", h.commit(commitReq("big", "", -1, 8, parts...)), 0)
	h.clk.Advance(2 * time.Hour)
	before := len(h.store.snapshot())
	appends := h.store.appendCount()
	h.c.Tick()
	h.settle()
	if d := h.store.appendCount() - appends; d < 2 || d > 10 {
		t.Fatalf("%d appends", d)
	}
	if d := len(h.store.snapshot()) - before; d != 2*n+40+1 {
		t.Fatalf("%d tombstones, want %d", d, 2*n+41)
	}
	if groups, _ := h.c.List(nil); len(groups) != 0 {
		t.Fatalf("%d groups left", len(groups))
	}
	if groups, _ := h.reload().c.List(nil); len(groups) != 0 {
		t.Fatalf("%d groups after a reload", len(groups))
	}
}

// Review finding 4: an OffsetCommit larger than the offsets topic's
// max.message.bytes is refused (INVALID_COMMIT_OFFSET_SIZE, as Kafka) before
// anything is built or appended.
func TestOversizedCommitRefused(t *testing.T) {
	h := newHarness(t)
	meta := strings.Repeat("m", h.cfg.MaxMetadataBytes)
	var parts []commitPartition
	for p := range 300 { // 300 × 4 KiB > 1 MiB
		parts = append(parts, commitPartition{topic: "t", partition: int32(p), offset: 7, metadata: &meta})
	}
	appends := h.store.appendCount()
	wantAll(t, "oversized commit", h.commit(commitReq("g", "", -1, 8, parts...)), kerr.InvalidCommitOffsetSize.Code)
	if d := h.store.appendCount() - appends; d != 0 {
		t.Fatalf("%d appends of an oversized commit", d)
	}
	if got, _ := h.fetch("g", "t/0"); got["t/0"].offset != -1 {
		t.Fatalf("offset of a refused commit: %+v", got)
	}
	// One that fits is taken.
	wantAll(t, "commit", h.commit(commitReq("g", "", -1, 8, parts[:200]...)), 0)
}

// Review finding 4: a group whose metadata (members' subscriptions and
// assignments) exceeds max.message.bytes cannot complete its rebalance:
// the leader's SyncGroup gets UNKNOWN_SERVER_ERROR, as in Kafka, and
// nothing is appended.
func TestOversizedGroupRefused(t *testing.T) {
	h := newHarness(t)
	big := kmsg.NewJoinGroupRequestProtocol()
	big.Name, big.Metadata = "range", make([]byte, 600<<10)
	r := h.join(joinReq("g", "", 5, big))
	r = h.join(joinReq("g", r.MemberID, 5, big))
	wantCode(t, "join", r.ErrorCode, 0)
	appends := h.store.appendCount()
	s := recv(t, h.syncAsync(syncReq("g", r.MemberID, r.Generation, map[string][]byte{r.MemberID: make([]byte, 600<<10)})))
	wantCode(t, "sync of an oversized group", s.ErrorCode, kerr.UnknownServerError.Code)
	if d := h.store.appendCount() - appends; d != 0 {
		t.Fatalf("%d appends of an oversized group", d)
	}
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance", st)
	}
}

// groupRecordSize bounds the record groupValue encodes, computed without
// encoding it.
func TestGroupRecordSizeBound(t *testing.T) {
	h := newHarness(t)
	staticGroup(t, h)
	h.joinOne("d", []byte("assignment"))
	for _, id := range []string{"g", "d"} {
		h.inspect(id, func(g *group) {
			batch := records.Build([]records.KV{{Key: groupKey(g.id), Value: groupValue(g)}}, 0)
			if got := batchOverhead + groupRecordSize(g); got < len(batch) || got > len(batch)+recordOverhead {
				t.Fatalf("group %s: estimated %d, encoded %d", id, got, len(batch))
			}
		})
	}
	batch := records.Build([]records.KV{{Key: offsetKey("g", "topic", 3), Value: offsetValue(Offset{Metadata: "meta"})}}, 0)
	if got := batchOverhead + offsetRecordSize("g", "topic", "meta"); got < len(batch) || got > len(batch)+recordOverhead {
		t.Fatalf("offset: estimated %d, encoded %d", got, len(batch))
	}
}

// Review finding 5: a JoinGroup that only gets MEMBER_ID_REQUIRED creates a
// group that must not stay in memory (Empty, no offsets, nothing stored):
// it goes once its pending member id expires, without a write. A stored
// empty group without offsets goes after a while too, with a tombstone.
func TestReviewGhostGroupsLinger(t *testing.T) {
	h := newHarness(t)
	for i := range 1000 {
		r := h.join(joinReq(fmt.Sprintf("ghost-%d", i), "", 5))
		wantCode(t, "join", r.ErrorCode, kerr.MemberIDRequired.Code)
	}
	appends := h.store.appendCount()
	h.tick(time.Second)
	if groups, _ := h.c.List(nil); len(groups) != 1000 {
		t.Fatalf("%d groups while their pending member ids are valid", len(groups))
	}
	h.tick(time.Hour)
	h.tick(24 * time.Hour)
	groups, _ := h.c.List(nil)
	t.Logf("a day later: %d groups listed, ghost-0 is %s", len(groups), h.state("ghost-0"))
	if len(groups) != 0 {
		t.Fatalf("%d never-joined groups still held a day later", len(groups))
	}
	if d := h.store.appendCount() - appends; d != 0 {
		t.Fatalf("%d writes for groups never written", d)
	}

	// A group that had members and no offsets: it goes after a while.
	id, _ := h.joinOne("was", nil)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "was", id
	wantCode(t, "leave", h.c.Leave(lv).ErrorCode, 0)
	h.tick(time.Minute)
	if s := h.state("was"); s != "Empty" {
		t.Fatalf("emptied group is %s", s)
	}
	h.tick(emptyGroupGrace)
	h.settle()
	if s := h.state("was"); s != "Dead" {
		t.Fatalf("empty group without offsets is %s after %v", s, emptyGroupGrace)
	}
	if d, ok := h.store.lastGroupRecord(t, "was"); !ok || d.meta != nil {
		t.Fatalf("no tombstone for the removed group: %+v", d)
	}
}

// countingHandler counts log records at Warn and above.
type countingHandler struct {
	slog.Handler
	n *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}

// Review finding 6: the warnings of refused or failed writes are rate
// limited per partition, not one per group per tick.
func TestWriteFailureWarningsRateLimited(t *testing.T) {
	var warns atomic.Int64
	h := newHarness(t, func(c *Config) {
		c.OffsetsRetention = time.Hour
		c.Logger = slog.New(countingHandler{slog.DiscardHandler, &warns})
	})
	for i := range 500 {
		wantAll(t, "commit", h.commit(commitReq(fmt.Sprintf("g%d", i), "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
	}
	h.clk.Advance(2 * time.Hour)
	h.store.mu.Lock()
	h.store.down = errStoreDown
	h.store.mu.Unlock()
	for range 20 {
		h.c.Tick()
	}
	if n := warns.Load(); n > 2 {
		t.Fatalf("%d warnings for 20 ticks of refused expiry writes", n)
	}
	if groups, _ := h.c.List(nil); len(groups) != 500 {
		t.Fatalf("%d groups left, want all 500 (their expiry was refused)", len(groups))
	}
	h.store.mu.Lock()
	h.store.down = nil
	h.store.mu.Unlock()
	h.c.Tick()
	h.settle()
	if groups, _ := h.c.List(nil); len(groups) != 0 {
		t.Fatalf("%d groups left after the retry", len(groups))
	}
}
