package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	klog "github.com/samsa-io/samsa/internal/log"
)

// Errors of the data path; the broker maps them to Kafka error codes.
var (
	ErrNotLeader          = errors.New("replica: not the leader")
	ErrFencedLeaderEpoch  = errors.New("replica: leader epoch older than the current one")
	ErrUnknownLeaderEpoch = errors.New("replica: leader epoch newer than the current one")
	ErrClosed             = errors.New("replica: partition closed")
)

// Role is a replica's role in its partition.
type Role int

// Roles.
const (
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

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

	mu sync.Mutex
	// role is the current role; set by the partition manager.
	role Role
	// isr is the in-sync replica set of the current leader epoch.
	isr []int32
	// waiters are notified when the high watermark or LEO moves.
	waiters map[*Waiter]struct{}
	// closed is set by Close; the data path then fails with ErrClosed.
	closed bool
}

// New wraps an open log. The replica has no role until BecomeLeader or
// BecomeFollower.
func New(topic string, index, localID int32, l *klog.Log) *Partition {
	p := &Partition{Topic: topic, Index: index, localID: localID, log: l, waiters: map[*Waiter]struct{}{}}
	p.leaderEpoch.Store(-1)
	return p
}

// Log returns the replica's log.
func (p *Partition) Log() *klog.Log { return p.log }

// LeaderEpoch returns the epoch the replica acts in (-1 before any role).
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// HighWatermark returns the committed offset.
func (p *Partition) HighWatermark() int64 { return p.highWatermark.Load() }

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

// BecomeLeader makes the replica leader in epoch with the given ISR. The
// log records that the epoch starts at its LEO, so OffsetsForLeaderEpoch
// answers correctly even before the first append of the epoch.
func (p *Partition) BecomeLeader(epoch int32, isr []int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if epoch < p.leaderEpoch.Load() {
		return fmt.Errorf("%w: becoming leader in epoch %d, already in %d", ErrFencedLeaderEpoch, epoch, p.leaderEpoch.Load())
	}
	if p.role == RoleLeader && epoch == p.leaderEpoch.Load() {
		p.isr = slices.Clone(isr)
		p.maybeAdvanceHighWatermarkLocked()
		return nil
	}
	if err := p.log.AssignEpoch(epoch); err != nil {
		return err
	}
	p.role = RoleLeader
	p.isr = slices.Clone(isr)
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

// AppendAsLeader appends produced batches, assigning offsets in the current
// leader epoch. It does not wait for durability; see WaitCommitted.
func (p *Partition) AppendAsLeader(batches []byte) (klog.AppendInfo, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return klog.AppendInfo{}, ErrClosed
	}
	if p.role != RoleLeader {
		p.mu.Unlock()
		return klog.AppendInfo{}, ErrNotLeader
	}
	epoch := p.leaderEpoch.Load()
	// The append happens under mu so that a role change cannot interleave
	// with it: a batch is stamped with the epoch the replica is leader in.
	info, err := p.log.Append(batches, epoch)
	if err == nil && !p.log.SyncOnAppend() {
		p.maybeAdvanceHighWatermarkLocked()
	}
	p.mu.Unlock()
	return info, err
}

// WaitCommitted returns once every offset below end is committed (below the
// high watermark), flushing the log first when the topic acknowledges only
// fsync'd data. It returns early with ctx's error.
func (p *Partition) WaitCommitted(ctx context.Context, end int64) error {
	if p.log.SyncOnAppend() && p.log.FlushedOffset() < end {
		// Group commit: concurrent callers share the fsync.
		if err := p.log.Flush(); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.maybeAdvanceHighWatermarkLocked()
	p.mu.Unlock()
	if p.highWatermark.Load() >= end {
		return nil
	}
	w := NewWaiter()
	p.AddWaiter(w)
	defer p.RemoveWaiter(w)
	for p.highWatermark.Load() < end {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.C:
		}
		if p.isClosed() {
			return ErrClosed
		}
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

// maybeAdvanceHighWatermarkLocked recomputes the high watermark as the
// minimum durable LEO over the ISR (the leader alone until followers exist)
// and wakes waiters when it moves. It never moves backwards.
func (p *Partition) maybeAdvanceHighWatermarkLocked() {
	if p.role != RoleLeader {
		return
	}
	hw := p.durableEnd()
	if hw > p.highWatermark.Load() {
		p.highWatermark.Store(hw)
		p.notifyLocked()
	}
}

// Read returns whole batches from offset, bounded by the high watermark
// (consumers) or the LEO (replicas, later), at most maxBytes unless minOne.
func (p *Partition) Read(offset int64, maxBytes int, minOne bool) ([]byte, error) {
	if p.isClosed() {
		return nil, ErrClosed
	}
	hw := p.highWatermark.Load()
	if offset > hw && offset <= p.log.EndOffset() {
		// Between the high watermark and the LEO: valid, nothing visible yet.
		return nil, nil
	}
	return p.log.Read(offset, hw, maxBytes, minOne)
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
func (p *Partition) AddWaiter(w *Waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.wake()
		return
	}
	p.waiters[w] = struct{}{}
}

// RemoveWaiter unregisters w.
func (p *Partition) RemoveWaiter(w *Waiter) {
	p.mu.Lock()
	delete(p.waiters, w)
	p.mu.Unlock()
}

func (p *Partition) notifyLocked() {
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
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.role = RoleNone
	p.notifyLocked()
	p.waiters = map[*Waiter]struct{}{}
	p.mu.Unlock()
	if remove {
		return p.log.Delete()
	}
	return p.log.Close()
}

// WaitLocal returns once the leader's own log holds every offset below end
// durably: after a (group-committed) fsync when the topic acknowledges only
// fsync'd data, at once in page-cache mode. acks=1 waits for this.
func (p *Partition) WaitLocal(end int64) error {
	if !p.log.SyncOnAppend() || p.log.FlushedOffset() >= end {
		return nil
	}
	if err := p.log.Flush(); err != nil {
		return err
	}
	p.mu.Lock()
	p.maybeAdvanceHighWatermarkLocked()
	p.mu.Unlock()
	return nil
}
