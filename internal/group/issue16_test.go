package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Issue 16: the expiry of an empty group's offsets must never remove a
// commit acknowledged while the expiry's tombstones were being written
// (neither from memory nor, by a tombstone landing after it, from the
// log).
func TestIssue16ExpiryKeepsConcurrentCommit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = time.Hour })
	wantAll(t, "first commit", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 1})), 0)
	h.clk.Advance(h.cfg.OffsetsRetention + time.Minute)
	entered, release := h.store.holdNext()
	defer release()
	ticked := make(chan struct{})
	go func() { h.c.Tick(); close(ticked) }()
	recv(t, entered) // the expiry's tombstones are being written
	// A simple consumer commits meanwhile, and is acknowledged.
	wantAll(t, "commit during the expiry", h.commit(commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 5})), 0)
	release()
	recv(t, ticked)
	h.settle()
	if got, code := h.fetch("g", "t/0"); code != 0 || got["t/0"].offset != 5 {
		t.Fatalf("after the expiry: offset %+v (error %s), want the acknowledged 5", got, errName(code))
	}
	h2 := h.reload()
	if got, code := h2.fetch("g", "t/0"); code != 0 || got["t/0"].offset != 5 {
		t.Fatalf("after a reload: offset %+v (error %s), want the acknowledged 5", got, errName(code))
	}
}

// Issue 16: a slow __consumer_offsets partition must not stall the
// timers: Tick returns while an expiry's write waits, other groups'
// sessions still expire, and a group has one expiry write in flight at
// a time.
func TestIssue16SlowExpiryDoesNotStallTimers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = time.Hour; c.OffsetsRetention = time.Hour })
	wantAll(t, "commit a/0", h.commit(commitReq("a", "", -1, 8, commitPartition{topic: "t", partition: 0, offset: 1})), 0)
	id, gen := h.joinOne("b", nil)
	h.clk.Advance(30 * time.Minute)
	wantAll(t, "commit a/1", h.commit(commitReq("a", "", -1, 8, commitPartition{topic: "t", partition: 1, offset: 1})), 0)
	h.clk.Advance(31 * time.Minute) // a/0 expired, a/1 not yet
	wantCode(t, "heartbeat", heartbeat(h, "b", id, gen), 0)
	entered, release := h.store.holdNext()
	defer release()
	appends := h.store.appendCount()
	ticked := make(chan struct{})
	go func() { h.c.Tick(); close(ticked) }()
	recv(t, entered)
	recv(t, ticked) // Tick did not wait for the write
	// b's member stops heartbeating: its session expires while a's
	// expiry write still waits; a/1 expires too, but waits its turn.
	h.clk.Advance(31 * time.Minute)
	ticked = make(chan struct{})
	go func() { h.c.Tick(); close(ticked) }()
	recv(t, ticked)
	if s := h.state("b"); s != "Empty" {
		t.Fatalf("b's state %s, want Empty (its only member's session expired)", s)
	}
	// The group's metadata (b emptied) was written; no second expiry
	// write for a.
	if n := h.store.appendCount() - appends; n != 2 {
		t.Fatalf("%d writes, want a's first expiry and b's metadata", n)
	}
	release()
	h.settle()
	h.tick(time.Second)
	h.settle()
	waitFor(t, "a to expire", func() bool { return h.state("a") == "Dead" })
}

// Issue 16: a static member's replacement whose write fails is reverted,
// as in Kafka: the replaced member id stays valid, the new one is
// unknown, and a reload agrees.
func TestIssue16StaticReplacementRevertedOnFailedWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(h *harness) (release func())
	}{
		{"append refused", func(h *harness) func() { h.store.fail(errStoreDown); return func() {} }},
		{"commit timed out", func(h *harness) func() { _, release := h.store.hold(); return release }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.CommitTimeout = 20 * time.Millisecond })
			a, b, gen := staticGroup(t, h)
			release := tc.fail(h)
			r := h.join(staticJoinReq("g", "", "b"))
			if r.ErrorCode == 0 {
				t.Fatalf("replacement answered without error although its write failed: %+v", r)
			}
			release()
			h.settle()
			wantCode(t, "replaced member's heartbeat", heartbeat(h, "g", b, gen, "b"), 0)
			wantCode(t, "leader's heartbeat", heartbeat(h, "g", a, gen, "a"), 0)
			if r.MemberID != "" && r.MemberID != b {
				wantCode(t, "failed replacement's heartbeat", heartbeat(h, "g", r.MemberID, gen, "b"), kerr.FencedInstanceID.Code)
			}
			h2 := h.reload()
			wantCode(t, "replaced member's heartbeat after a reload", heartbeat(h2, "g", b, gen, "b"), 0)
		})
	}
}

// Issue 16: a write appended in one leader epoch is not acknowledged once
// the partition has been led by another broker meanwhile (A→B→A), even if
// the offset it was appended at is committed again: the record may have
// been truncated away.
func TestIssue16WriteFencedByLeaderEpoch(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = time.Hour })
	entered, release := h.store.holdNext()
	defer release()
	done := make(chan map[string]int16, 1)
	go func() {
		done <- commitCodes(h.c.CommitOffsets(context.Background(), commitReq("g", "", -1, 8, commitPartition{topic: "t", offset: 5})))
	}()
	recv(t, entered)
	// Another broker leads in epoch 2 (this one's uncommitted tail is
	// truncated), then this one again in epoch 3.
	h.store.moveLeadership(3, 0)
	release()
	codes := recv(t, done)
	h.c.Elected(0, 3, 1, h.store)
	h.waitLoaded(0)
	got, _ := h.fetch("g", "t/0")
	if codes["t/0"] == 0 && got["t/0"].offset != 5 {
		t.Fatalf("commit acknowledged, then offset %d", got["t/0"].offset)
	}
	wantCode(t, "commit appended in a past epoch", codes["t/0"], kerr.NotCoordinator.Code)
}
