package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/group"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// The offsets store appends and acknowledges a coordinator's writes only
// in the coordinator's leader epoch (issue 16): after the partition was
// led elsewhere and came back (A→B→A), a write of the old epoch is
// refused, and one appended in it is not acknowledged even once the high
// watermark passes its offsets.
func TestOffsetsStoreFencedByLeaderEpoch(t *testing.T) {
	p := newOffsetsReplica(t)
	partitionEpoch := int32(0)
	lead := func(epoch int32, isr []int32) {
		t.Helper()
		partitionEpoch++ // every stored change of the ISR is a new partition epoch
		err := p.BecomeLeader(epoch, partitionEpoch, isr, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
	}
	s := offsetsStore{lp: &localPartition{Partition: p}}
	recs := []records.KV{{Key: []byte("k"), Value: []byte("v")}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lead(1, []int32{1})
	end, err := s.Append(1, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitCommitted(ctx, 1, end); err != nil {
		t.Fatalf("write in the current epoch: %v", err)
	}
	// Broker 2 joins the ISR: a write waits for it.
	lead(1, []int32{1, 2})
	end, err = s.Append(1, recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(2, recs); !errors.Is(err, group.ErrNotLeader) {
		t.Fatalf("append in an epoch not led: %v, want group.ErrNotLeader", err)
	}
	// Broker 2 leads in epoch 2, then this one again in epoch 3, alone.
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	lead(3, []int32{1})
	if _, err := s.Append(1, recs); !errors.Is(err, group.ErrNotLeader) {
		t.Fatalf("append of epoch 1 while leading in 3: %v, want group.ErrNotLeader", err)
	}
	e3, err := s.Append(3, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitCommitted(ctx, 3, e3); err != nil {
		t.Fatalf("write in epoch 3: %v", err)
	}
	if err := s.WaitCommitted(ctx, 1, end); !errors.Is(err, group.ErrNotLeader) {
		t.Fatalf("write of epoch 1 after the high watermark passed it in epoch 3: %v, want group.ErrNotLeader", err)
	}
}

// newOffsetsReplica is a replica of __consumer_offsets partition 0 on broker
// 1 over an in-memory log, closed when the test ends.
func newOffsetsReplica(t *testing.T) *replica.Partition {
	t.Helper()
	cfg := klog.DefaultConfig()
	cfg.FS = klog.NewMemFS(1)
	l, err := klog.Open("/p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := replica.New(group.OffsetsTopic, 0, 1, l, 0)
	t.Cleanup(func() { p.Close(false) })
	return p
}
