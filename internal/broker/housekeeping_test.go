package broker

import (
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// Issue 10, hole 7: in fsync mode a tail left unflushed (its produce's
// connection closed before the flush, or it was appended just before the
// replica stopped leading) is flushed by housekeeping, so the high
// watermark is not pinned below it until the next produce, and a new
// leader does not keep answering consumers REPLICA_NOT_AVAILABLE.
func TestHousekeepingFlushesFsyncTail(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	m := testPartitionManager(cfg)
	settings := resolveTopicSettings(nil, nil)
	lp, err := m.open(topicPartition{"t", 0}, meta.NewTopicID(), settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lp.Close(false) })
	if !lp.Log().SyncOnAppend() {
		t.Fatal("the default topic is not in fsync mode")
	}
	self := []int32{cfg.NodeID}
	if err := lp.BecomeLeader(0, 0, self, replica.LeaderConfig{Replicas: self, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := lp.AppendAsLeader(records.Build([]records.KV{{Key: []byte("k"), Value: []byte("v")}}, time.Now().UnixMilli())); err != nil {
		t.Fatal(err)
	}
	// Nobody waits for this append (its connection is gone).
	if hw, flushed := lp.HighWatermark(), lp.Log().FlushedOffset(); hw != 0 || flushed != 0 {
		t.Fatalf("before housekeeping: HW %d, flushed %d; want 0, 0", hw, flushed)
	}
	m.housekeepRound(time.Now(), false, false)
	if hw, flushed, leo := lp.HighWatermark(), lp.Log().FlushedOffset(), lp.Log().EndOffset(); flushed != leo || hw != leo {
		t.Fatalf("after housekeeping: HW %d, flushed %d, LEO %d; want both at the LEO", hw, flushed, leo)
	}
}

// testPartitionManager is a partition manager of a broker with cfg that
// runs nothing but what a test calls.
func testPartitionManager(cfg Config) *partitionManager {
	b := &Broker{cfg: cfg, logger: quietLogger()}
	b.isr = newISRUpdater(b)
	return newPartitionManager(b)
}
