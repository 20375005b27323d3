package replica

import (
	"errors"
	"fmt"

	klog "github.com/samsa-io/samsa/internal/log"
)

// ErrUnknownReplica: a fetch as follower from a broker that is not a replica.
var ErrUnknownReplica = errors.New("replica: fetch from a broker that is not a replica of the partition")

// ErrImpossibleEpochs: fetched batches whose leader epochs the leader
// cannot have held (see AppendFromLeader).
var ErrImpossibleEpochs = errors.New("replica: fetched batches with leader epochs the leader cannot have")

// BecomeFollower makes the replica a follower of leader (-1: none known,
// the partition is offline) in epoch. Its log is truncated later, at the
// divergence point the leader reports (TruncateToDivergence), never blindly
// to the high watermark.
func (p *Partition) BecomeFollower(epoch, leader int32) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if epoch < p.leaderEpoch.Load() {
		return fmt.Errorf("%w: following in epoch %d, already in %d", ErrFencedLeaderEpoch, epoch, p.leaderEpoch.Load())
	}
	if p.role == RoleFollower && epoch == p.leaderEpoch.Load() && leader == p.leader {
		return nil
	}
	p.role = RoleFollower
	p.leader = leader
	p.isr, p.followers, p.pendingISR, p.pendingUnknown = nil, nil, nil, false
	p.leaderEpoch.Store(epoch)
	p.notifyLocked() // parked produces and fetches fail with ErrNotLeader
	return nil
}

// Leader returns the leader this replica follows (or is), -1 if none.
func (p *Partition) Leader() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// FetchPos is what a follower sends its leader for one partition.
type FetchPos struct {
	// LeaderEpoch is the epoch the replica follows in: the fetch's
	// CurrentLeaderEpoch, and the epoch whose follower operations may
	// apply the answer.
	LeaderEpoch int32
	// Offset is the offset to fetch from (the LEO, durable), and
	// LastFetchedEpoch the epoch of the last batch, for divergence checks.
	Offset           int64
	LastFetchedEpoch int32
}

// FetchPosition returns where a follower fetches from, in which epoch. The
// position and the epoch are read together, with no role change between
// them, so an answer is never applied to a log that moved on in another
// epoch. The leader counts the offset as durably replicated, so when the
// topic acknowledges only fsync'd data the log is flushed first (its tail
// may be unflushed: appended as leader just before the replica became
// follower); a failed log reports no position. It fails with
// ErrRoleChanged unless the replica follows.
func (p *Partition) FetchPosition() (FetchPos, error) {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.mu.Lock()
	closed, role, epoch := p.closed, p.role, p.leaderEpoch.Load()
	p.mu.Unlock()
	switch {
	case closed:
		return FetchPos{}, ErrClosed
	case role != RoleFollower:
		return FetchPos{}, fmt.Errorf("%w: %s in epoch %d", ErrRoleChanged, role, epoch)
	}
	if err := p.log.Err(); err != nil {
		return FetchPos{}, err
	}
	if p.log.SyncOnAppend() && p.log.FlushedOffset() < p.log.EndOffset() {
		if err := p.log.Flush(); err != nil {
			return FetchPos{}, err
		}
	}
	return FetchPos{LeaderEpoch: epoch, Offset: p.log.EndOffset(), LastFetchedEpoch: p.log.LatestEpoch()}, nil
}

// lockFollower takes followMu for a follower operation on what was fetched
// in epoch: it fails with ErrRoleChanged (ErrClosed) unless the replica
// still follows in that epoch. On success the caller holds followMu, so no
// role change happens until it calls p.followMu.Unlock.
func (p *Partition) lockFollower(epoch int32) error {
	p.followMu.Lock()
	p.mu.Lock()
	closed, role, current := p.closed, p.role, p.leaderEpoch.Load()
	p.mu.Unlock()
	var err error
	switch {
	case closed:
		err = ErrClosed
	case role != RoleFollower || current != epoch:
		err = fmt.Errorf("%w: fetched in epoch %d, now %s in epoch %d", ErrRoleChanged, epoch, role, current)
	}
	if err != nil {
		p.followMu.Unlock()
		return err
	}
	if testHookFollowerChecked != nil {
		testHookFollowerChecked()
	}
	return nil
}

// testHookFollowerChecked, if set, runs in lockFollower once the check
// passed, with followMu held (tests force interleavings with it).
var testHookFollowerChecked func()

// AppendFromLeader applies one fetch answer from the leader in epoch: it
// appends batches (offsets and epochs as the leader assigned them), makes
// them durable when the topic acknowledges only fsync'd data, moves the
// high watermark to min(leader's, own LEO), and moves the log start offset
// up to the leader's (a DeleteRecords on the leader, or its retention), as
// far as that high watermark: what it deletes is below what the leader
// keeps, and never above what it knows to be committed. All of it happens
// under one hold of followMu, so a role change comes before or after the
// whole answer. It fails with ErrRoleChanged if the replica no longer
// follows in epoch.
//
// It refuses (ErrImpossibleEpochs, nothing appended) batches that the
// leader of epoch cannot have held: a batch of a later epoch, or epochs
// going down. A leader's response is sent from its files with sendfile,
// and the kernel sends file pages by reference: should the leader lose its
// leadership, truncate and append its new leader's batches before the
// follower reads the response, those may arrive in the old ones' place,
// with valid CRCs (docs/storage.md, "Reading: zero copy"). The follower
// fetches again.
func (p *Partition) AppendFromLeader(epoch int32, batches []byte, leaderHighWatermark, leaderLogStart int64) error {
	if err := p.lockFollower(epoch); err != nil {
		return err
	}
	defer p.followMu.Unlock()
	if err := checkFetchedEpochs(batches, epoch); err != nil {
		return err
	}
	if len(batches) > 0 {
		if _, err := p.log.AppendReplicated(batches); err != nil {
			return err
		}
		if p.log.SyncOnAppend() {
			// The next fetch reports this LEO to the leader as durable.
			if err := p.log.Flush(); err != nil {
				return err
			}
		}
	}
	hw := min(leaderHighWatermark, p.log.EndOffset())
	if hw > p.highWatermark.Load() {
		p.highWatermark.Store(hw)
		p.log.ForgetReplicatedTxns(hw)
	}
	if start := min(leaderLogStart, p.highWatermark.Load()); start > p.log.StartOffset() {
		return p.log.AdvanceStartOffset(start)
	}
	return nil
}

// TruncateToDivergence truncates the log where it diverges from the
// leader's, given the leader's answer (in epoch) for the follower's last
// epoch: its largest epoch at most that one and that epoch's end offset.
// The follower keeps what both logs share: up to the end of that epoch in
// both logs (KIP-101/279). It returns the new LEO. A leader that knows no
// common epoch answers OFFSET_OUT_OF_RANGE instead (see
// TruncateAfterOutOfRange). It fails with ErrRoleChanged if the replica no
// longer follows in epoch: a new leader's log is never cut by an answer
// meant for the follower it was.
func (p *Partition) TruncateToDivergence(epoch, leaderEpoch int32, leaderEndOffset int64) (int64, error) {
	if leaderEpoch < 0 || leaderEndOffset < 0 {
		return 0, fmt.Errorf("replica: divergence answer without an epoch (%d, %d)", leaderEpoch, leaderEndOffset)
	}
	if err := p.lockFollower(epoch); err != nil {
		return 0, err
	}
	defer p.followMu.Unlock()
	to := min(leaderEndOffset, p.log.EndOffset())
	if _, end := p.log.EndOffsetForEpoch(leaderEpoch); end >= 0 {
		to = min(to, end)
	}
	return p.truncateLocked(to)
}

// TruncateAfterOutOfRange handles a leader's OFFSET_OUT_OF_RANGE for a fetch
// from this replica in epoch, at or past the leader's log start offset: the
// replica is ahead of the leader (after an unclean election) or has no
// epoch the leader knows. It truncates to its high watermark; if that is
// its whole log (which the leader's epoch checks allow only for a log
// without epochs, so nothing of value), it starts over at the leader's log
// start, which always makes progress.
func (p *Partition) TruncateAfterOutOfRange(epoch int32, leaderLogStart int64) (int64, error) {
	if err := p.lockFollower(epoch); err != nil {
		return 0, err
	}
	defer p.followMu.Unlock()
	leo := p.log.EndOffset()
	if to := min(p.highWatermark.Load(), leo); to < leo {
		return p.truncateLocked(to)
	}
	if err := p.log.TruncateFullyAndStartAt(leaderLogStart); err != nil {
		return 0, err
	}
	p.highWatermark.Store(leaderLogStart)
	return leaderLogStart, nil
}

// truncateLocked truncates the log at to; followMu is held.
func (p *Partition) truncateLocked(to int64) (int64, error) {
	// Truncate even at the LEO: it also drops a trailing epoch without
	// records (this replica led it and was replaced before appending),
	// which would otherwise make every fetch report the same divergence.
	if err := p.log.Truncate(to); err != nil {
		return 0, err
	}
	if hw := p.highWatermark.Load(); hw > to {
		// Only possible after an unclean election: the truncated records
		// were never committed in the new leader's history.
		p.highWatermark.Store(to)
	}
	return p.log.EndOffset(), nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (the
// follower, in epoch, is behind the leader's log start). It fails with
// ErrRoleChanged if the replica no longer follows in epoch.
func (p *Partition) TruncateFullyAndStartAt(epoch int32, offset int64) error {
	if err := p.lockFollower(epoch); err != nil {
		return err
	}
	defer p.followMu.Unlock()
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.highWatermark.Store(offset)
	return nil
}

// checkFetchedEpochs checks that batches, fetched from the leader of epoch,
// have leader epochs that leader can have held: none later than epoch, and
// none lower than a batch before it.
func checkFetchedEpochs(batches []byte, epoch int32) error {
	prev := int32(-1)
	for pos := 0; pos < len(batches); {
		h, err := klog.ParseBatchHeader(batches[pos:])
		if err != nil {
			return nil // AppendReplicated reports it
		}
		e := h.PartitionLeaderEpoch
		if e > epoch || e < prev {
			return fmt.Errorf("%w: offset %d has epoch %d after epoch %d, fetched from the leader of epoch %d",
				ErrImpossibleEpochs, h.BaseOffset, e, prev, epoch)
		}
		prev = e
		pos += h.Size()
	}
	return nil
}
