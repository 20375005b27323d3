package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tests of the second review of issue 16's rework: a group's dirty mark
// (its membership in memory may not be the log's) is cleared only by the
// commit of a write of its current membership.

func leaveAll(h *harness, group string, instances ...string) *kmsg.LeaveGroupResponse {
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version, lv.Group = 3, group
	for _, in := range instances {
		m := kmsg.NewLeaveGroupRequestMember()
		m.InstanceID = kmsg.StringPtr(in)
		lv.Members = append(lv.Members, m)
	}
	return h.c.Leave(lv)
}

// A metadata write W1 is in flight; a later metadata write W2 (the group
// emptied) is refused at append, marking the group dirty. W1's success
// must not clear the mark (it did when a refused write did not count in
// metaSeq): Tick rewrites the group and a reload agrees with memory.
func TestGroupDirtyNotClearedByEarlierInFlightWrite(t *testing.T) {
	h := newHarness(t)
	staticGroup(t, h)
	entered, release := h.store.holdNext()
	defer release()
	jb := h.joinAsync(staticJoinReq("g", "", "b"), "b") // W1: b's replacement, commit held
	recv(t, entered)
	h.store.fail(errStoreDown) // W2 (the emptied group's metadata) is refused
	resp := leaveAll(h, "g", "a", "b")
	for _, m := range resp.Members {
		wantCode(t, "leave", m.ErrorCode, 0)
	}
	dirty := false
	h.inspect("g", func(g *group) { dirty = g.metaDirty })
	t.Logf("after the refused write: state %s, dirty %v", h.state("g"), dirty)
	release()
	recv(t, jb)
	h.settle()
	h.inspect("g", func(g *group) { dirty = g.metaDirty })
	t.Logf("after W1 committed: state %s, dirty %v", h.state("g"), dirty)
	for range 5 {
		h.tick(time.Second)
		h.settle()
	}
	h2 := h.reload()
	t.Logf("memory: %s gen %d; after a reload: %s gen %d", h.state("g"), h.generation("g"), h2.state("g"), h2.generation("g"))
	if h2.state("g") != h.state("g") || h2.generation("g") != h.generation("g") {
		t.Fatalf("memory (%s, gen %d) and a reload (%s, gen %d) disagree after Tick: the dirty group was never rewritten",
			h.state("g"), h.generation("g"), h2.state("g"), h2.generation("g"))
	}
}

// Issue 16 #4's scenario through the same hole: b's replacement R1 times
// out and is reverted in memory; the revert's write is refused (dirty);
// a's replacement R2, appended after R1, then commits. It must not clear
// the dirty mark (it did, and metaWriting stayed set, so Tick never wrote
// the revert): the log kept R1 (b's old member id fenced) while memory
// accepted b's old id, and after a failover b's old member was fenced.
func TestStaticRevertDirtyNotClearedByOtherReplacement(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CommitTimeout = 300 * time.Millisecond })
	a, b, gen := staticGroup(t, h)
	entered1, release1 := h.store.holdNext()
	defer release1()
	jb := h.joinAsync(staticJoinReq("g", "", "b"), "b") // R1
	recv(t, entered1)
	time.Sleep(150 * time.Millisecond)
	entered2, release2 := h.store.holdNext()
	defer release2()
	ra := staticJoinReq("g", "", "a")
	ra.Version = 9
	ja := h.joinAsync(ra, "a") // R2 (a leads: v9, SkipAssignment)
	recv(t, entered2)
	h.store.fail(errStoreDown) // the revert's write is refused
	rb := recv(t, jb)
	t.Logf("b's replacement: %s", errName(rb.ErrorCode))
	release2()
	rA := recv(t, ja)
	wantCode(t, "a's replacement", rA.ErrorCode, 0)
	h.settle()
	for range 3 {
		h.tick(time.Second)
		h.settle()
	}
	wantCode(t, "b's old id in memory", heartbeat(h, "g", b, gen, "b"), 0)
	h2 := h.reload()
	code := heartbeat(h2, "g", b, gen, "b")
	t.Logf("b's old id after a reload: %s (a was %s)", errName(code), a)
	wantCode(t, "b's old id after a reload", code, 0)
}
