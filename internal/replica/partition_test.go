package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
)

// batch returns a minimal valid v2 batch of n records (empty bodies are
// enough for the log, which only reads headers).
func batch(n int) []byte {
	b := make([]byte, klog.BatchHeaderSize)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-klog.LogOverhead))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], ^uint32(0))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// single is the configuration of a partition with one replica, broker 1.
var single = LeaderConfig{Replicas: []int32{1}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 30 * time.Second}

func newPartition(t *testing.T, flushMessages int64) *Partition {
	t.Helper()
	cfg := klog.DefaultConfig()
	cfg.FS = klog.NewMemFS(1)
	cfg.FlushMessages = flushMessages
	l, err := klog.Open("/p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := New("t", 0, 1, l, 0)
	t.Cleanup(func() { p.Close(false) })
	return p
}

func TestAppendRequiresLeadership(t *testing.T) {
	p := newPartition(t, 1)
	if _, err := p.AppendAsLeader(batch(1)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append before becoming leader: got %v, want ErrNotLeader", err)
	}
	if err := p.BecomeLeader(3, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeLeader(2, 0, []int32{1}, single); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("older epoch: got %v, want ErrFencedLeaderEpoch", err)
	}
	if got := p.LeaderEpoch(); got != 3 {
		t.Fatalf("leader epoch: got %d, want 3", got)
	}
	info, err := p.AppendAsLeader(batch(2))
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 1 {
		t.Fatalf("offsets: got %d-%d, want 0-1", info.FirstOffset, info.LastOffset)
	}
	if e := p.Log().Epochs(); len(e) != 1 || e[0].Epoch != 3 || e[0].StartOffset != 0 {
		t.Fatalf("epoch cache: got %+v, want [{3 0}]", e)
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	p := newPartition(t, 1)
	if err := p.BecomeLeader(5, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		epoch int32
		want  error
	}{{-1, nil}, {5, nil}, {4, ErrFencedLeaderEpoch}, {6, ErrUnknownLeaderEpoch}} {
		if err := p.CheckLeaderEpoch(tt.epoch); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("epoch %d: got %v, want %v", tt.epoch, err, tt.want)
		}
	}
}

// In sync mode (flush.messages=1) nothing is visible before it is flushed,
// and the high watermark follows the flushed offset.
func TestHighWatermarkFollowsFlushInSyncMode(t *testing.T) {
	p := newPartition(t, 1)
	if err := p.BecomeLeader(0, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3)); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark before flush: got %d, want 0", hw)
	}
	if data, err := p.Read(0, 1<<20, true); err != nil || data.Len() != 0 {
		t.Fatalf("read above the high watermark: got %d bytes, %v; want none", data.Len(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitCommitted(ctx, 0, 3); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark after commit: got %d, want 3", hw)
	}
	if data, err := p.Read(0, 1<<20, true); err != nil || data.Len() != int64(len(batch(3))) {
		t.Fatalf("read below the high watermark: got %d bytes, %v", data.Len(), err)
	}
}

// In page-cache mode the high watermark moves with the LEO.
func TestHighWatermarkInPageCacheMode(t *testing.T) {
	p := newPartition(t, 1<<40)
	if err := p.BecomeLeader(0, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(4)); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark: got %d, want 4", hw)
	}
	if err := p.WaitLocal(0, 4); err != nil {
		t.Fatal(err)
	}
	if f := p.Log().FlushedOffset(); f != 0 {
		t.Fatalf("acks=1 in page-cache mode flushed: flushed offset %d, want 0", f)
	}
}

// A waiter parked on the partition wakes when the LEO moves (followers
// long-poll for it) and again when the high watermark moves.
func TestWaiterWakesOnHighWatermark(t *testing.T) {
	p := newPartition(t, 1)
	if err := p.BecomeLeader(0, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	w := NewWaiter()
	p.AddWaiter(w)
	defer p.RemoveWaiter(w)
	if _, err := p.AppendAsLeader(batch(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C:
	default:
		t.Fatal("not woken by the append")
	}
	if p.HighWatermark() != 0 {
		t.Fatal("high watermark moved before the flush")
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken by the high watermark advance")
	}
}

// Closing the partition fails its waiters instead of leaving them parked.
func TestCloseReleasesWaiters(t *testing.T) {
	p := newPartition(t, 1)
	if err := p.BecomeLeader(0, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.WaitCommitted(ctx, 0, 100) }()
	// The waiter cannot be satisfied (nothing was appended); Close must end it.
	for {
		p.mu.Lock()
		n := len(p.commitWaiters)
		p.mu.Unlock()
		if n == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("WaitCommitted returned early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if err := p.Close(false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
	if _, err := p.AppendAsLeader(batch(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: got %v, want ErrClosed", err)
	}
}

// A caught-up follower is proposed for the ISR only when the caller says
// it may join (not recovering from an unclean shutdown, not shutting
// down); until then the high watermark ignores it.
func TestFollowerFetchMayJoin(t *testing.T) {
	p := newPartition(t, 1)
	cfg := LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 30 * time.Second}
	if err := p.BecomeLeader(0, 0, []int32{1}, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3)); err != nil {
		t.Fatal(err)
	}
	if expand, err := p.FollowerFetch(2, -1, 3, time.Now(), false); err != nil || expand {
		t.Fatalf("caught-up follower that may not join: expand %v, err %v", expand, err)
	}
	if prop, ok := p.ProposedISR(); ok {
		t.Fatalf("proposed ISR %v for a follower that may not join", prop.ISR)
	}
	if expand, err := p.FollowerFetch(2, -1, 3, time.Now(), true); err != nil || !expand {
		t.Fatalf("caught-up follower that may join: expand %v, err %v", expand, err)
	}
	if prop, _ := p.ProposedISR(); len(prop.ISR) != 2 {
		t.Fatalf("proposed ISR %v, want [1 2]", prop.ISR)
	}
}

// A replica elected leader (epoch 1) that appends nothing before another
// replica takes over must drop that empty epoch when the new leader tells
// it the logs diverge at its LEO: otherwise it keeps reporting epoch 1 as
// its last fetched epoch, is told the same divergence, and never catches
// up (found by the container fault campaign).
func TestDivergenceAtLEODropsEmptyEpoch(t *testing.T) {
	p := newPartition(t, 1)
	if err := p.BecomeLeader(0, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(5)); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeLeader(1, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if pos, err := p.FetchPosition(); err != nil || pos.LastFetchedEpoch != 1 {
		t.Fatalf("last fetched epoch before the divergence: %d (%v), want 1 (the empty epoch)", pos.LastFetchedEpoch, err)
	}
	// The new leader's answer for epoch 1: its largest epoch at most 1 is
	// 0, which ends at 5, this replica's LEO.
	leo, err := p.TruncateToDivergence(2, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if pos, _ := p.FetchPosition(); leo != 5 || pos.Offset != 5 || pos.LastFetchedEpoch != 0 || pos.LeaderEpoch != 2 {
		t.Fatalf("after the divergence: LEO %d, fetch position %+v; want 5, offset 5, last epoch 0, leader epoch 2", leo, pos)
	}
}

// A follower's fetch is recorded only in the leader epoch it was sent in:
// a fetch checked in epoch 1 that reaches FollowerFetch after the replica
// followed, truncated and led again (epoch 3) must not count, or its
// offset, read from a log that went another way, could move the high
// watermark over records the follower does not have (found by review,
// issue 11).
func TestFollowerFetchChecksItsEpoch(t *testing.T) {
	p := newPartition(t, 1)
	cfg := LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 30 * time.Second}
	if err := p.BecomeLeader(3, 0, []int32{1, 2}, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3)); err != nil {
		t.Fatal(err)
	}
	if err := p.log.Flush(); err != nil { // the leader's own copy is durable
		t.Fatal(err)
	}
	for _, tc := range []struct {
		epoch int32
		want  error
	}{{1, ErrFencedLeaderEpoch}, {4, ErrUnknownLeaderEpoch}} {
		if _, err := p.FollowerFetch(2, tc.epoch, 3, time.Now(), true); !errors.Is(err, tc.want) {
			t.Fatalf("fetch sent in epoch %d, leader in 3: got %v, want %v", tc.epoch, err, tc.want)
		}
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d after fetches of other epochs, want 0", hw)
	}
	if _, err := p.FollowerFetch(2, 3, 3, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d after the follower's fetch in epoch 3, want 3", hw)
	}
}

// TestDeleteRecordsOnlyAsLeaderInEpoch: DeleteRecords moves the log start
// only while the replica leads in the epoch the caller saw, and only up to
// the high watermark; a replica that became a follower (or leads in
// another epoch) deletes nothing, so it never removes what the new
// leader keeps.
func TestDeleteRecordsOnlyAsLeaderInEpoch(t *testing.T) {
	p := newPartition(t, 1)
	cfg := LeaderConfig{Replicas: []int32{1}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 30 * time.Second}
	if err := p.BecomeLeader(3, 0, []int32{1}, cfg); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.AppendAsLeader(batch(2)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitCommitted(ctx, 3, 6); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 6 {
		t.Fatalf("high watermark %d, want 6", hw)
	}
	if _, err := p.DeleteRecords(2, 4); !errors.Is(err, ErrNotLeader) {
		t.Errorf("DeleteRecords in an older epoch: %v, want ErrNotLeader", err)
	}
	if _, err := p.DeleteRecords(3, 7); !errors.Is(err, klog.ErrOffsetOutOfRange) {
		t.Errorf("DeleteRecords above the high watermark: %v, want ErrOffsetOutOfRange", err)
	}
	if off, err := p.DeleteRecords(3, 2); err != nil || off != 2 || p.Log().StartOffset() != 2 {
		t.Fatalf("DeleteRecords(3, 2) = %d, %v; log start %d, want 2", off, err, p.Log().StartOffset())
	}
	if err := p.BecomeFollower(4, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteRecords(3, -1); !errors.Is(err, ErrNotLeader) {
		t.Errorf("DeleteRecords on a follower: %v, want ErrNotLeader", err)
	}
	if start := p.Log().StartOffset(); start != 2 {
		t.Errorf("a follower's log start moved to %d by DeleteRecords", start)
	}
}
