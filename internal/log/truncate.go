package log

import (
	"fmt"
)

// Truncate removes every batch at and above offset (a follower cutting its
// log at the divergence point found with OffsetsForLeaderEpoch). A batch
// that straddles offset is removed whole, so the new LEO is the end of the
// last batch kept (offset itself when offset is a batch boundary). The leader epoch cache loses the
// epochs starting at or above the new LEO and producer state is rebuilt
// from the latest snapshot below it. offset >= LEO cuts no record but
// still drops epochs starting at the LEO (epochs without records); offset
// at or below the log start offset empties the log and restarts it at
// offset. The truncation is durable when Truncate returns.
//
// Truncate blocks appends while it cuts files (not while it syncs them).
func (l *Log) Truncate(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if leo := l.leoLocked(); offset >= leo {
		// Nothing to cut, but the epoch cache may end with an epoch that
		// holds no records: this replica led it and was replaced before
		// appending. It goes, as in Kafka's truncateTo; a follower
		// reporting it as its last fetched epoch would be told of the
		// same divergence, truncate to no effect, and ask again forever.
		dropped := l.epochs.truncateFromEnd(leo)
		if dropped {
			l.epochsDirty = true
		}
		l.mu.Unlock()
		if !dropped {
			return nil
		}
		return l.flushRoundLocked(false)
	}
	if offset <= l.startOffset {
		// Nothing visible stays; batches below the start offset that share
		// a segment with it would otherwise linger.
		l.mu.Unlock()
		return l.truncateFullyLocked(offset)
	}
	// The batch holding offset goes whole; if it also holds the start
	// offset, nothing visible stays and the log restarts at its start.
	// (The bytes below the LEO cannot change under us: flushMu keeps other
	// truncations and retention out.)
	_, newLEO, err := l.segments[l.segmentIndexLocked(offset)].findTruncationPoint(offset)
	start := l.startOffset
	l.mu.Unlock()
	if err != nil {
		return l.fail(err)
	}
	if newLEO <= start {
		return l.truncateFullyLocked(start)
	}

	// Lower the recovery point on disk first: if the machine crashes
	// halfway through, recovery then re-verifies everything from here,
	// whichever of the old and new bytes survived.
	if offset < l.persistedRecoveryPoint {
		if err := l.writeOffsetCheckpoint(recoveryPointFile, offset); err != nil {
			return l.fail(err)
		}
		l.persistedRecoveryPoint = offset
	}

	l.segMu.Lock()
	l.mu.Lock()
	removed, err := l.truncateLocked(offset)
	l.mu.Unlock()
	for _, s := range removed {
		if rerr := l.removeSegment(s); rerr != nil && err == nil {
			err = l.fail(rerr)
		}
	}
	l.segMu.Unlock()
	if err != nil {
		return err
	}
	if err := l.removeSnapshotsLocked(func(off int64) bool { return off <= offset }); err != nil {
		return l.fail(err)
	}
	// Make the cut and the removals durable now, before newer appends
	// could reach the disk without them.
	return l.flushRoundLocked(false)
}

// truncateLocked cuts the in-memory state and the files at offset and
// returns the segments to remove. flushMu, segMu (write) and mu are held.
func (l *Log) truncateLocked(offset int64) ([]*segment, error) {
	leo := l.leoLocked()
	if offset >= leo {
		return nil, nil // appends cannot have made this so, but be safe
	}
	i := l.segmentIndexLocked(offset)
	s := l.segments[i]
	pos, newLEO, err := s.findTruncationPoint(offset)
	if err != nil {
		return nil, l.failLocked(err)
	}
	l.noteCutLocked(newLEO)
	removed := append([]*segment(nil), l.segments[i+1:]...)
	l.segments = l.segments[:i+1]
	if len(removed) > 0 {
		l.dirDirty = true
	}
	if err := s.truncateTo(pos, newLEO, l.cfg.indexLimits()); err != nil {
		return removed, l.failLocked(err)
	}
	newLEO = s.nextOffset
	l.recoveryPoint = min(l.recoveryPoint, newLEO)
	if l.epochs.truncateFromEnd(newLEO) {
		l.epochsDirty = true
	}
	var kept []pendingSnapshot
	for _, snap := range l.pendingSnaps {
		if snap.offset <= newLEO {
			kept = append(kept, snap)
		}
	}
	l.pendingSnaps = kept
	// The files of removed segments are still open; producer state is
	// rebuilt from the segments that stay. Verifications begun before go
	// (resetLocked).
	l.verifying = nil
	if err := l.loadProducersLocked(newLEO); err != nil {
		return removed, l.failLocked(err)
	}
	l.logger().Info("log: truncated", "dir", l.dir, "offset", offset, "leo", newLEO, "old leo", leo)
	return removed, nil
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset, which becomes both the log start offset and the LEO (a
// follower whose log ends below the leader's log start offset). The leader
// epoch cache and producer state are cleared.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: %d", ErrOffsetOutOfRange, offset)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	err := l.usableLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	// Record the new start first: if a crash interrupts the rest, recovery
	// finds every segment below it and finishes the job.
	if err := l.writeOffsetCheckpoint(logStartOffsetFile, offset); err != nil {
		return l.fail(err)
	}
	if err := l.writeOffsetCheckpoint(recoveryPointFile, offset); err != nil {
		return l.fail(err)
	}
	l.persistedRecoveryPoint = offset
	l.segMu.Lock()
	l.mu.Lock()
	err := l.resetLocked(offset)
	if err != nil {
		err = l.failLocked(err)
	}
	l.mu.Unlock()
	l.segMu.Unlock()
	if err != nil {
		return err
	}
	if err := l.removeSnapshotsLocked(func(int64) bool { return false }); err != nil {
		return l.fail(err)
	}
	l.logger().Info("log: truncated fully", "dir", l.dir, "start", offset)
	return l.flushRoundLocked(false)
}

// EnforceRetention deletes the oldest segments, never the active one, while
// their largest timestamp is older than retention.ms or the log without
// them is still at least retention.bytes, and advances the log start
// offset past them. It also expires idle producers and forgotten
// verifications (verificationExpiryMs). It returns the number
// of segments deleted.
func (l *Log) EnforceRetention() (int, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.segMu.Lock()
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		l.segMu.Unlock()
		return 0, err
	}
	now := l.nowMs()
	l.producers.expire(now, l.cfg.ProducerIDExpirationMs)
	l.expireVerificationsLocked(now)
	var total int64
	for _, s := range l.segments {
		total += s.size
	}
	n := 0
	var err error
	for _, s := range l.segments[:len(l.segments)-1] {
		bySize := l.cfg.RetentionBytes >= 0 && total-s.size >= l.cfg.RetentionBytes
		byTime := false
		if l.cfg.RetentionMs >= 0 {
			var ts int64
			if ts, err = s.largestTimestamp(); err != nil {
				break
			}
			byTime = now-ts > l.cfg.RetentionMs
		}
		if !bySize && !byTime {
			break
		}
		total -= s.size
		n++
	}
	return n, l.deleteOldestSegments(n, l.segments[min(n, len(l.segments)-1)].baseOffset, err)
}

// AdvanceStartOffset moves the log start offset up to offset (the
// DeleteRecords API) and deletes the segments wholly below it. An offset at
// or below the current start is a no-op; above the LEO is
// ErrOffsetOutOfRange.
func (l *Log) AdvanceStartOffset(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.segMu.Lock()
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		l.segMu.Unlock()
		return err
	}
	if offset <= l.startOffset {
		l.mu.Unlock()
		l.segMu.Unlock()
		return nil
	}
	if leo := l.leoLocked(); offset > leo {
		l.mu.Unlock()
		l.segMu.Unlock()
		return fmt.Errorf("%w: start offset %d beyond LEO %d", ErrOffsetOutOfRange, offset, leo)
	}
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].baseOffset <= offset {
		n++
	}
	return l.deleteOldestSegments(n, offset, nil)
}

// deleteOldestSegments removes segments[:n], sets the log start offset to
// at least newStart, and makes it durable. It is entered holding flushMu,
// segMu (write) and mu, and releases mu and segMu. prior is an error met
// while choosing the segments, reported after the deletion.
func (l *Log) deleteOldestSegments(n int, newStart int64, prior error) error {
	removed := l.segments[:n:n]
	l.segments = l.segments[n:]
	if newStart > l.startOffset {
		l.startOffset = newStart
		l.startOffsetDirty = true
		if l.epochs.truncateFromStart(newStart) {
			l.epochsDirty = true
		}
	}
	start := l.startOffset
	firstBase := l.segments[0].baseOffset
	dirty := l.startOffsetDirty
	l.mu.Unlock()
	var err error
	for _, s := range removed {
		if rerr := l.removeSegment(s); rerr != nil && err == nil {
			err = rerr
		}
	}
	l.segMu.Unlock()
	if len(removed) > 0 {
		l.logger().Info("log: deleted segments", "dir", l.dir, "count", len(removed), "start offset", start)
		// Snapshots below the first segment describe deleted batches; keep
		// the newest of them, which producer state may still start from.
		newest := int64(-1)
		for _, off := range l.snapshots {
			if off <= firstBase {
				newest = off
			}
		}
		if serr := l.removeSnapshotsLocked(func(off int64) bool { return off >= newest }); serr != nil && err == nil {
			err = serr
		}
	}
	if dirty {
		// The checkpoint write syncs the directory, which also makes the
		// removals durable.
		if ferr := l.flushRoundLocked(false); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err == nil {
		err = prior
	}
	return err
}
