package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Log is the on-disk log of one partition. It is safe for concurrent use.
//
// Goroutines and locks. Any goroutine may call any method. Four locks,
// always taken in this order:
//
//  0. compactMu makes Compact calls run one at a time; Close and Delete
//     take it to wait for a running Compact, after telling it to stop.
//  1. flushMu serializes durability work: flush rounds (the fsyncs of
//     Flush), checkpoint and snapshot writes, and the operations that
//     remove, shrink or replace files (Truncate*, retention, Close, Delete,
//     and the swap of a compacted segment, but not the rest of Compact).
//     It may be held across fsyncs. Appends and reads never take it.
//  2. segMu guards segment files against being shrunk, closed or removed
//     under a reader: Slice, BatchAtTimestamp and MaxTimestamp hold it for
//     reading while they read files without mu, and so does each read or
//     sendfile of a Records (Records.WriteTo, AppendTo); the operations of (1) that
//     remove or shrink bytes hold it for writing while they do. Appends do
//     not take it: they only add bytes after those readers look at.
//  3. mu, the append lock, guards the in-memory state below. It is held for
//     in-memory work and page-cache writes, never across an fsync, so
//     appends go on while a flush round syncs.
type Log struct {
	dir string
	fs  FS // from the Config given to Open; fixed for the log's life

	// compactMu: one Compact at a time (it is taken before flushMu).
	// compactStop, set by Close and Delete, tells a running Compact to
	// stop; they then take compactMu to wait for it.
	compactMu   sync.Mutex
	compactStop atomic.Bool

	flushMu sync.Mutex
	// Guarded by flushMu:
	// persistedRecoveryPoint is the offset in the recovery-point file.
	persistedRecoveryPoint int64
	// snapshots are the offsets of the producer snapshot files, ascending.
	snapshots []int64

	segMu sync.RWMutex

	mu  sync.Mutex
	cfg Config
	// segments are ordered by base offset; the last is the active segment,
	// the only one appended to.
	segments []*segment
	// startOffset is the log start offset: reads below it are out of range.
	startOffset int64
	// recoveryPoint is the flushed offset: every batch below it is durable.
	// Only flush rounds raise it; truncation lowers it.
	recoveryPoint int64
	lastFlush     time.Time
	epochs        epochCache
	producers     producerStates
	// unstable are the transactions that hold the last stable offset back:
	// open ones and those closed by a marker not known to be replicated,
	// by first offset (txn.go).
	unstable []txnSpan
	// closedSpans counts the spans of unstable closed by a marker; read
	// without mu by ForgetReplicatedTxns.
	closedSpans atomic.Int64
	// verifying holds, per producer, the token of its pending transaction
	// verification (BeginVerification) and when it began.
	verifying map[int64]verification
	// txnIndexLost: a transaction index failed its checks at Open; the
	// next producer state load scans from the first segment.
	txnIndexLost bool
	// Work for the next flush round: a leader-epoch-checkpoint that differs
	// from the cache, the log-start-offset checkpoint, producer snapshots
	// taken at rolls, a recovery-point checkpoint after a roll, and a
	// directory sync after files were created or removed.
	epochsDirty      bool
	startOffsetDirty bool
	pendingSnaps     []pendingSnapshot
	checkpointDue    bool
	dirDirty         bool
	closed           bool
	// compacting is the running Compact, nil if none; truncations tell it
	// what they cut (compactRun.cutBelow).
	compacting *compactRun
	// failure is the first I/O error after which the files are in an
	// unknown state; it makes every later call fail (see ErrFailed).
	failure error
}

// AppendInfo describes an append.
type AppendInfo struct {
	// FirstOffset and LastOffset are the offsets of the first and last
	// record appended (for ErrDuplicateSequence, of the original batch).
	FirstOffset, LastOffset int64
	// MaxTimestamp is the largest timestamp appended (-1 if none), and
	// OffsetOfMaxTimestamp the offset of its record.
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	// LogStartOffset is the log start offset after the append.
	LogStartOffset int64
}

func (l *Log) logger() *slog.Logger {
	if l.cfg.Logger != nil {
		return l.cfg.Logger
	}
	return slog.Default()
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// StopCompaction makes a running Compact stop at its next check, leaving
// the segments it has not swapped in as they were, and every later
// Compact return ErrClosed at once: for a log about to be closed, so that
// its owner need not wait for a long compaction run (as Kafka's shutdown
// aborts its cleaner). Close and Delete do the same first.
func (l *Log) StopCompaction() { l.compactStop.Store(true) }

func (l *Log) leoLocked() int64 { return l.active().nextOffset }

func (l *Log) nowMs() int64 { return l.cfg.Now().UnixMilli() }

// usableLocked returns why the log cannot be used, or nil.
func (l *Log) usableLocked() error {
	if l.closed {
		return ErrClosed
	}
	if l.failure != nil {
		return fmt.Errorf("%w: %w", ErrFailed, l.failure)
	}
	return nil
}

// failLocked records an I/O error that leaves the files in an unknown state
// and returns the error to report.
func (l *Log) failLocked(err error) error {
	if l.failure == nil {
		l.failure = err
		l.logger().Error("log: I/O error; the log refuses further work until reopened", "dir", l.dir, "err", err)
	}
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// Err returns the I/O error that failed the log (wrapping ErrFailed), or
// nil while it is usable. A failed log refuses appends and flushes until
// it is reopened.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrFailed, l.failure)
}

// fail is failLocked for callers that do not hold mu.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failLocked(err)
}

// SetConfig applies changed topic configuration (roll, retention, flush and
// producer settings) from the next operation on. The FS cannot change.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.withDefaults()
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg.FS = l.cfg.FS
	l.cfg = cfg
}

// StartOffset returns the log start offset.
func (l *Log) StartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.startOffset
}

// EndOffset returns the log end offset (LEO): the offset the next record
// appended gets.
func (l *Log) EndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leoLocked()
}

// FlushedOffset returns the recovery point: every record below it is
// durable.
func (l *Log) FlushedOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recoveryPoint
}

// SyncOnAppend reports whether the log is in sync mode (flush.messages <=
// 1): callers must Flush before acknowledging an append.
func (l *Log) SyncOnAppend() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg.FlushMessages <= 1
}

// Size returns the bytes of batches in the log's segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// NumSegments returns the number of segments.
func (l *Log) NumSegments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segments)
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Epochs returns a copy of the leader epoch cache.
func (l *Log) Epochs() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.epochs)
}

// LatestEpoch returns the latest leader epoch in the cache, -1 if none.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.latest()
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch exactly as Kafka's
// leader-epoch cache does: for the latest epoch, (epoch, LEO); for an older
// one, the largest cached epoch <= epoch and the start offset of the next
// cached epoch; for an epoch below every cached one, (epoch, start offset of
// the earliest); for an epoch above the latest, or an empty cache, (-1, -1).
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leoLocked())
}

// AssignEpoch records that leader epoch epoch starts at the LEO (on
// becoming leader, before any batch of the epoch) and makes the
// leader-epoch-checkpoint durable. An epoch equal to the latest is a no-op;
// an older one is ErrStaleLeaderEpoch.
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	latest := l.epochs.latest()
	if epoch < latest || epoch < 0 {
		l.mu.Unlock()
		return fmt.Errorf("%w: %d, latest %d", ErrStaleLeaderEpoch, epoch, latest)
	}
	changed := l.epochs.assign(epoch, l.leoLocked())
	l.epochsDirty = l.epochsDirty || changed
	l.mu.Unlock()
	if !changed {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushRoundLocked(false)
}

// Producer returns the state of idempotent producer id.
func (l *Log) Producer(id int64) (ProducerState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.producers[id]
	if !ok {
		return ProducerState{}, false
	}
	return e.state(id), true
}

// Producers returns the state of every producer the log tracks, by id
// (DescribeProducers).
func (l *Log) Producers() []ProducerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ProducerState, 0, len(l.producers))
	for id, e := range l.producers {
		out = append(out, e.state(id))
	}
	slices.SortFunc(out, func(a, b ProducerState) int { return cmpInt64(a.ProducerID, b.ProducerID) })
	return out
}

// Close flushes the log, writes its checkpoints (recovery point = LEO, so
// the next Open scans nothing, a producer snapshot, the leader epoch cache
// and the log start offset) and closes its files. After an I/O failure it
// only closes the files, leaving recovery to the next Open.
func (l *Log) Close() error {
	l.compactStop.Store(true)
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	var err error
	if l.failure == nil {
		if err = l.active().seal(); err != nil {
			err = l.failLocked(err)
		} else {
			l.pendingSnaps = append(l.pendingSnaps, pendingSnapshot{offset: l.leoLocked(), data: l.producers.encode()})
			l.checkpointDue, l.startOffsetDirty = true, true
		}
	}
	failed := l.failure != nil
	l.mu.Unlock()
	if !failed {
		err = l.flushRoundLocked(true)
	}
	l.segMu.Lock()
	defer l.segMu.Unlock()
	for _, s := range l.segments {
		if cerr := s.closeFiles(); cerr != nil && err == nil {
			err = fmt.Errorf("log: close: %w", cerr)
		}
	}
	return err
}

// Delete closes the log without writing checkpoints and removes its
// directory.
func (l *Log) Delete() error {
	l.discard()
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("log: delete %s: %w", l.dir, err)
	}
	return nil
}

// Retire closes the log without writing checkpoints and renames its
// directory to tomb, for the caller to remove when it likes: removing a
// large log takes time, and a partition re-created under the same name
// needs the directory's name back at once (Kafka's "-delete" directories).
func (l *Log) Retire(tomb string) error {
	l.discard()
	if err := l.fs.Rename(l.dir, tomb); err != nil {
		return fmt.Errorf("log: retire %s: %w", l.dir, err)
	}
	return nil
}

// discard closes the log's files without flushing or checkpointing.
func (l *Log) discard() {
	l.compactStop.Store(true)
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.mu.Lock()
	wasClosed := l.closed
	l.closed = true
	l.mu.Unlock()
	if !wasClosed {
		for _, s := range l.segments {
			s.closeFiles()
		}
	}
}

// maybeRollLocked starts a new active segment if the append of size bytes,
// ending at lastOffset, with largest timestamp maxTs, calls for one.
func (l *Log) maybeRollLocked(size, lastOffset, maxTs int64) error {
	s := l.active()
	var reason string
	switch {
	case !s.fitsRelOffset(lastOffset):
		reason = "relative offset overflow"
	case s.size == 0:
		return nil
	case s.size+size > l.cfg.SegmentBytes:
		reason = "segment.bytes"
	case s.indexFull(l.cfg.indexLimits()):
		reason = "segment.index.bytes"
	case l.segmentAgeMsLocked(s, maxTs) > l.cfg.SegmentMs:
		reason = "segment.ms"
	default:
		return nil
	}
	return l.rollLocked(reason)
}

// segmentAgeMsLocked measures a segment's age for segment.ms as Kafka does:
// from its first batch's timestamp to the incoming one when both exist,
// otherwise by the broker clock since its first append (or since the log
// was opened).
func (l *Log) segmentAgeMsLocked(s *segment, incomingTs int64) int64 {
	if s.firstTimestamp >= 0 && incomingTs >= 0 {
		return incomingTs - s.firstTimestamp
	}
	return l.cfg.Now().Sub(s.firstAppend).Milliseconds()
}

// rollLocked seals the active segment and starts a new one at the LEO. The
// new files are made durable, and a producer snapshot and the recovery
// point written, by the next flush round.
func (l *Log) rollLocked(reason string) error {
	old := l.active()
	if err := old.seal(); err != nil {
		return l.failLocked(err)
	}
	base := l.leoLocked()
	s, err := createSegment(l.fs, l.dir, base, l.cfg.Now())
	if err != nil {
		return err // nothing was written; the log stays usable
	}
	// The new files are empty: only their directory entries need a sync.
	l.segments = append(l.segments, s)
	l.dirDirty, l.checkpointDue = true, true
	l.pendingSnaps = append(l.pendingSnaps, pendingSnapshot{offset: base, data: l.producers.encode()})
	l.logger().Debug("log: rolled segment", "dir", l.dir, "base", base, "reason", reason)
	return nil
}

// validateBatches checks the header and CRC of every batch in b, which
// must hold whole batches only. leader adds the checks Kafka applies to
// producer batches: record count matching the offset delta.
// validateBatches checks the batches' headers, and their CRCs unless leader
// (see Append).
func validateBatches(b []byte, leader bool) (n int, err error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: no batches", ErrCorruptBatch)
	}
	for pos := 0; pos < len(b); n++ {
		h, err := ParseBatchHeader(b[pos:])
		if err == nil && !leader {
			err = VerifyCRC(b[pos:], &h)
		}
		if err == nil && leader && (h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1) {
			err = fmt.Errorf("%w: %d records, last offset delta %d", ErrBadOffsets, h.RecordCount, h.LastOffsetDelta)
		}
		if err == nil && leader && h.IsControl() {
			err = errors.New("log: control batches are appended with AppendMarker")
		}
		if err != nil {
			return 0, fmt.Errorf("%w: batch %d at byte %d: %w", ErrCorruptBatch, n, pos, err)
		}
		pos += h.Size()
	}
	return n, nil
}

// Append appends batches (one or more whole v2 batches) as the leader of
// leaderEpoch. It validates every header (lengths, magic, offsets, record
// count) but not the CRC: the caller has just verified it on these very
// bytes (records.Validate on the produce path), and computing it twice per
// batch would double the hot path's checksum work (DESIGN §7). It checks
// idempotent producer sequences batch by batch, assigns offsets from the LEO and
// stamps the leader epoch by patching the batches in place (the caller's
// buffer is modified), then writes all of them with one write. On any
// error nothing is appended; ErrDuplicateSequence comes with the original
// offsets of the duplicate batch in AppendInfo.
//
// In sync mode the append is durable only after a later Flush returns.
func (l *Log) Append(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.append(batches, leaderEpoch, false, 0)
}

// append is Append, checking the verification of transactional batches if
// verify (AppendVerified).
func (l *Log) append(batches []byte, leaderEpoch int32, verify bool, token uint64) (AppendInfo, error) {
	if _, err := validateBatches(batches, true); err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if latest := l.epochs.latest(); leaderEpoch < latest {
		return AppendInfo{}, fmt.Errorf("%w: append in epoch %d, latest %d", ErrStaleLeaderEpoch, leaderEpoch, latest)
	}
	leo := l.leoLocked()
	if info, err := l.checkProducersLocked(batches, leo, verify, token); err != nil {
		return info, err
	}
	for pos, offset := 0, leo; pos < len(batches); {
		b := batches[pos:]
		h, _ := ParseBatchHeader(b) // validated above
		SetBaseOffset(b, offset)
		SetPartitionLeaderEpoch(b, leaderEpoch)
		offset += int64(h.LastOffsetDelta) + 1
		pos += h.Size()
	}
	return l.appendLocked(batches)
}

// checkProducersLocked checks the idempotent-producer and coordinator
// transactional batches of a leader append in order, as if stored from offset leo on, letting the state of
// earlier batches of the request count for later ones.
func (l *Log) checkProducersLocked(batches []byte, leo int64, verify bool, token uint64) (AppendInfo, error) {
	// The state the request's own batches leave, per producer; requests
	// rarely carry more than one producer, so a slice beats a map.
	type pending struct {
		id    int64
		entry producerEntry
		known bool
	}
	var updates []pending
	nowMs := l.nowMs()
	for pos, offset := 0, leo; pos < len(batches); {
		h, _ := ParseBatchHeader(batches[pos:])
		h.BaseOffset = offset
		offset += int64(h.LastOffsetDelta) + 1
		pos += h.Size()
		// A transactional batch without sequences is a coordinator's
		// (the group coordinator's transactional offset commit): no
		// sequence to check, but its epoch and its transaction are, as
		// for the producer's own batches, so that a fenced producer's
		// late commit cannot reopen a transaction after its marker.
		coordinator := h.IsTransactional() && h.ProducerID >= 0 && !isIdempotent(&h)
		if !isIdempotent(&h) && !coordinator {
			continue
		}
		i := slices.IndexFunc(updates, func(p pending) bool { return p.id == h.ProducerID })
		if i < 0 {
			e, known := l.producers[h.ProducerID]
			updates = append(updates, pending{id: h.ProducerID, entry: e, known: known})
			i = len(updates) - 1
		}
		var dup producerBatch
		var err error
		if coordinator {
			if updates[i].known && h.ProducerEpoch < updates[i].entry.epoch {
				err = fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, updates[i].entry.epoch)
			}
		} else {
			dup, err = checkProducerBatch(updates[i].entry, updates[i].known, &h)
		}
		if err == nil && verify && h.IsTransactional() && !(updates[i].entry.inTxn && updates[i].entry.epoch == h.ProducerEpoch) &&
			(token == 0 || l.verifying[h.ProducerID].token != token) {
			err = fmt.Errorf("%w: producer %d epoch %d: batch not part of a verified transaction", ErrInvalidTxnState, h.ProducerID, h.ProducerEpoch)
		}
		if err != nil {
			info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogStartOffset: l.startOffset}
			if errors.Is(err, ErrDuplicateSequence) {
				info.FirstOffset, info.LastOffset = dup.firstOffset, dup.lastOffset
			}
			return info, err
		}
		if coordinator {
			updates[i].entry = applyCoordinatorBatch(updates[i].entry, &h, nowMs)
		} else {
			updates[i].entry = applyProducerBatch(updates[i].entry, &h, nowMs)
		}
		updates[i].known = true
	}
	return AppendInfo{}, nil
}

// AppendReplicated appends batches as a follower: offsets and leader epochs
// are the leader's, unchanged. The first batch must start at the LEO and
// each next one where the previous one ended (ErrNonMonotonic otherwise):
// samsa logs have no gaps (compaction keeps them so), and recovery
// relies on that to spot damaged offsets. Producer state and the leader
// epoch cache follow the batches; sequences are not checked.
//
// One exception: a first batch that is a compaction filler (see Compact)
// starting below the LEO and ending at or above it is trimmed to start at
// the LEO, patching the caller's buffer in place. The leader merged the
// emptied batches around this follower's LEO into that filler; the
// offsets below the LEO that it covers are this log's own, which the
// leader no longer has any record of (its own compaction removes them
// here too).
func (l *Log) AppendReplicated(batches []byte) (AppendInfo, error) {
	if _, err := validateBatches(batches, false); err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return AppendInfo{}, err
	}
	next := l.leoLocked()
	for pos, i := 0, 0; pos < len(batches); i++ {
		h, _ := ParseBatchHeader(batches[pos:])
		if i == 0 && h.BaseOffset < next && h.LastOffset() >= next && isFiller(&h) {
			trimFiller(batches[pos:], &h, next)
		}
		if h.BaseOffset != next {
			return AppendInfo{}, fmt.Errorf("%w: batch %d at offset %d, expected %d", ErrNonMonotonic, i, h.BaseOffset, next)
		}
		next = h.NextOffset()
		pos += h.Size()
	}
	return l.appendLocked(batches)
}

// appendLocked writes validated batches whose offsets are assigned, then
// updates indexes, the leader epoch cache and producer state.
func (l *Log) appendLocked(batches []byte) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1}
	maxTsPos := -1
	for pos := 0; pos < len(batches); {
		h, _ := ParseBatchHeader(batches[pos:])
		if info.FirstOffset < 0 {
			info.FirstOffset = h.BaseOffset
		}
		info.LastOffset = h.LastOffset()
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, maxTsPos = h.MaxTimestamp, pos
		}
		pos += h.Size()
	}
	if err := l.maybeRollLocked(int64(len(batches)), info.LastOffset, info.MaxTimestamp); err != nil {
		return AppendInfo{}, err
	}
	s := l.active()
	start := s.size
	if start == 0 {
		s.firstAppend = l.cfg.Now()
	}
	if _, err := s.logFile.Write(batches); err != nil {
		// Part of the bytes may be in the file: stop, and let recovery sort
		// out what survived. The LEO has not moved, so no reader sees them.
		return AppendInfo{}, l.failLocked(fmt.Errorf("log: append to segment %d: %w", s.baseOffset, err))
	}
	s.logDirty = true
	limits := l.cfg.indexLimits()
	nowMs := l.nowMs()
	for pos := 0; pos < len(batches); {
		h, _ := ParseBatchHeader(batches[pos:])
		s.indexBatch(&h, start+int64(pos), limits)
		if l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) {
			l.epochsDirty = true
		} else if h.PartitionLeaderEpoch < l.epochs.latest() {
			l.logger().Warn("log: batch with a leader epoch older than the cache's latest",
				"dir", l.dir, "offset", h.BaseOffset, "epoch", h.PartitionLeaderEpoch, "latest", l.epochs.latest())
		}
		l.applyBatchLocked(&h, batches[pos:pos+h.Size()], nowMs)
		pos += h.Size()
	}
	if err := s.writePendingIndexes(); err != nil {
		return AppendInfo{}, l.failLocked(fmt.Errorf("log: index of segment %d: %w", s.baseOffset, err))
	}
	if maxTsPos >= 0 {
		h, _ := ParseBatchHeader(batches[maxTsPos:])
		info.OffsetOfMaxTimestamp = offsetOfMaxTimestamp(batches[maxTsPos:], &h)
	}
	info.LogStartOffset = l.startOffset
	return info, nil
}

// Flush makes everything appended before the call durable: it fdatasyncs
// the files written since the last flush and syncs the directory after
// files were created or removed, then advances the recovery point.
//
// Group commit: one flush round at a time runs, without the append lock,
// so appends continue meanwhile. A caller whose appends an earlier round
// covered (one that finished while it waited for its turn, or before it
// called) returns without a round of its own; otherwise its round covers
// every append made until the round starts, on behalf of later callers too.
func (l *Log) Flush() error {
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	target := l.leoLocked()
	done := l.recoveryPoint >= target
	l.mu.Unlock()
	if done {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	done = l.recoveryPoint >= target
	l.mu.Unlock()
	if done {
		return nil
	}
	return l.flushRoundLocked(false)
}

// flushRoundLocked runs one flush round: under mu it takes the LEO and the
// list of work, then syncs files and writes checkpoints without mu, then
// raises the recovery point to that LEO. flushMu must be held; closing
// allows the round during Close.
func (l *Log) flushRoundLocked(closing bool) error {
	l.mu.Lock()
	if l.failure != nil || l.closed && !closing {
		err := l.usableLocked()
		l.mu.Unlock()
		return err
	}
	upTo := l.leoLocked()
	checkpoint := l.checkpointDue
	var files []File
	for _, s := range l.segments {
		if s.logDirty {
			files = append(files, s.logFile)
			s.logDirty = false
		}
		// Index files matter only below the persisted recovery point
		// (recovery rebuilds the others), so they are synced only by a
		// round that moves it: one fsync per append instead of three.
		if s.indexDirty && checkpoint {
			files = append(files, s.indexFile, s.timeIdxFile)
			if s.txnFile != nil {
				files = append(files, s.txnFile)
			}
			s.indexDirty = false
		}
		if s.txnCreated {
			l.dirDirty, s.txnCreated = true, false
		}
	}
	syncDir := l.dirDirty
	var epochs []byte
	if l.epochsDirty {
		epochs = l.epochs.encode()
	}
	startOffset, writeStart := l.startOffset, l.startOffsetDirty
	snaps := l.pendingSnaps
	l.dirDirty, l.epochsDirty, l.startOffsetDirty, l.pendingSnaps, l.checkpointDue = false, false, false, nil, false
	onFlush := l.cfg.OnFlush
	l.mu.Unlock()

	began := time.Now()
	err := l.syncAndCheckpoint(files, syncDir, snaps, epochs, writeStart, startOffset, checkpoint, upTo)
	if onFlush != nil && err == nil {
		onFlush(time.Since(began))
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.failLocked(err)
	}
	l.recoveryPoint = max(l.recoveryPoint, upTo)
	l.lastFlush = l.cfg.Now()
	return nil
}

// syncAndCheckpoint is the I/O of a flush round, in an order that keeps the
// files consistent at every instant: data and indexes first, then the
// directory, then the checkpoints that vouch for them, the recovery point
// last. flushMu must be held.
func (l *Log) syncAndCheckpoint(files []File, syncDir bool, snaps []pendingSnapshot, epochs []byte,
	writeStart bool, startOffset int64, checkpoint bool, upTo int64) error {
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("log: sync: %w", err)
		}
	}
	if syncDir {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("log: sync directory: %w", err)
		}
	}
	for _, snap := range snaps {
		if err := l.writeSnapshotLocked(snap); err != nil {
			return err
		}
	}
	if epochs != nil {
		if err := WriteFileAtomic(l.fs, l.dir, epochCheckpointFile, epochs); err != nil {
			return err
		}
	}
	if writeStart {
		if err := l.writeOffsetCheckpoint(logStartOffsetFile, startOffset); err != nil {
			return err
		}
	}
	if checkpoint {
		if err := l.writeOffsetCheckpoint(recoveryPointFile, upTo); err != nil {
			return err
		}
		l.persistedRecoveryPoint = upTo
	}
	return nil
}

// NeedsFlush reports whether flush.messages or flush.ms call for a Flush
// now, or a segment rolled since the last one (a flush then also writes
// the recovery point and a producer snapshot). Page-cache mode's background
// flusher polls it.
func (l *Log) NeedsFlush() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.usableLocked() != nil {
		return false
	}
	unflushed := l.leoLocked() - l.recoveryPoint
	switch {
	case l.checkpointDue:
		return true
	case unflushed <= 0:
		return false
	case unflushed >= max(l.cfg.FlushMessages, 1):
		return true
	}
	return l.cfg.FlushMs != math.MaxInt64 && l.cfg.Now().Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushMs
}
