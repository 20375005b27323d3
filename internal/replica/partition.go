package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
)

// Errors of the data path; the broker maps them to Kafka error codes.
var (
	ErrNotLeader          = errors.New("replica: not the leader")
	ErrFencedLeaderEpoch  = errors.New("replica: leader epoch older than the current one")
	ErrUnknownLeaderEpoch = errors.New("replica: leader epoch newer than the current one")
	ErrClosed             = errors.New("replica: partition closed")
	// ErrNotEnoughReplicas: the ISR is smaller than min.insync.replicas, so
	// an acks=all write is refused before it is appended.
	ErrNotEnoughReplicas = errors.New("replica: ISR smaller than min.insync.replicas")
	// ErrNotEnoughReplicasAfterAppend: the write was appended, then the ISR
	// shrank below min.insync.replicas before it was committed.
	ErrNotEnoughReplicasAfterAppend = errors.New("replica: ISR shrank below min.insync.replicas after the append")
	// ErrRoleChanged: a follower operation (append or truncation of what
	// was fetched in one leader epoch) was refused because the replica no
	// longer follows in that epoch.
	ErrRoleChanged = errors.New("replica: role or leader epoch changed since the fetch")
)

// Role is a replica's role in its partition.
type Role int

// Roles.
const (
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "no role"
}

// Partition is this broker's replica of one partition.
type Partition struct {
	Topic string
	Index int32
	// localID is this broker's id.
	localID int32
	// log is the replica's on-disk log; it does its own locking.
	log *klog.Log

	// highWatermark is the committed offset; written under mu, read anywhere.
	highWatermark atomic.Int64
	// leaderEpoch is the epoch this replica acts in; written under mu.
	leaderEpoch atomic.Int32

	// followMu fences the follower's log operations (AppendFromLeader,
	// TruncateToDivergence, TruncateFullyAndStartAt) against role changes:
	// a follower operation holds it from its role and epoch check to its
	// end, and BecomeLeader, BecomeFollower and Close take it first, so no
	// role change falls between the check and the act. Taken before mu.
	followMu sync.Mutex

	mu sync.Mutex
	// role is the current role; set by the partition manager.
	role Role
	// isr is the in-sync replica set of the current leader epoch, as
	// stored in etcd, and partitionEpoch the stored state's partition
	// epoch it came with (the version ISR changes are built on).
	isr            []int32
	partitionEpoch int32
	// leader is the leader's broker id (this broker when leading; -1 if
	// none is known).
	leader int32
	// cfg holds the leader's replication settings.
	cfg LeaderConfig
	// followers tracks each follower while leading (leader.go).
	followers map[int32]*followerState
	// pendingISR is an ISR change proposed to etcd and not yet seen back,
	// nil if none. While an expansion is pending the high watermark counts
	// the joining follower too (the "maximal ISR" of KIP-497), so nothing
	// is committed that the new member might lack. It applies only to the
	// partition epoch it was built on (partitionEpoch when proposed).
	// pendingUnknown is set once a write of it had an unknown outcome: it
	// may be in etcd, so it is kept (and retried) until a stored state
	// with a newer partition epoch is seen (KIP-497's AlterPartition rule).
	pendingISR     []int32
	pendingUnknown bool
	// epochStartOffset is the LEO when this leader epoch began.
	epochStartOffset int64
	// waiters (long-poll fetches) are notified when the high watermark,
	// the LEO, the ISR or the role changes; commitWaiters (WaitCommitted)
	// not when only the LEO moves, so an append does not wake every parked
	// acks=all produce and group write.
	waiters       map[*Waiter]struct{}
	commitWaiters map[*Waiter]struct{}
	// closed is set by Close; the data path then fails with ErrClosed.
	closed bool
}

// New wraps an open log. The replica has no role until BecomeLeader or
// BecomeFollower. Its high watermark starts at min(checkpointed, LEO):
// checkpointed is the last high watermark its broker wrote down for this
// log (0 if none), which the log may have lost the end of.
func New(topic string, index, localID int32, l *klog.Log, checkpointed int64) *Partition {
	p := &Partition{Topic: topic, Index: index, localID: localID, log: l, leader: -1,
		waiters: map[*Waiter]struct{}{}, commitWaiters: map[*Waiter]struct{}{}}
	p.leaderEpoch.Store(-1)
	p.highWatermark.Store(max(min(checkpointed, l.EndOffset()), 0))
	return p
}

// Log returns the replica's log.
func (p *Partition) Log() *klog.Log { return p.log }

// LeaderEpoch returns the epoch the replica acts in (-1 before any role).
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// HighWatermark returns the committed offset.
func (p *Partition) HighWatermark() int64 { return p.highWatermark.Load() }

// LastStableOffset returns the offset below which every transaction is
// decided and committed (read_committed consumers read up to it).
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset(p.highWatermark.Load()) }

// Watermarks returns the high watermark and the last stable offset of that
// same high watermark, so that an answer carrying both never shows an
// LSO above its high watermark.
func (p *Partition) Watermarks() (hw, lso int64) {
	hw = p.highWatermark.Load()
	return hw, p.log.LastStableOffset(hw)
}

// Role returns the replica's current role.
func (p *Partition) Role() Role {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.role
}

// ISR returns a copy of the in-sync replica set.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.isr)
}

// BecomeLeader makes the replica leader in epoch with the ISR of the stored
// partition state of partitionEpoch. The log records that the epoch starts
// at its LEO, so OffsetsForLeaderEpoch answers correctly even before the
// first append of the epoch. Called again in the same leader epoch, it takes
// the ISR of a newer partition state (after an ISR change was stored) and
// ignores an older or the same one.
func (p *Partition) BecomeLeader(epoch, partitionEpoch int32, isr []int32, cfg LeaderConfig) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if epoch < p.leaderEpoch.Load() {
		return fmt.Errorf("%w: becoming leader in epoch %d, already in %d", ErrFencedLeaderEpoch, epoch, p.leaderEpoch.Load())
	}
	p.cfg = cfg
	if p.role == RoleLeader && epoch == p.leaderEpoch.Load() {
		if partitionEpoch > p.partitionEpoch {
			// Whatever was pending was built on an older state: it was
			// stored (and is in this one) or lost; the next fetch or
			// shrink check proposes again from this state if need be.
			p.pendingISR, p.pendingUnknown = nil, false
			p.isr, p.partitionEpoch = slices.Clone(isr), partitionEpoch
		}
		p.maybeAdvanceHighWatermarkLocked()
		p.notifyLocked()
		return nil
	}
	if err := p.log.AssignEpoch(epoch); err != nil {
		return err
	}
	p.role = RoleLeader
	p.leader = p.localID
	p.isr, p.partitionEpoch = slices.Clone(isr), partitionEpoch
	p.pendingISR, p.pendingUnknown = nil, false
	p.epochStartOffset = p.log.EndOffset()
	p.resetFollowersLocked(time.Now())
	p.leaderEpoch.Store(epoch)
	p.maybeAdvanceHighWatermarkLocked()
	p.notifyLocked()
	return nil
}

// CheckLeaderEpoch validates a client's CurrentLeaderEpoch (-1 = none).
func (p *Partition) CheckLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	switch e := p.leaderEpoch.Load(); {
	case current < e:
		return fmt.Errorf("%w: got %d, current %d", ErrFencedLeaderEpoch, current, e)
	case current > e:
		return fmt.Errorf("%w: got %d, current %d", ErrUnknownLeaderEpoch, current, e)
	}
	return nil
}

// Appended is the outcome of AppendAsLeader: where the batches went, and
// the leader epoch the replica was leading in when it appended them (the
// epoch that stamped them; for a duplicate of an idempotent producer's
// batch, the epoch it leads in now, in whose log the original was found).
type Appended struct {
	klog.AppendInfo
	LeaderEpoch int32
}

// AppendAsLeader appends produced batches, assigning offsets in the current
// leader epoch. It does not wait for durability; see WaitCommitted and
// WaitLocal, which take the returned LeaderEpoch.
func (p *Partition) AppendAsLeader(batches []byte) (Appended, error) {
	return p.appendAsLeader(-1, batches)
}

// AppendInEpoch is AppendAsLeader for a writer bound to one leader epoch
// (a group coordinator shard): it appends only while the replica leads in
// epoch, and otherwise writes nothing and fails with ErrNotLeader.
func (p *Partition) AppendInEpoch(epoch int32, batches []byte) (Appended, error) {
	return p.appendAsLeader(epoch, batches)
}

// AppendTxnAsLeader is AppendAsLeader for produced batches that may be
// transactional, verified with the transaction coordinator under token
// (klog.Log.AppendVerified).
func (p *Partition) AppendTxnAsLeader(batches []byte, token uint64) (Appended, error) {
	return p.appendWith(-1, func(epoch int32) (klog.AppendInfo, error) { return p.log.AppendVerified(batches, epoch, token) })
}

// AppendTxnInEpoch is AppendTxnAsLeader in leader epoch epoch only (the
// group coordinator's transactional offset commits).
func (p *Partition) AppendTxnInEpoch(epoch int32, batches []byte, token uint64) (Appended, error) {
	return p.appendWith(epoch, func(epoch int32) (klog.AppendInfo, error) { return p.log.AppendVerified(batches, epoch, token) })
}

// AppendMarker appends a transaction marker as leader in the current epoch
// (WriteTxnMarkers); see klog.Log.AppendMarker.
func (p *Partition) AppendMarker(m klog.Marker) (Appended, error) {
	return p.appendWith(-1, func(epoch int32) (klog.AppendInfo, error) { return p.log.AppendMarker(m, epoch) })
}

// appendAsLeader appends in the current leader epoch, which must be want
// unless want is -1.
func (p *Partition) appendAsLeader(want int32, batches []byte) (Appended, error) {
	return p.appendWith(want, func(epoch int32) (klog.AppendInfo, error) { return p.log.Append(batches, epoch) })
}

// appendWith runs an append of the log in the current leader epoch, which
// must be want unless want is -1.
func (p *Partition) appendWith(want int32, appendIn func(epoch int32) (klog.AppendInfo, error)) (Appended, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return Appended{}, ErrClosed
	}
	if p.role != RoleLeader {
		p.mu.Unlock()
		return Appended{}, ErrNotLeader
	}
	epoch := p.leaderEpoch.Load()
	if want >= 0 && epoch != want {
		p.mu.Unlock()
		return Appended{}, fmt.Errorf("%w: leading in epoch %d, not %d", ErrNotLeader, epoch, want)
	}
	// The append happens under mu so that a role change cannot interleave
	// with it: a batch is stamped with the epoch the replica is leader in.
	info, err := appendIn(epoch)
	if err == nil {
		if !p.log.SyncOnAppend() {
			p.maybeAdvanceHighWatermarkLocked()
		}
		p.notifyDataLocked() // fetches long-polling for the new LEO
	}
	p.mu.Unlock()
	return Appended{AppendInfo: info, LeaderEpoch: epoch}, err
}

// WaitCommitted returns once every offset below end, appended while leading
// in epoch, is committed (below the high watermark), flushing the log first
// when the topic acknowledges only fsync'd data. It succeeds only if the
// replica is still leader in that same epoch when the high watermark passes
// end: once it stopped leading, even for a moment, its log may have been
// truncated and refilled by another leader, so offsets alone prove nothing
// (ErrNotLeader, also for a wait that begins after the change). It returns
// early with ctx's error.
func (p *Partition) WaitCommitted(ctx context.Context, epoch int32, end int64) error {
	if err := p.Sync(end); err != nil {
		return err
	}
	if done, err := p.committedIn(epoch, end); done || err != nil {
		// Committed by the flush (a lone leader) or refused: no waiter.
		return err
	}
	w := NewWaiter()
	p.addWaiter(w, true)
	defer p.removeWaiter(w, true)
	for {
		if done, err := p.committedIn(epoch, end); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.C:
		}
	}
}

// committedIn reports whether offsets below end are committed by this
// replica as leader in epoch, or why they never will be by it.
func (p *Partition) committedIn(epoch int32, end int64) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.leadingInLocked(epoch); err != nil {
		return false, err
	}
	p.maybeAdvanceHighWatermarkLocked()
	switch {
	case p.highWatermark.Load() >= end:
		return true, nil
	case int32(len(p.isr)) < p.cfg.MinInsyncReplicas:
		// The ISR shrank below min.insync.replicas after the append: the
		// high watermark cannot pass the batch until it grows back.
		return false, ErrNotEnoughReplicasAfterAppend
	}
	return false, nil
}

// leadingInLocked returns nil if the replica leads in epoch.
func (p *Partition) leadingInLocked(epoch int32) error {
	switch {
	case p.closed:
		return ErrClosed
	case p.role != RoleLeader:
		return ErrNotLeader
	case p.leaderEpoch.Load() != epoch:
		return fmt.Errorf("%w: appended in leader epoch %d, now leading in %d", ErrNotLeader, epoch, p.leaderEpoch.Load())
	}
	return nil
}

// Sync makes the log durable up to end if the topic acknowledges only
// fsync'd data (WaitCommitted and WaitLocal begin with it); in page-cache
// mode it does nothing. Concurrent callers share one fsync (the log's group
// commit), so a caller waiting for several partitions syncs them at once
// and then waits for each.
func (p *Partition) Sync(end int64) error {
	if p.log.SyncOnAppend() && p.log.FlushedOffset() < end {
		return p.log.Flush()
	}
	return nil
}

// Flush makes the whole log durable and advances the high watermark (the
// page-cache mode flusher and acks=0 produces use it).
func (p *Partition) Flush() error {
	if err := p.log.Flush(); err != nil {
		return err
	}
	p.mu.Lock()
	p.maybeAdvanceHighWatermarkLocked()
	p.mu.Unlock()
	return nil
}

// durableEnd is the leader's own contribution to the high watermark.
func (p *Partition) durableEnd() int64 {
	if p.log.SyncOnAppend() {
		return p.log.FlushedOffset()
	}
	return p.log.EndOffset()
}

// maybeAdvanceHighWatermarkLocked recomputes the high watermark (see
// leader.go: highWatermarkCandidateLocked) and wakes waiters when it moves.
// It never moves backwards.
func (p *Partition) maybeAdvanceHighWatermarkLocked() {
	if p.role != RoleLeader {
		return
	}
	hw, ok := p.highWatermarkCandidateLocked()
	if ok && hw > p.highWatermark.Load() {
		p.highWatermark.Store(hw)
		p.log.ForgetReplicatedTxns(hw)
		p.notifyLocked()
	}
}

// Read returns whole batches from offset, bounded by the high watermark,
// at most maxBytes unless minOne, as ranges of the log's files (a fetch
// sends them from there; klog.Records).
func (p *Partition) Read(offset int64, maxBytes int, minOne bool) (klog.Records, error) {
	if p.isClosed() {
		return klog.Records{}, ErrClosed
	}
	hw := p.highWatermark.Load()
	if offset > hw && offset <= p.log.EndOffset() {
		// Between the high watermark and the LEO: valid, nothing visible yet.
		return klog.Records{}, nil
	}
	return p.log.Slice(offset, hw, maxBytes, minOne)
}

// ReadCommitted is Read for a read_committed consumer: bounded by the last
// stable offset, which it also returns with its high watermark
// (Watermarks).
func (p *Partition) ReadCommitted(offset int64, maxBytes int, minOne bool) (r klog.Records, hw, lso int64, err error) {
	if p.isClosed() {
		return klog.Records{}, -1, -1, ErrClosed
	}
	hw, lso = p.Watermarks()
	if offset > lso && offset <= p.log.EndOffset() {
		// Past the last stable offset: valid, nothing readable yet.
		return klog.Records{}, hw, lso, nil
	}
	r, err = p.log.Slice(offset, lso, maxBytes, minOne)
	return r, hw, lso, err
}

// Waiter is woken (non-blocking send on C) when the partition's high
// watermark or LEO moves, or the partition closes.
type Waiter struct{ C chan struct{} }

// NewWaiter returns a waiter whose channel holds one pending wake-up.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

func (w *Waiter) wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// AddWaiter registers w; a closed partition wakes it at once.
func (p *Partition) AddWaiter(w *Waiter) { p.addWaiter(w, false) }

// RemoveWaiter unregisters w.
func (p *Partition) RemoveWaiter(w *Waiter) { p.removeWaiter(w, false) }

func (p *Partition) addWaiter(w *Waiter, commit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.wake()
		return
	}
	if commit {
		p.commitWaiters[w] = struct{}{}
	} else {
		p.waiters[w] = struct{}{}
	}
}

func (p *Partition) removeWaiter(w *Waiter, commit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if commit {
		delete(p.commitWaiters, w)
	} else {
		delete(p.waiters, w)
	}
}

func (p *Partition) notifyLocked() {
	p.notifyDataLocked()
	for w := range p.commitWaiters {
		w.wake()
	}
}

// notifyDataLocked wakes the fetches only (the LEO moved).
func (p *Partition) notifyDataLocked() {
	for w := range p.waiters {
		w.wake()
	}
}

func (p *Partition) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close stops the replica (its waiters are woken and fail with ErrClosed)
// and closes the log. With remove, the log's directory is deleted.
func (p *Partition) Close(remove bool) error {
	return p.close(func() error {
		if remove {
			return p.log.Delete()
		}
		return p.log.Close()
	})
}

// Retire stops the replica as Close does and renames the log's directory
// to tomb (klog.Log.Retire), for the caller to remove.
func (p *Partition) Retire(tomb string) error {
	return p.close(func() error { return p.log.Retire(tomb) })
}

// close stops the replica once and then ends the log with end.
func (p *Partition) close(end func() error) error {
	p.followMu.Lock()
	defer p.followMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.role = RoleNone
	p.notifyLocked()
	p.waiters, p.commitWaiters = map[*Waiter]struct{}{}, map[*Waiter]struct{}{}
	p.mu.Unlock()
	return end()
}

// WaitLocal returns once the leader's own log holds every offset below end
// durably: after a (group-committed) fsync when the topic acknowledges only
// fsync'd data, at once in page-cache mode. acks=1 waits for this. Like
// WaitCommitted it succeeds only while the replica still leads in epoch,
// the epoch it appended in.
func (p *Partition) WaitLocal(epoch int32, end int64) error {
	if err := p.Sync(end); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.leadingInLocked(epoch); err != nil {
		return err
	}
	p.maybeAdvanceHighWatermarkLocked()
	return nil
}
