package group

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Writes that can never be appended are not tried again at every tick
// (second review of issue 16, hole 4).

// A dirty Stable group whose metadata no longer fits a batch (the
// partition's max.message.bytes was lowered) rebalances, and the
// rebalance's write of its new membership clears the mark; it was refused
// at every tick, for ever.
func TestGroupMetadataTooLargeRebalances(t *testing.T) {
	h := newHarness(t)
	id, gen := h.joinOne("g", bytes.Repeat([]byte{1}, 4000))
	h.settle()
	h.store.mu.Lock()
	h.store.maxBatch = 2048
	h.store.mu.Unlock()
	h.inspect("g", func(g *group) { markDirtyLocked(g) })
	h.tick(time.Second)
	h.settle()
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("a dirty group too large to write: %s, want PreparingRebalance", st)
	}
	wantCode(t, "heartbeat", heartbeat(h, "g", id, gen), kerr.RebalanceInProgress.Code)
	r := h.join(joinReq("g", id, 5))
	wantCode(t, "rejoin", r.ErrorCode, 0)
	s := recv(t, h.syncAsync(syncReq("g", id, r.Generation, map[string][]byte{id: {2}})))
	wantCode(t, "sync", s.ErrorCode, 0)
	h.settle()
	dirty := true
	h.inspect("g", func(g *group) { dirty = g.metaDirty })
	if dirty || h.state("g") != "Stable" {
		t.Fatalf("after the rebalance: %s, dirty %v", h.state("g"), dirty)
	}
	h2 := h.reload()
	wantCode(t, "heartbeat after a reload", heartbeat(h2, "g", id, r.Generation), 0)
}

// A group whose last offset tombstone and group tombstone do not fit one
// batch together is deleted in two (the group tombstone was reserved room
// in every piece, so a piece of one large tombstone plus the group's was
// too large, and the deletion refused for ever).
func TestGroupTombstoneSplitFromLastOffsets(t *testing.T) {
	for _, how := range []string{"delete", "expiry"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.OffsetsRetention = time.Hour })
			id := strings.Repeat("g", 20000)
			topic := strings.Repeat("t", maxTopicName)
			wantAll(t, "commit", h.commit(commitReq(id, "", -1, 8, commitPartition{topic: topic, offset: 1})), 0)
			h.settle()
			h.store.mu.Lock()
			h.store.maxBatch = batchOverhead + tombstoneSize(id, topic) + 100
			h.store.mu.Unlock()
			if how == "delete" {
				got := h.c.Delete(context.Background(), []string{id})
				wantCode(t, "delete", got[0].ErrorCode, 0)
			} else {
				h.tick(2 * time.Hour)
				h.settle()
			}
			if st := h.state(id); st != "Dead" {
				t.Fatalf("the group is still there: %s", st)
			}
			if st := h.reload().state(id); st != "Dead" {
				t.Fatalf("after a reload: %s", st)
			}
		})
	}
}
