package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
)

// fetched returns batch(n) as a leader of epoch would have stored it at
// base: what a follower receives in a fetch response.
func fetched(base int64, n int, epoch int32) []byte {
	b := batch(n)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

// two is a partition replicated on brokers 1 (this one) and 2.
var two = LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: 30 * time.Second}

func newPartitionFS(t *testing.T, flushMessages int64) (*Partition, *klog.MemFS) {
	t.Helper()
	fs := klog.NewMemFS(1)
	cfg := klog.DefaultConfig()
	cfg.FS = fs
	cfg.FlushMessages = flushMessages
	l, err := klog.Open("/p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := New("t", 0, 1, l, 0)
	t.Cleanup(func() { p.Close(false) })
	return p, fs
}

// leadershipMovesAndComesBack: this replica leads epoch 1 and appends 5
// records that broker 2 never fetches; broker 2 takes over in epoch 2 with
// 8 records of its own; this replica follows, truncates at the divergence,
// fetches those 8 (its high watermark passes 5) and leads again in epoch 3.
func leadershipMovesAndComesBack(t *testing.T, p *Partition) Appended {
	t.Helper()
	if err := p.BecomeLeader(1, 0, []int32{1, 2}, two); err != nil {
		t.Fatal(err)
	}
	a, err := p.AppendAsLeader(batch(5))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	// Broker 2's answer for epoch 1: below its earliest epoch (2, from 0).
	if leo, err := p.TruncateToDivergence(2, 1, 0); err != nil || leo != 0 {
		t.Fatalf("truncate at the divergence: LEO %d, %v; want 0", leo, err)
	}
	if err := p.AppendFromLeader(2, fetched(0, 8, 2), 8, 0); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 8 {
		t.Fatalf("high watermark after following broker 2: %d, want 8", hw)
	}
	if err := p.BecomeLeader(3, 2, []int32{1, 2}, two); err != nil {
		t.Fatal(err)
	}
	return a
}

// Issue 10, hole 1: a produce whose records were truncated away while its
// wait had not begun (it waits behind another partition's) must not be
// acknowledged because the high watermark, now made of another leader's
// records, passed its offsets: no replica has them.
func TestWaitAfterLeadershipMovedFails(t *testing.T) {
	for _, acks := range []string{"all", "1"} {
		t.Run("acks="+acks, func(t *testing.T) {
			p, _ := newPartitionFS(t, 1)
			a := leadershipMovesAndComesBack(t, p)
			if a.LeaderEpoch != 1 || a.LastOffset != 4 {
				t.Fatalf("appended %+v, want offsets 0-4 in epoch 1", a)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var err error
			if acks == "all" {
				err = p.WaitCommitted(ctx, a.LeaderEpoch, a.LastOffset+1)
			} else {
				err = p.WaitLocal(a.LeaderEpoch, a.LastOffset+1)
			}
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("wait for records truncated by a leadership change: %v, want ErrNotLeader", err)
			}
		})
	}
}

// A writer bound to one leader epoch appends nothing in another.
func TestAppendInEpoch(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeLeader(3, 0, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendInEpoch(2, batch(2)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append for epoch 2 while leading in 3: %v, want ErrNotLeader", err)
	}
	if leo := p.Log().EndOffset(); leo != 0 {
		t.Fatalf("a refused append left %d records", leo)
	}
	a, err := p.AppendInEpoch(3, batch(2))
	if err != nil || a.LeaderEpoch != 3 || a.LastOffset != 1 {
		t.Fatalf("append in the epoch led: %+v, %v", a, err)
	}
}

// A wait parked when the replica stops leading fails at once, and so does
// one that begins while it follows.
func TestWaitParkedAcrossLeadershipChangeFails(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeLeader(1, 0, []int32{1, 2}, two); err != nil {
		t.Fatal(err)
	}
	a, err := p.AppendAsLeader(batch(5))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.WaitCommitted(context.Background(), a.LeaderEpoch, a.LastOffset+1) }()
	// The wait flushes, finds the high watermark short (broker 2 has not
	// fetched) and parks on a waiter.
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		p.mu.Lock()
		parked := len(p.commitWaiters)
		p.mu.Unlock()
		if parked == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wait did not park within 10s")
		}
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("parked wait after the replica became follower: %v, want ErrNotLeader", err)
	}
	if err := p.WaitCommitted(context.Background(), a.LeaderEpoch, a.LastOffset+1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait begun while following: %v, want ErrNotLeader", err)
	}
}

// Issue 10, hole 2: an answer fetched while following in one epoch never
// truncates or appends to the replica once it leads (or follows in another
// epoch): a DivergingEpoch from the old leader would otherwise cut the new
// leader's own epoch out of its log.
func TestFollowerOperationsFencedByRoleChange(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendFromLeader(2, fetched(0, 5, 2), 5, 0); err != nil {
		t.Fatal(err)
	}
	// The fetcher sends a fetch in epoch 2; meanwhile the replica is made
	// leader of epoch 3 and appends.
	if err := p.BecomeLeader(3, 1, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	a, err := p.AppendAsLeader(batch(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCommitted(context.Background(), a.LeaderEpoch, a.LastOffset+1); err != nil {
		t.Fatal(err)
	}
	// The stale answers arrive.
	if _, err := p.TruncateToDivergence(2, 1, 0); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("stale divergence answer: %v, want ErrRoleChanged", err)
	}
	if err := p.AppendFromLeader(2, fetched(5, 2, 2), 7, 0); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("stale records: %v, want ErrRoleChanged", err)
	}
	if err := p.TruncateFullyAndStartAt(2, 100); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("stale out-of-range answer: %v, want ErrRoleChanged", err)
	}
	if _, err := p.TruncateAfterOutOfRange(2, 0); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("stale out-of-range answer: %v, want ErrRoleChanged", err)
	}
	if leo, hw, last := p.Log().EndOffset(), p.HighWatermark(), p.Log().LatestEpoch(); leo != 8 || hw != 8 || last != 3 {
		t.Fatalf("leader after stale follower answers: LEO %d, HW %d, latest epoch %d; want 8, 8, 3", leo, hw, last)
	}
	// Following in a newer epoch of the same leader fences too.
	if err := p.BecomeFollower(4, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TruncateToDivergence(2, 1, 0); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("answer of an older follower epoch: %v, want ErrRoleChanged", err)
	}
	if _, err := p.TruncateToDivergence(4, -1, -1); err == nil {
		t.Fatal("a divergence answer without an epoch was accepted")
	}
}

// A role change waits for a follower operation in progress: it cannot fall
// between the operation's epoch check and its writes.
func TestRoleChangeWaitsForFollowerOperation(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendFromLeader(2, append(fetched(0, 3, 2), fetched(3, 2, 2)...), 0, 0); err != nil {
		t.Fatal(err)
	}
	checked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	testHookFollowerChecked = func() {
		close(checked)
		<-release
	}
	defer func() { unblock(); testHookFollowerChecked = nil }()
	truncated := make(chan error, 1)
	go func() {
		// A DivergingEpoch answer of the epoch-2 leader: cut to 3.
		_, err := p.TruncateToDivergence(2, 2, 3)
		truncated <- err
	}()
	<-checked
	became := make(chan error, 1)
	go func() { became <- p.BecomeLeader(3, 1, []int32{1}, single) }()
	select {
	case err := <-became:
		t.Fatalf("the role change completed between a follower operation's check and its act (%v)", err)
	case <-time.After(200 * time.Millisecond):
		// Not completed in this time: a fenced role change waits.
	}
	unblock()
	if err := <-truncated; err != nil {
		t.Fatal(err)
	}
	if err := <-became; err != nil {
		t.Fatal(err)
	}
	// The truncation happened first, then the new epoch began at its end.
	if start, end := p.Log().EndOffsetForEpoch(2); start != 2 || end != 3 || p.Log().LatestEpoch() != 3 {
		t.Fatalf("epoch 2 ends at %d (found %d), latest epoch %d; want 3, 2, 3", end, start, p.Log().LatestEpoch())
	}
}

// The position a fetch reports and the epoch its answer is applied in are
// read together: a position read in one follower epoch is never paired with
// a later epoch (review finding: the replica led epoch 3 and appended in
// between, and the epoch-4 leader's answer for the epoch-2 position was
// applied over those records). A replica that does not follow reports none.
func TestFetchPositionCarriesItsEpoch(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendFromLeader(2, fetched(0, 5, 2), 5, 0); err != nil {
		t.Fatal(err)
	}
	pos, err := p.FetchPosition()
	if err != nil || pos != (FetchPos{LeaderEpoch: 2, Offset: 5, LastFetchedEpoch: 2}) {
		t.Fatalf("position while following in epoch 2: %+v, %v", pos, err)
	}
	if err := p.BecomeLeader(3, 1, []int32{1}, single); err != nil {
		t.Fatal(err)
	}
	if _, err := p.FetchPosition(); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("position of a leader: %v, want ErrRoleChanged", err)
	}
	if _, err := p.AppendAsLeader(batch(3)); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeFollower(4, 2); err != nil {
		t.Fatal(err)
	}
	// The epoch-2 position is stale: its answer is refused in epoch 4.
	if err := p.AppendFromLeader(pos.LeaderEpoch, fetched(5, 3, 4), 8, 0); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("answer to the epoch-2 position applied in epoch 4: %v", err)
	}
	if pos, err := p.FetchPosition(); err != nil || pos != (FetchPos{LeaderEpoch: 4, Offset: 8, LastFetchedEpoch: 3}) {
		t.Fatalf("position while following in epoch 4: %+v, %v; want offset 8 after epoch 3", pos, err)
	}
}

// Issue 10, hole 4: an ISR change whose write had an unknown outcome may be
// in etcd, so it stays pending (the high watermark keeps counting the
// joining member) until a stored state with a newer partition epoch is
// seen, even if a later attempt fails for sure; and a change applies only
// to the partition epoch it was built on.
func TestISRProposalKeptUntilOutcomeKnown(t *testing.T) {
	p, _ := newPartitionFS(t, 100) // page cache: the leader's LEO counts at once
	if err := p.BecomeLeader(1, 5, []int32{1}, two); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(10)); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark of a lone leader: %d, want 10", hw)
	}
	// Broker 2 catches up and is proposed to join, on partition epoch 5.
	if expand, err := p.FollowerFetch(2, -1, 10, time.Now(), true); err != nil || !expand {
		t.Fatalf("caught-up follower: expand %v, %v", expand, err)
	}
	prop, _ := p.ProposedISR()
	if len(prop.ISR) != 2 || prop.LeaderEpoch != 1 || prop.PartitionEpoch != 5 || prop.OutcomeUnknown {
		t.Fatalf("proposal %+v; want [1 2] in leader epoch 1 on partition epoch 5", prop)
	}
	if retry := p.ISRProposalFailed(5, true); !retry {
		t.Fatal("a proposal whose write had an unknown outcome is not retried")
	}
	if prop, _ := p.ProposedISR(); !prop.OutcomeUnknown {
		t.Fatalf("proposal after an unknown outcome: %+v, want OutcomeUnknown (to be settled, not written again)", prop)
	}
	// A later attempt fails for sure (the stored state moved on: perhaps
	// the first write landed); broker 2 may be in etcd's ISR.
	if retry := p.ISRProposalFailed(5, false); !retry {
		t.Fatal("a proposal that may be stored was dropped after a definite failure")
	}
	if _, err := p.AppendAsLeader(batch(4)); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark passed a member that may be in the stored ISR: %d, want 10", hw)
	}
	// A failure report for another partition epoch changes nothing.
	if retry := p.ISRProposalFailed(4, false); retry {
		t.Fatal("retry of a proposal of another partition epoch")
	}
	// The stored state arrives: partition epoch 6 with broker 2.
	if err := p.BecomeLeader(1, 6, []int32{1, 2}, two); err != nil {
		t.Fatal(err)
	}
	if prop, ok := p.ProposedISR(); ok {
		t.Fatalf("after the stored state of partition epoch 6: proposal %+v, want none", prop)
	}
	// A state that is not newer is ignored.
	if err := p.BecomeLeader(1, 6, []int32{1}, two); err != nil {
		t.Fatal(err)
	}
	if got := p.ISR(); len(got) != 2 {
		t.Fatalf("ISR after a repeated partition epoch: %v, want [1 2]", got)
	}
	// A proposal that surely failed, never with an unknown outcome, is
	// dropped.
	if !p.MaybeShrinkISR(time.Now().Add(time.Minute)) {
		t.Fatal("no shrink proposed for a follower that stopped fetching")
	}
	if retry := p.ISRProposalFailed(6, false); retry {
		t.Fatal("a proposal that surely failed is retried")
	}
	if prop, ok := p.ProposedISR(); ok {
		t.Fatalf("proposal after a sure failure: %+v, want none", prop)
	}
}

// Issue 10, hole 5: a follower reports as its fetch position (which the
// leader counts as durable) only what is on disk: a tail appended as leader
// just before it became follower is flushed first, and a failed flush
// reports no position.
func TestFetchPositionOnlyDurable(t *testing.T) {
	p, fs := newPartitionFS(t, 1)
	if err := p.BecomeLeader(1, 0, []int32{1, 2}, two); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(5)); err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if f := p.Log().FlushedOffset(); f != 0 {
		t.Fatalf("flushed before the fetch: %d, want 0", f)
	}
	pos, err := p.FetchPosition()
	if err != nil {
		t.Fatal(err)
	}
	if f := p.Log().FlushedOffset(); pos.Offset != 5 || f < pos.Offset || pos.LeaderEpoch != 2 {
		t.Fatalf("fetch position %+v with %d flushed: reported more than is durable", pos, f)
	}
	if err := p.AppendFromLeader(2, fetched(5, 3, 2), 5, 0); err != nil {
		t.Fatal(err)
	}
	// A later append is left unflushed by a failed fsync.
	fs.FailNextSync(".log", errors.New("injected sync failure"))
	if err := p.AppendFromLeader(2, fetched(8, 2, 2), 8, 0); err == nil {
		t.Fatal("append whose flush failed succeeded")
	}
	if pos, err := p.FetchPosition(); err == nil {
		t.Fatalf("fetch position %+v reported from a log whose flush failed (flushed %d)", pos, p.Log().FlushedOffset())
	}
}

// An append wakes the fetches parked for new data, not the commit waits
// (acks=all produces, group writes), which only the high watermark, the ISR
// or the role can satisfy or fail: with thousands of them parked, waking
// all on every append costs the square of their number.
func TestAppendWakesOnlyFetches(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeLeader(1, 0, []int32{1, 2}, two); err != nil {
		t.Fatal(err)
	}
	fetch, commit := NewWaiter(), NewWaiter()
	p.AddWaiter(fetch)
	p.addWaiter(commit, true)
	if _, err := p.AppendAsLeader(batch(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fetch.C:
	default:
		t.Fatal("a parked fetch was not woken by an append")
	}
	select {
	case <-commit.C:
		t.Fatal("a commit wait was woken by an append that moved only the LEO")
	default:
	}
	// Broker 2 fetches everything: the high watermark moves, both wake.
	if _, err := p.FollowerFetch(2, -1, 1, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-commit.C:
	default:
		t.Fatalf("a commit wait was not woken when the high watermark moved to %d", p.HighWatermark())
	}
}

// A follower refuses fetched batches its leader cannot have held: a batch
// of an epoch later than the leader's, or epochs going down (the leader's
// sendfile'd response rewritten under the socket after it truncated and
// took its new leader's batches; found by review, issue 11). Nothing is
// appended, and the same offsets are taken when they come right.
func TestAppendFromLeaderRefusesImpossibleEpochs(t *testing.T) {
	p := newPartition(t, 1)
	if err := p.BecomeFollower(6, 2); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		batches []byte
	}{
		{"a later epoch", fetched(0, 2, 7)},
		{"the new leader's batches before the old ones", concatBatches(fetched(0, 2, 7), fetched(2, 4, 6))},
		{"epochs going down", concatBatches(fetched(0, 2, 6), fetched(2, 4, 5))},
	} {
		if err := p.AppendFromLeader(6, tt.batches, 6, 0); !errors.Is(err, ErrImpossibleEpochs) {
			t.Errorf("%s: %v, want ErrImpossibleEpochs", tt.name, err)
		}
		if leo := p.Log().EndOffset(); leo != 0 {
			t.Fatalf("%s: LEO %d after a refused append, want 0", tt.name, leo)
		}
	}
	if err := p.AppendFromLeader(6, concatBatches(fetched(0, 2, 5), fetched(2, 4, 6)), 6, 0); err != nil {
		t.Fatalf("batches of epochs 5 and 6 from the leader of epoch 6: %v", err)
	}
	if leo := p.Log().EndOffset(); leo != 6 {
		t.Fatalf("LEO %d, want 6", leo)
	}
}

func concatBatches(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// A fetch answer moves the follower's log start up to the leader's (after a
// DeleteRecords or retention there), but never past its own high
// watermark, and an answer fetched in an epoch the replica no longer
// follows in moves nothing.
func TestAppendFromLeaderFollowsLogStart(t *testing.T) {
	p, _ := newPartitionFS(t, 1)
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendFromLeader(2, fetched(0, 8, 2), 4, 3); err != nil {
		t.Fatal(err)
	}
	if s := p.Log().StartOffset(); s != 3 {
		t.Fatalf("log start %d, want the leader's 3", s)
	}
	if err := p.AppendFromLeader(2, nil, 5, 7); err != nil {
		t.Fatal(err)
	}
	if s := p.Log().StartOffset(); s != 5 {
		t.Fatalf("log start %d, want 5: the leader's 7, bounded by the high watermark", s)
	}
	if err := p.BecomeFollower(3, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendFromLeader(2, nil, 8, 8); !errors.Is(err, ErrRoleChanged) {
		t.Fatalf("answer of epoch 2 while following in 3: %v, want ErrRoleChanged", err)
	}
	if s := p.Log().StartOffset(); s != 5 {
		t.Fatalf("log start %d after a stale answer, want 5", s)
	}
}
