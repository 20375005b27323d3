package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnknownReplica: a fetch as follower from a broker that is not a replica.
var ErrUnknownReplica = errors.New("replica: fetch from a broker that is not a replica of the partition")

// BecomeFollower makes the replica a follower of leader (-1: none known,
// the partition is offline) in epoch. Its log is truncated later, at the
// divergence point the leader reports (TruncateToDivergence), never blindly
// to the high watermark.
func (p *Partition) BecomeFollower(epoch, leader int32) error {
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
	p.isr, p.followers, p.pendingISR = nil, nil, nil
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

// FetchPosition is what a follower sends the leader: the offset to fetch
// from (its LEO, durable: in fsync mode the previous append was flushed
// before this fetch) and the epoch of its last batch, for divergence checks.
func (p *Partition) FetchPosition() (offset int64, lastFetchedEpoch int32) {
	return p.log.EndOffset(), p.log.LatestEpoch()
}

// AppendFromLeader appends batches fetched from the leader (offsets and
// epochs as the leader assigned them), makes them durable when the topic
// acknowledges only fsync'd data, and moves the high watermark to
// min(leader's, own LEO).
func (p *Partition) AppendFromLeader(batches []byte, leaderHighWatermark int64) error {
	p.mu.Lock()
	if p.closed || p.role != RoleFollower {
		p.mu.Unlock()
		return ErrNotLeader
	}
	p.mu.Unlock()
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
	}
	return nil
}

// TruncateToDivergence truncates the log where it diverges from the
// leader's, given the leader's answer for the follower's last epoch: its
// largest epoch at most that one and that epoch's end offset. The follower
// keeps what both logs share: up to the end of that epoch in both logs
// (KIP-101/279). It returns the new LEO.
func (p *Partition) TruncateToDivergence(leaderEpoch int32, leaderEndOffset int64) (int64, error) {
	leo := p.log.EndOffset()
	var to int64
	if leaderEpoch < 0 || leaderEndOffset < 0 {
		// The leader knows no common epoch: keep only what was committed.
		to = min(p.highWatermark.Load(), leo)
	} else {
		to = min(leaderEndOffset, leo)
		if _, end := p.log.EndOffsetForEpoch(leaderEpoch); end >= 0 {
			to = min(to, end)
		}
	}
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
// follower is behind the leader's log start).
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.highWatermark.Store(offset)
	return nil
}

// highWatermarkFile is the partition's high watermark checkpoint, beside the
// log; a restarted replica starts from min(checkpoint, LEO).
const highWatermarkFile = "high-watermark"

// CheckpointHighWatermark writes the high watermark to disk (write, fsync,
// rename). It fails with ErrClosed once Close has begun.
func (p *Partition) CheckpointHighWatermark() error {
	p.checkpointMu.Lock()
	defer p.checkpointMu.Unlock()
	if p.isClosed() {
		return ErrClosed
	}
	dir := p.log.Dir()
	tmp := filepath.Join(dir, highWatermarkFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(p.highWatermark.Load(), 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, highWatermarkFile))
}

// readHighWatermark reads the checkpoint in dir, 0 if absent or damaged.
func readHighWatermark(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, highWatermarkFile))
	if err != nil {
		return 0
	}
	hw, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || hw < 0 {
		return 0
	}
	return hw
}
