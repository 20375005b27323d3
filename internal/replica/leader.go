package replica

import (
	"fmt"
	"slices"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
)

// LeaderConfig is what a leader needs to know of its partition.
type LeaderConfig struct {
	// Replicas is the assignment; only these brokers may fetch as followers.
	Replicas []int32
	// MinInsyncReplicas is min.insync.replicas.
	MinInsyncReplicas int32
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower not caught
	// up for this long leaves the ISR.
	ReplicaLagTimeMax time.Duration
}

// followerState is the leader's view of one follower in this epoch.
type followerState struct {
	// leo is the follower's durable LEO, from its last fetch offset; -1
	// until it fetched in this epoch.
	leo int64
	// lastFetch is when it last fetched; leaderEndAtLastFetch the leader's
	// LEO at that moment.
	lastFetch            time.Time
	leaderEndAtLastFetch int64
	// lastCaughtUp is the last time the follower had everything the leader
	// had (Kafka's lastCaughtUpTimeMs).
	lastCaughtUp time.Time
	// logStart is the follower's log start offset from its last fetch,
	// -1 until it reported one in this epoch (FollowerLogStart).
	logStart int64
}

// resetFollowersLocked starts a leader epoch: no follower has fetched yet,
// and all count as caught up now, so none is dropped before it could fetch.
func (p *Partition) resetFollowersLocked(now time.Time) {
	p.followers = map[int32]*followerState{}
	for _, r := range p.cfg.Replicas {
		if r != p.localID {
			p.followers[r] = &followerState{leo: -1, lastCaughtUp: now, logStart: -1}
		}
	}
}

// highWatermarkCandidateLocked is the minimum durable LEO over the maximal
// ISR (the stored ISR plus a pending expansion): the leader's own durable
// end and each follower's last fetch offset. It is not ok while a member
// has not fetched in this epoch, or while the ISR is smaller than
// min.insync.replicas (the strict rule: with too few replicas nothing more
// is committed, so no consumer reads what one surviving replica could still
// lose).
func (p *Partition) highWatermarkCandidateLocked() (int64, bool) {
	if int32(len(p.isr)) < p.cfg.MinInsyncReplicas {
		return 0, false
	}
	hw := p.durableEnd()
	for _, r := range p.maximalISRLocked() {
		if r == p.localID {
			continue
		}
		f := p.followers[r]
		if f == nil || f.leo < 0 {
			return 0, false
		}
		hw = min(hw, f.leo)
	}
	return hw, true
}

func (p *Partition) maximalISRLocked() []int32 {
	if p.pendingISR == nil {
		return p.isr
	}
	out := slices.Clone(p.isr)
	for _, r := range p.pendingISR {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// FollowerFetch records a follower's fetch at offset (its durable LEO),
// sent in leader epoch epoch (its CurrentLeaderEpoch; -1: none given), and
// advances the high watermark. The epoch is checked again here, under the
// lock that role changes take: a fetch checked in one epoch must not be
// recorded in a later one (this replica may have followed, truncated and
// led again in between). It reports whether the follower should join
// the ISR: it may (mayJoin: the caller knows its registration to be live
// and not recovering from an unclean shutdown), and it caught up to the
// high watermark and to the start of this leader epoch; the caller then
// proposes the change (ProposedISR).
func (p *Partition) FollowerFetch(id, epoch int32, offset int64, now time.Time, mayJoin bool) (expand bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, ErrClosed
	}
	if p.role != RoleLeader {
		return false, ErrNotLeader
	}
	if err := p.CheckLeaderEpoch(epoch); err != nil {
		return false, err
	}
	f := p.followers[id]
	if f == nil {
		return false, ErrUnknownReplica
	}
	leo := p.log.EndOffset()
	switch {
	case offset >= leo:
		f.lastCaughtUp = now
	case offset >= f.leaderEndAtLastFetch && !f.lastFetch.IsZero():
		// It has everything the leader had at its previous fetch.
		f.lastCaughtUp = f.lastFetch
	}
	f.leo, f.lastFetch, f.leaderEndAtLastFetch = offset, now, leo
	p.maybeAdvanceHighWatermarkLocked()
	if mayJoin && p.pendingISR == nil && !slices.Contains(p.isr, id) &&
		offset >= p.highWatermark.Load() && offset >= p.epochStartOffset {
		p.pendingISR = append(slices.Clone(p.isr), id)
		p.maybeAdvanceHighWatermarkLocked()
		return true, nil
	}
	return false, nil
}

// FollowerLogStart records the log start offset follower id reported in
// a fetch sent in leader epoch epoch (-1: none given) that FollowerFetch
// accepted; it only moves up, and a report of another epoch is dropped.
// Waiters are woken when it moves (a DeleteRecords waits for the low
// watermark).
func (p *Partition) FollowerLogStart(id, epoch int32, logStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader || p.closed || p.CheckLeaderEpoch(epoch) != nil {
		return
	}
	if f := p.followers[id]; f != nil && logStart > f.logStart {
		f.logStart = logStart
		p.notifyLocked()
	}
}

// DeleteRecords moves the leader's log start offset up to offset (-1: the
// high watermark) for the DeleteRecords API, while leading in epoch: the
// role, the epoch and the bound are checked under the lock that role
// changes take, so a replica that stopped leading never deletes what the
// new leader keeps. An offset above the high watermark, or negative but
// -1, is ErrOffsetOutOfRange. It returns the offset used.
func (p *Partition) DeleteRecords(epoch int32, offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	if p.role != RoleLeader || p.leaderEpoch.Load() != epoch {
		return 0, ErrNotLeader
	}
	hw := p.highWatermark.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("%w: %d, high watermark %d", klog.ErrOffsetOutOfRange, offset, hw)
	}
	return offset, p.log.AdvanceStartOffset(offset)
}

// LowWatermark is, on the leader, the smallest log start offset among the
// replicas of the assignment that live reports alive: the leader's own and
// each follower's last reported one (-1 for a live follower that has not
// reported one in this epoch). A DeleteRecords is done once it reaches the
// requested offset (Kafka's lowWatermarkIfLeader).
func (p *Partition) LowWatermark(live func(id int32) bool) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	if p.role != RoleLeader {
		return 0, ErrNotLeader
	}
	low := p.log.StartOffset()
	for _, r := range p.cfg.Replicas {
		if f := p.followers[r]; f != nil && r != p.localID && live(r) {
			low = min(low, f.logStart)
		}
	}
	return low, nil
}

// MaybeShrinkISR drops from the ISR the followers that have not caught up
// within replica.lag.time.max.ms, as a pending proposal; it reports whether
// there is one for the caller to propose.
func (p *Partition) MaybeShrinkISR(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader || p.closed || p.pendingISR != nil {
		return false
	}
	keep := slices.DeleteFunc(slices.Clone(p.isr), func(r int32) bool {
		f := p.followers[r]
		return r != p.localID && (f == nil || now.Sub(f.lastCaughtUp) > p.cfg.ReplicaLagTimeMax)
	})
	if len(keep) == len(p.isr) {
		return false
	}
	p.pendingISR = keep
	return true
}

// ISRProposal is a pending ISR change.
type ISRProposal struct {
	ISR []int32
	// LeaderEpoch is the epoch of the leader that proposed it, and
	// PartitionEpoch that of the stored state it was built on: it may be
	// stored only over that state.
	LeaderEpoch, PartitionEpoch int32
	// OutcomeUnknown: a write of it had an unknown outcome, so it may be
	// stored already. It is not written again as it is (its checks, such
	// as the joiner's eligibility, may no longer hold); the writer settles
	// it by storing the base state under a new partition epoch, which
	// fails if the change landed (and the newer state then arrives) and
	// otherwise ends it.
	OutcomeUnknown bool
}

// ProposedISR returns the pending ISR change, if any.
func (p *Partition) ProposedISR() (ISRProposal, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pendingISR == nil || p.role != RoleLeader {
		return ISRProposal{}, false
	}
	return ISRProposal{ISR: slices.Clone(p.pendingISR), LeaderEpoch: p.leaderEpoch.Load(),
		PartitionEpoch: p.partitionEpoch, OutcomeUnknown: p.pendingUnknown}, true
}

// ISRProposalFailed reports that a write of the pending ISR change built on
// partitionEpoch failed, with outcomeUnknown if etcd may hold it anyway (a
// timeout, a lost etcd leader). A change whose writes all failed for sure
// is forgotten, and the next fetch or shrink check proposes again if still
// needed. One that may be stored is kept, so the high watermark still
// counts every member it might add, and retry says to settle it (see
// ISRProposal.OutcomeUnknown): it ends when a stored state with a newer
// partition epoch reaches BecomeLeader.
func (p *Partition) ISRProposalFailed(partitionEpoch int32, outcomeUnknown bool) (retry bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pendingISR == nil || p.partitionEpoch != partitionEpoch || p.role != RoleLeader {
		return false
	}
	if outcomeUnknown {
		p.pendingUnknown = true
	}
	if p.pendingUnknown {
		return true
	}
	p.pendingISR = nil
	return false
}

// CheckMinISR refuses an acks=all write while the ISR is smaller than
// min.insync.replicas.
func (p *Partition) CheckMinISR() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int32(len(p.isr)) < p.cfg.MinInsyncReplicas {
		return ErrNotEnoughReplicas
	}
	return nil
}

// HighWatermarkKnown reports whether this leader has committed an entry of
// its own epoch: until then its high watermark may lag the previous
// leader's, and offsets derived from it (ListOffsets latest) are withheld
// (OFFSET_NOT_AVAILABLE), so clients never see the high watermark go back.
func (p *Partition) HighWatermarkKnown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.role == RoleLeader && p.highWatermark.Load() >= p.epochStartOffset
}

// ReadForFollower returns whole batches from offset up to the LEO (followers
// replicate uncommitted data too), as ranges of the log's files.
func (p *Partition) ReadForFollower(offset int64, maxBytes int) (klog.Records, error) {
	if p.isClosed() {
		return klog.Records{}, ErrClosed
	}
	return p.log.Slice(offset, p.log.EndOffset(), maxBytes, true)
}

// Status is a snapshot of a replica, for metrics and health views.
type Status struct {
	Role        Role
	Leader      int32
	LeaderEpoch int32
	// ISR is the stored in-sync replica set (as this replica knows it).
	ISR []int32
	// MinInsyncReplicas is the leader's min.insync.replicas; 0 when not
	// leading.
	MinInsyncReplicas int32
	HighWatermark     int64
	// Followers are the leader's views of its followers (none when not
	// leading), in the order of the assignment.
	Followers []FollowerStatus
}

// FollowerStatus is the leader's view of one follower in this epoch.
type FollowerStatus struct {
	ID int32
	// LogEnd is its durable log end offset as of its last fetch, -1 if
	// it has not fetched in this epoch.
	LogEnd int64
	// LastFetch is when it last fetched (zero: not in this epoch), and
	// LastCaughtUp the last time it had everything the leader had.
	LastFetch, LastCaughtUp time.Time
}

// Status returns a snapshot of the replica.
func (p *Partition) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Role: p.role, Leader: p.leader, LeaderEpoch: p.leaderEpoch.Load(),
		ISR: slices.Clone(p.isr), HighWatermark: p.highWatermark.Load()}
	if p.role != RoleLeader {
		return st
	}
	st.MinInsyncReplicas = p.cfg.MinInsyncReplicas
	for _, r := range p.cfg.Replicas {
		if f := p.followers[r]; f != nil {
			st.Followers = append(st.Followers, FollowerStatus{ID: r, LogEnd: f.leo, LastFetch: f.lastFetch, LastCaughtUp: f.lastCaughtUp})
		}
	}
	return st
}
