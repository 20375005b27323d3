package log

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// Open opens the log of one partition in dir, creating the directory and
// an empty log if needed, and recovers it (see the package documentation):
// batches from the segment holding the recovery point to the end are
// verified and the log is cut at the first bad byte; indexes that fail
// their checks are rebuilt; the leader epoch cache and producer state are
// reconciled with the batches. A log closed cleanly opens without a scan.
func Open(dir string, cfg Config) (*Log, error) {
	cfg = cfg.withDefaults()
	l := &Log{dir: dir, fs: cfg.FS, cfg: cfg, lastFlush: cfg.Now(), producers: producerStates{}}
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log: open %s: %w", dir, err)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.recoverLocked(); err != nil {
		for _, s := range l.segments {
			s.closeFiles()
		}
		return nil, fmt.Errorf("log: open %s: %w", dir, err)
	}
	return l, nil
}

// recoverLocked loads the log from its directory. It runs before the log is
// shared, holding flushMu so the flush round at its end may run.
func (l *Log) recoverLocked() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	if changed, err := l.finishCompactionLocked(names); err != nil {
		return err
	} else if changed {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	var bases []int64
	logs := map[int64]bool{}
	for _, name := range names {
		if base, ok := parseOffsetFileName(name, logSuffix); ok {
			bases = append(bases, base)
			logs[base] = true
		}
		if off, ok := parseOffsetFileName(name, snapshotSuffix); ok {
			l.snapshots = append(l.snapshots, off)
		}
	}
	for _, name := range names {
		// Leftovers of interrupted checkpoint writes, and index files whose
		// segment is gone.
		base, isIndex := parseOffsetFileName(name, indexSuffix)
		if !isIndex {
			base, isIndex = parseOffsetFileName(name, timeIndexSuffix)
		}
		if !isIndex {
			base, isIndex = parseOffsetFileName(name, txnIndexSuffix)
		}
		if strings.HasSuffix(name, tmpSuffix) || isIndex && !logs[base] {
			if err := removeIfExists(l.fs, join(l.dir, name)); err != nil {
				return err
			}
		}
	}
	slices.Sort(bases)
	slices.Sort(l.snapshots)

	recoveryPoint, haveRecoveryPoint := l.readOffsetCheckpoint(recoveryPointFile)
	if !haveRecoveryPoint {
		recoveryPoint = -1 // verify everything
	}
	l.persistedRecoveryPoint = max(recoveryPoint, 0)
	startOffset, _ := l.readOffsetCheckpoint(logStartOffsetFile)
	var checkpointed epochCache
	haveEpochs := false
	if b, err := ReadFile(l.fs, join(l.dir, epochCheckpointFile)); err == nil {
		if checkpointed, err = parseEpochCheckpoint(b); err != nil {
			l.logger().Warn("log: rebuilding damaged leader epoch checkpoint", "dir", l.dir, "err", err)
		} else {
			haveEpochs = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}

	now := l.cfg.Now()
	for _, base := range bases {
		s, err := openSegment(l.fs, l.dir, base, now)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
	}
	// Segments wholly below the log start offset are left over from an
	// interrupted retention run.
	for len(l.segments) > 1 && l.segments[1].baseOffset <= startOffset {
		if err := l.removeSegment(l.segments[0]); err != nil {
			return err
		}
		l.segments = l.segments[1:]
	}

	scanFrom, clean, err := l.recoverSegments(recoveryPoint, haveRecoveryPoint)
	if err != nil {
		return err
	}
	if len(l.segments) == 0 {
		// A new log (or one whose every segment was invalid).
		s, err := createSegment(l.fs, l.dir, startOffset, now)
		if err != nil {
			return err
		}
		l.segments = []*segment{s}
		l.dirDirty = true
		clean = len(bases) == 0
	}
	leo := l.leoLocked()
	l.startOffset = max(startOffset, l.segments[0].baseOffset)
	if l.startOffset > leo {
		// The log start offset moved past everything on disk (a crash during
		// TruncateFullyAndStartAt): restart the log empty there.
		if err := l.resetLocked(l.startOffset); err != nil {
			return err
		}
		leo, scanFrom, clean = l.startOffset, l.startOffset, false
	}

	// The leader epoch cache: trust the checkpoint below scanFrom, where the
	// batches are durable, and rebuild above it from the batches.
	if !haveEpochs {
		scanFrom = l.segments[0].baseOffset
		checkpointed = nil
	}
	l.epochs = nil
	for _, e := range checkpointed {
		if e.StartOffset < scanFrom {
			l.epochs = append(l.epochs, e)
		}
	}
	if err := l.forEachBatchLocked(scanFrom, func(h *BatchHeader, _ []byte) {
		l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	}); err != nil {
		return err
	}
	// An epoch assigned at the LEO that has not written yet survives.
	if n := len(checkpointed); n > 0 && checkpointed[n-1].StartOffset == leo {
		l.epochs.assign(checkpointed[n-1].Epoch, leo)
	}
	l.epochs.truncateFromStart(l.startOffset)
	l.epochsDirty = !slices.Equal(l.epochs, checkpointed)

	// Producer state: the latest snapshot at or below the recovery point,
	// then the batches from there to the LEO, which also rebuild the
	// transaction indexes from there.
	if err := l.loadTxnIndexesLocked(names); err != nil {
		return err
	}
	if err := l.loadProducersLocked(min(max(recoveryPoint, 0), leo)); err != nil {
		return err
	}

	if clean {
		l.recoveryPoint = leo
		if l.dirDirty {
			// A new log: make its first segment's files exist.
			l.dirDirty = false
			return l.fs.SyncDir(l.dir)
		}
		return nil
	}
	// Make the recovered state durable and record it, so the next open
	// starts from here.
	l.recoveryPoint = min(max(recoveryPoint, 0), leo)
	for _, s := range l.segments {
		if s.baseOffset >= scanFrom || s.nextOffset > l.recoveryPoint {
			s.logDirty, s.indexDirty = true, true
		}
	}
	l.dirDirty, l.checkpointDue, l.startOffsetDirty = true, true, true
	return l.flushRoundLocked(false)
}

// recoverSegments loads the segments below the recovery point trusting
// their indexes (after cheap checks), and verifies every batch from the
// segment holding the recovery point on, cutting the log at the first bad
// one. It returns the base offset of the first segment whose batches it
// verified or cut (the recovery point after a clean shutdown), and whether
// the log was closed cleanly: everything up to the recovery point is there
// and nothing after it.
func (l *Log) recoverSegments(recoveryPoint int64, haveRecoveryPoint bool) (scanFrom int64, clean bool, err error) {
	limits := l.cfg.indexLimits()
	first := 0 // the first segment to verify
	if haveRecoveryPoint {
		first = l.segmentIndexLocked(recoveryPoint)
	}
	scanFrom = -1
	prevNext := int64(-1)
	for i := 0; i < len(l.segments); i++ {
		s := l.segments[i]
		if prevNext >= 0 && s.baseOffset != prevNext {
			// Each segment starts where the previous one ended (a roll
			// starts it at the LEO). Anything else means batches are missing
			// at the end of the previous segment, or the segments overlap:
			// the log is cut here.
			l.logger().Warn("log: dropping segments that do not continue the previous one", "dir", l.dir, "base", s.baseOffset, "previous end", prevNext)
			return max(scanFrom, s.baseOffset), false, l.dropSegmentsFrom(i)
		}
		mayBeClean := haveRecoveryPoint && i == first && i == len(l.segments)-1
		if i < first || mayBeClean {
			ok, err := s.load(prevNext, limits)
			if err != nil {
				return 0, false, err
			}
			if ok && mayBeClean && s.nextOffset == recoveryPoint {
				return recoveryPoint, true, nil
			}
			if ok && i < first {
				prevNext = s.nextOffset
				continue
			}
			if !ok {
				l.logger().Warn("log: segment indexes fail checks; rebuilding", "dir", l.dir, "base", s.baseOffset)
			}
		}
		if i >= first && scanFrom < 0 {
			scanFrom = s.baseOffset
		}
		cut, err := s.recover(prevNext, limits, nil)
		if err != nil {
			return 0, false, err
		}
		prevNext = s.nextOffset
		if i < len(l.segments)-1 {
			if err := s.seal(); err != nil {
				return 0, false, err
			}
		}
		if cut {
			l.logger().Warn("log: truncated invalid data", "dir", l.dir, "segment", s.baseOffset, "offset", s.nextOffset, "position", s.size)
			if scanFrom < 0 {
				scanFrom = s.baseOffset // below the recovery point: bit rot
			}
			return scanFrom, false, l.dropSegmentsFrom(i + 1)
		}
	}
	return max(scanFrom, 0), false, nil
}

// dropSegmentsFrom deletes segments[i:] (found after a cut during recovery).
func (l *Log) dropSegmentsFrom(i int) error {
	for _, s := range l.segments[i:] {
		if err := l.removeSegment(s); err != nil {
			return err
		}
	}
	l.segments = l.segments[:i]
	l.dirDirty = true
	return nil
}

// removeSegment closes and removes a segment's files.
func (l *Log) removeSegment(s *segment) error {
	err := s.closeFiles()
	if rerr := removeSegmentFiles(l.fs, l.dir, s.baseOffset); rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("log: remove segment %d: %w", s.baseOffset, err)
	}
	return nil
}

// resetLocked replaces every segment by one empty segment at offset and
// clears the state derived from batches. mu (or exclusive use) and segMu
// for writing must be held.
func (l *Log) resetLocked(offset int64) error {
	l.noteCutLocked(math.MinInt64)
	for _, s := range l.segments {
		if err := l.removeSegment(s); err != nil {
			return err
		}
	}
	l.segments = nil
	s, err := createSegment(l.fs, l.dir, offset, l.cfg.Now())
	if err != nil {
		return err
	}
	l.segments = []*segment{s}
	l.startOffset, l.recoveryPoint = offset, offset
	l.epochs, l.epochsDirty = nil, true
	l.producers = producerStates{}
	// A verification begun before a truncation belongs to a leadership
	// that ended: the markers it waited for may be among what was cut or
	// skipped.
	l.verifying = nil
	l.unstable = nil
	l.closedSpans.Store(0)
	l.pendingSnaps = nil
	l.dirDirty, l.startOffsetDirty, l.checkpointDue = true, true, true
	return nil
}

// forEachBatchLocked calls fn for every batch whose base offset is >= from,
// in offset order, reading headers and bytes from the segment files. The
// batch bytes are only valid during the call.
func (l *Log) forEachBatchLocked(from int64, fn func(h *BatchHeader, batch []byte)) error {
	if from >= l.leoLocked() {
		return nil
	}
	for i := l.segmentIndexLocked(from); i < len(l.segments); i++ {
		s := l.segments[i]
		sc := newBatchScanner(s.logFile, s.lookup(from), s.size, false, nil)
		for sc.next() {
			if sc.h.BaseOffset >= from {
				fn(&sc.h, sc.batch)
			}
		}
		if sc.err != nil {
			return sc.err
		}
		if sc.corrupt != nil {
			return sc.corrupt
		}
	}
	return nil
}

// loadProducersLocked rebuilds producer state: the latest readable snapshot
// at or below limit, then every batch from the snapshot's offset to the
// LEO. Snapshots above the LEO describe batches that are gone and are
// deleted. flushMu must be held.
func (l *Log) loadProducersLocked(limit int64) error {
	leo := l.leoLocked()
	for len(l.snapshots) > 0 && l.snapshots[len(l.snapshots)-1] > leo {
		off := l.snapshots[len(l.snapshots)-1]
		if err := removeIfExists(l.fs, snapshotFileName(l.dir, off)); err != nil {
			return err
		}
		l.snapshots = l.snapshots[:len(l.snapshots)-1]
	}
	l.producers = producerStates{}
	from := l.segments[0].baseOffset
	for i := len(l.snapshots) - 1; i >= 0 && !l.txnIndexLost; i-- {
		off := l.snapshots[i]
		if off > limit {
			continue
		}
		b, err := ReadFile(l.fs, snapshotFileName(l.dir, off))
		if err == nil {
			var p producerStates
			if p, err = decodeProducerSnapshot(b); err == nil {
				l.producers, from = p, off
				break
			}
		}
		l.logger().Warn("log: ignoring unreadable producer snapshot", "dir", l.dir, "offset", off, "err", err)
	}
	// The transaction indexes are rebuilt from the same batches: entries
	// for markers from there on are dropped and added again by the replay.
	for _, s := range l.segments {
		if err := s.dropAbortedFrom(from); err != nil {
			return err
		}
	}
	l.rebuildUnstableLocked()
	nowMs := l.nowMs()
	if err := l.forEachBatchLocked(from, func(h *BatchHeader, b []byte) { l.applyBatchLocked(h, b, nowMs) }); err != nil {
		return err
	}
	for _, s := range l.segments {
		if err := s.writePendingIndexes(); err != nil {
			return err
		}
	}
	l.txnIndexLost = false
	l.producers.expire(nowMs, l.cfg.ProducerIDExpirationMs)
	return nil
}

// loadTxnIndexesLocked reads the transaction index of every segment that
// has one (names: the directory's entries). One that fails its checks is
// emptied and txnIndexLost set: producer state is then rebuilt from the
// first segment, which rebuilds every transaction index.
func (l *Log) loadTxnIndexesLocked(names []string) error {
	have := map[int64]bool{}
	for _, name := range names {
		if base, ok := parseOffsetFileName(name, txnIndexSuffix); ok {
			have[base] = true
		}
	}
	for _, s := range l.segments {
		if !have[s.baseOffset] {
			continue
		}
		f, err := l.fs.OpenFile(segmentFileName(l.dir, s.baseOffset, txnIndexSuffix), os.O_RDWR|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("log: open transaction index %d: %w", s.baseOffset, err)
		}
		s.txnFile = f
		b, err := readAll(f)
		if err != nil {
			return err
		}
		// Entries past the segment's end (its tail was cut) go with the
		// replay below, which starts at or before the cut.
		if s.aborted, err = decodeTxnIndex(b, s.baseOffset, math.MaxInt64); err != nil {
			l.logger().Warn("log: rebuilding transaction indexes", "dir", l.dir, "segment", s.baseOffset, "err", err)
			s.aborted = nil
			if err := f.Truncate(0); err != nil {
				return err
			}
			s.indexDirty = true
			l.txnIndexLost = true
		}
	}
	return nil
}

func snapshotFileName(dir string, offset int64) string {
	return segmentFileName(dir, offset, snapshotSuffix)
}

// writeSnapshotLocked writes a producer snapshot file. flushMu must be held.
func (l *Log) writeSnapshotLocked(snap pendingSnapshot) error {
	name := fmt.Sprintf("%020d%s", snap.offset, snapshotSuffix)
	if err := WriteFileAtomic(l.fs, l.dir, name, snap.data); err != nil {
		return err
	}
	if i, found := slices.BinarySearch(l.snapshots, snap.offset); !found {
		l.snapshots = slices.Insert(l.snapshots, i, snap.offset)
	}
	return nil
}

// removeSnapshotsLocked deletes the snapshot files that keep(offset)
// rejects. flushMu must be held.
func (l *Log) removeSnapshotsLocked(keep func(offset int64) bool) error {
	var kept []int64
	var errs []error
	for _, off := range l.snapshots {
		if keep(off) {
			kept = append(kept, off)
			continue
		}
		if err := removeIfExists(l.fs, snapshotFileName(l.dir, off)); err != nil {
			errs = append(errs, err)
			kept = append(kept, off)
		}
	}
	l.snapshots = kept
	return errors.Join(errs...)
}
