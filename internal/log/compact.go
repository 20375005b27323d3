package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"strings"
)

// Suffixes of the files of a segment being rewritten by Compact (see
// finishCompactionLocked for how recovery treats leftovers).
const (
	cleanedSuffix = ".cleaned" // being written; not yet committed
	swapSuffix    = ".swap"    // %020d.log.swap: committed, to replace %020d.log
)

// CompactOptions tell Compact what it may clean.
type CompactOptions struct {
	// UpperBound: only segments whose batches all lie below it are cleaned,
	// and only their records are used to decide what is superseded. The
	// broker passes the last stable offset, below which every transaction
	// is decided. The active segment is never cleaned.
	UpperBound int64
	// DeleteRetentionMs (delete.retention.ms): a tombstone (a keyed record
	// with a null value) that is the latest record of its key is kept until
	// its timestamp is more than this old by the log's clock, then removed.
	// Negative keeps tombstones forever. Tombstones without a timestamp
	// (-1) are kept.
	DeleteRetentionMs int64
	// Decompress returns the records of a compressed batch (the bytes after
	// its header, decompressed), h being the header parsed from batch. The
	// log has no decompressors of its own: the broker passes
	// records.DecompressRecords. Compact calls it twice per compressed batch
	// (once to build the offset map, once to rewrite), does not modify the
	// result and uses it only until the next call. An error keeps the batch
	// whole (see CompactStats.UndecodableBatches). Nil keeps every
	// compressed batch whole, its keys unread.
	Decompress func(h *BatchHeader, batch []byte) (records []byte, err error)
}

// CompactStats describes what Compact did.
type CompactStats struct {
	// SegmentsCleaned counts the segments rewritten (a segment in which
	// nothing was removed is left alone).
	SegmentsCleaned int
	// BytesBefore and BytesAfter are the sizes of the rewritten segments.
	BytesBefore, BytesAfter int64
	// RecordsRemoved counts removed records, TombstonesRemoved those of them
	// that were the latest record of their key (expired tombstones).
	RecordsRemoved, TombstonesRemoved int
	// CompressedRewritten counts the compressed batches of the rewritten
	// segments that lost records and were rewritten uncompressed.
	CompressedRewritten int
	// CompressedKeptWhole counts compressed batches that had superseded
	// records but were kept whole, because writing them uncompressed would
	// have grown their segment past the larger of segment.bytes and its
	// current size.
	CompressedKeptWhole int
	// UndecodableBatches counts data batches of the cleanable segments kept
	// whole because their records could not be read: Decompress failed, or
	// the records are malformed. (Compressed batches with no Decompress
	// option are not counted.)
	UndecodableBatches int
	// AbortedRemoved counts the records removed because their transaction
	// was aborted.
	AbortedRemoved int
	// Interrupted: a truncation cut into the segments being compacted
	// during the run, which stopped there (segments swapped in before it
	// stay compacted; the rest stay as they were). Compact again, with an
	// upper bound taken after the truncation.
	Interrupted bool
}

// errNoDecompressor marks a compressed batch when CompactOptions has no
// Decompress: kept whole, but not counted as undecodable.
var errNoDecompressor = errors.New("log: compressed batch and no decompressor")

// readRecords splits a data batch into its records, decompressing them
// with opts.Decompress when the batch is compressed.
func (opts *CompactOptions) readRecords(h *BatchHeader, batch []byte) ([]rawRecord, error) {
	data := batch[BatchHeaderSize:h.Size()]
	if h.Compression() != 0 {
		if opts.Decompress == nil {
			return nil, errNoDecompressor
		}
		var err error
		if data, err = opts.Decompress(h, batch); err != nil {
			return nil, err
		}
	}
	recs, ok := parseRecords(h, data)
	if !ok {
		return nil, fmt.Errorf("%w: malformed records in batch %d", ErrCorruptBatch, h.BaseOffset)
	}
	return recs, nil
}

// compactHook, when set (tests), is called once the offset map is built
// ("mapped") and at each step of a segment swap; an error stops Compact
// there, as a crash would. Tests also block in it to act on the log while
// a compaction is under way.
var compactHook func(step string) error

func compactStep(step string) error {
	if compactHook != nil {
		return compactHook(step)
	}
	return nil
}

// Errors that stop reading a segment for Compact (see compactRun).
var (
	errSegmentGone     = errors.New("log: segment deleted during compaction")
	errCompactionStale = errors.New("log: truncated during compaction")
)

// compactRun is the state of a running Compact that other operations
// update: Log.compacting points to it while the run lasts.
type compactRun struct {
	l *Log
	// end is where the segments being compacted end.
	end int64
	// cutBelow is the lowest offset a truncation cut the log to since the
	// run began (math.MaxInt64 if none). Below end, the run must stop: the
	// segments it read may have shrunk, and a record it saw supersede
	// another may be gone. Written with segMu (for writing) and mu held;
	// read with either.
	cutBelow int64
}

// checkLocked reports whether the run may still read or replace seg: not
// once Close began (ErrClosed), nor after a truncation into the compacted
// range (errCompactionStale), nor once seg was deleted (errSegmentGone:
// retention or DeleteRecords deleted it, from the front of the log). segMu
// (for reading) or flushMu and mu must be held.
func (r *compactRun) checkLocked(seg *segment) error {
	switch {
	case r.l.compactStop.Load():
		return ErrClosed
	case r.cutBelow < r.end:
		return errCompactionStale
	case seg.closed:
		return errSegmentGone
	}
	return nil
}

// segmentReader reads the closed segment seg, up to end, for Compact, which
// holds no lock across its reads: each read holds segMu for reading and
// first checks that the run may still read the segment.
type segmentReader struct {
	run *compactRun
	seg *segment
	end int64
}

func (r *compactRun) reader(v segmentView) segmentReader {
	return segmentReader{run: r, seg: v.seg, end: v.end}
}

func (r segmentReader) ReadAt(p []byte, off int64) (int, error) {
	r.run.l.segMu.RLock()
	defer r.run.l.segMu.RUnlock()
	if err := r.run.checkLocked(r.seg); err != nil {
		return 0, err
	}
	return r.seg.logFile.ReadAt(p, off)
}

// noteCutLocked tells a running compaction that the log was truncated to
// offset (math.MinInt64: emptied). segMu (for writing) and mu must be held.
func (l *Log) noteCutLocked(offset int64) {
	if l.compacting != nil {
		l.compacting.cutBelow = min(l.compacting.cutBelow, offset)
	}
}

// Compact cleans the log as Kafka's log cleaner does for
// cleanup.policy=compact, synchronously: for every key, only the record
// with the latest offset survives in the cleaned segments. See the package
// documentation ("Compaction") for the rules and the file swap.
//
// Compact runs without flushMu: flush rounds, truncation, retention,
// leader epoch changes and Close go on meanwhile. It takes flushMu only to
// swap a rewritten segment in, and blocks reads and appends only while it
// puts the new segment in the list. A truncation that cuts into the
// segments being compacted, or Close, wins: the segments not yet swapped
// in are left as they are (Interrupted, or ErrClosed). Segments that
// retention deletes meanwhile are skipped. One Compact at a time runs on a
// log; a second waits.
func (l *Log) Compact(opts CompactOptions) (CompactStats, error) {
	var stats CompactStats
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	if l.compactStop.Load() {
		return stats, ErrClosed
	}
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return stats, err
	}
	var segs []segmentView
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.nextOffset > opts.UpperBound {
			break
		}
		segs = append(segs, segmentView{seg: s, end: s.size})
	}
	nowMs := l.nowMs()
	limits := l.cfg.indexLimits()
	segmentBytes := l.cfg.SegmentBytes
	// Aborted transactions (their markers may lie past the cleanable
	// range): their records neither supersede others nor stay.
	abortedSpans := map[int64][][2]int64{}
	for _, s := range l.segments {
		for _, a := range s.aborted {
			abortedSpans[a.ProducerID] = append(abortedSpans[a.ProducerID], [2]int64{a.FirstOffset, a.LastOffset})
		}
	}
	isAborted := func(h *BatchHeader) bool {
		if !h.IsTransactional() || h.IsControl() {
			return false
		}
		for _, sp := range abortedSpans[h.ProducerID] {
			if sp[0] <= h.BaseOffset && h.BaseOffset <= sp[1] {
				return true
			}
		}
		return false
	}
	job := &compactRun{l: l, cutBelow: math.MaxInt64}
	if len(segs) > 0 {
		job.end = segs[len(segs)-1].seg.nextOffset
		l.compacting = job
	}
	l.mu.Unlock()
	if len(segs) == 0 {
		return stats, nil
	}
	defer func() {
		l.mu.Lock()
		l.compacting = nil
		l.mu.Unlock()
	}()
	// Only compactMu is held while the segments are read: each read takes
	// segMu and checks that the segment is still there, whole
	// (segmentReader.ReadAt).
	// A segment found deleted (by retention, from the front of the log) is
	// skipped; a truncation into the range or Close ends the run.
	gone := make([]bool, len(segs))
	// end is what the run returns after err, which stopped it: nil for a
	// truncation into the range (Interrupted), ErrClosed, err itself, or
	// for errors reading a segment a failed log (the segment is damaged).
	end := func(err error, reading bool) error {
		switch {
		case errors.Is(err, ErrClosed):
			return err
		case errors.Is(err, errCompactionStale):
			stats.Interrupted = true
			l.logger().Info("log: compaction interrupted by a truncation", "dir", l.dir,
				"segments cleaned", stats.SegmentsCleaned)
			return nil
		case reading:
			return l.fail(err)
		}
		return err
	}

	// The offset map: key -> offset of its latest record in the cleanable
	// range. unread holds the data batches whose records could not be
	// read, by base offset, with the reason.
	latest := map[string]int64{}
	unread := map[int64]error{}
	for i, v := range segs {
		err := scanSegment(job.reader(v), func(h *BatchHeader, batch []byte) {
			if h.IsControl() || isAborted(h) {
				return
			}
			recs, err := opts.readRecords(h, batch)
			if err != nil {
				unread[h.BaseOffset] = err
				return
			}
			for _, r := range recs {
				if r.hasKey {
					latest[string(r.key)] = h.BaseOffset + r.offsetDelta
				}
			}
		})
		if errors.Is(err, errSegmentGone) {
			gone[i] = true
			continue
		}
		if err != nil {
			return stats, end(err, true)
		}
	}
	if err := compactStep("mapped"); err != nil {
		return stats, err
	}

	// A tombstone may go only if no older record of its key stays behind
	// it: not after a batch whose keys are unknown (keysUnknown), nor when
	// a superseded record of its key was kept in a compressed batch
	// (staleKept). Batches are visited in offset order, so both are known
	// by the time a tombstone is reached.
	keysUnknown := false
	staleKept := map[string]bool{}
	for i, v := range segs {
		if gone[i] {
			continue
		}
		var out []byte
		removed, tombstones, rewritten := 0, 0, 0
		var run *fillerRun
		flush := func() {
			if run != nil {
				out = append(out, run.encode()...)
				run = nil
			}
		}
		// The segment may grow (compressed batches are rewritten
		// uncompressed), but not past this.
		maxSize := max(v.end, segmentBytes)
		var pos int64 // where the current batch ends in the old segment
		err := scanSegment(job.reader(v), func(h *BatchHeader, batch []byte) {
			pos += int64(h.Size())
			if h.IsControl() {
				flush()
				out = append(out, batch...)
				return
			}
			if isAborted(h) {
				// Emptied, its header kept for producer state.
				flush()
				if h.RecordCount == 0 {
					out = append(out, batch...)
					return
				}
				out = append(out, rewriteBatch(batch, h, nil)...)
				removed += int(h.RecordCount)
				stats.AbortedRemoved += int(h.RecordCount)
				return
			}
			err := unread[h.BaseOffset]
			var recs []rawRecord
			if err == nil {
				recs, err = opts.readRecords(h, batch)
			}
			if err != nil {
				if !errors.Is(err, errNoDecompressor) {
					stats.UndecodableBatches++
				}
				keysUnknown = true
				flush()
				out = append(out, batch...)
				return
			}
			var kept []rawRecord
			var superseded []string
			batchTombstones := 0
			for _, r := range recs {
				off := h.BaseOffset + r.offsetDelta
				keep := true
				if r.hasKey {
					switch {
					case latest[string(r.key)] > off:
						keep = false
						superseded = append(superseded, string(r.key))
					case r.nullValue && opts.DeleteRetentionMs >= 0 && !keysUnknown && !staleKept[string(r.key)]:
						ts := h.BaseTimestamp + r.tsDelta
						if h.Attributes&AttrTimestampType != 0 {
							ts = h.MaxTimestamp
						}
						if ts >= 0 && nowMs-ts > opts.DeleteRetentionMs {
							keep = false
							batchTombstones++
						}
					}
				}
				if keep {
					kept = append(kept, r)
				}
			}
			compressed := h.Compression() != 0
			if compressed && len(kept) > 0 && len(kept) < len(recs) {
				size := int64(BatchHeaderSize)
				for _, r := range kept {
					size += int64(len(r.b))
				}
				pending := int64(0)
				if run != nil {
					pending = BatchHeaderSize
				}
				if int64(len(out))+pending+size+(v.end-pos) > maxSize {
					// Keep it compressed, stale records included.
					stats.CompressedKeptWhole++
					for _, k := range superseded {
						staleKept[k] = true
					}
					kept = recs
				}
			}
			if len(kept) == len(recs) {
				flush()
				out = append(out, batch...)
				return
			}
			removed += len(recs) - len(kept)
			tombstones += batchTombstones
			switch {
			case len(kept) > 0 || isIdempotent(h) || h.IsTransactional() && h.ProducerID >= 0:
				// A sparse batch, or (all records gone) the empty header of
				// an idempotent or transactional batch, kept for producer
				// state.
				flush()
				out = append(out, rewriteBatch(batch, h, kept)...)
				if compressed {
					rewritten++
				}
			default:
				if run != nil && !run.extend(h) {
					flush()
				}
				if run == nil {
					run = newFillerRun(h)
				}
			}
		})
		flush()
		if errors.Is(err, errSegmentGone) {
			continue
		}
		if err != nil {
			return stats, end(err, true)
		}
		if removed == 0 {
			continue
		}
		ns, err := l.writeCleaned(v.seg, out, limits)
		if err != nil {
			return stats, err
		}
		if err := l.swapSegment(job, v.seg, ns); errors.Is(err, errSegmentGone) {
			continue
		} else if err != nil {
			return stats, end(err, false)
		}
		stats.SegmentsCleaned++
		stats.BytesBefore += v.end
		stats.BytesAfter += int64(len(out))
		stats.RecordsRemoved += removed
		stats.TombstonesRemoved += tombstones
		stats.CompressedRewritten += rewritten
	}
	if stats.SegmentsCleaned > 0 {
		l.logger().Info("log: compacted", "dir", l.dir, "segments", stats.SegmentsCleaned,
			"bytes before", stats.BytesBefore, "bytes after", stats.BytesAfter, "records removed", stats.RecordsRemoved,
			"compressed batches rewritten", stats.CompressedRewritten)
	}
	if stats.UndecodableBatches > 0 {
		l.logger().Warn("log: compaction kept batches whose records it could not read", "dir", l.dir,
			"batches", stats.UndecodableBatches)
	}
	return stats, nil
}

// scanSegment calls fn for every batch of r's segment, verifying CRCs.
func scanSegment(r segmentReader, fn func(h *BatchHeader, batch []byte)) error {
	sc := newBatchScanner(r, 0, r.end, true, nil)
	for sc.next() {
		fn(&sc.h, sc.batch)
	}
	if sc.err != nil {
		return sc.err
	}
	return sc.corrupt
}

// writeCleaned writes the segment that is to replace old, holding
// batches, as %020d.{log,index,timeindex}.cleaned files, and fsyncs them. It
// needs no lock: only Compact, one at a time, writes .cleaned files.
func (l *Log) writeCleaned(old *segment, batches []byte, limits indexLimits) (*segment, error) {
	base := old.baseOffset
	name := func(ext string) string { return segmentFileName(l.dir, base, ext) }
	ns := newSegment(base, old.firstAppend)
	ns.fsys, ns.dir = l.fs, l.dir // where its transaction index goes
	abort := func(err error) (*segment, error) {
		return nil, l.discardCleaned(ns, err)
	}
	flag := os.O_CREATE | os.O_RDWR | os.O_APPEND | os.O_TRUNC
	var err error
	if ns.logFile, err = l.fs.OpenFile(name(logSuffix+cleanedSuffix), flag, 0o644); err != nil {
		return abort(err)
	}
	if ns.indexFile, err = l.fs.OpenFile(name(indexSuffix+cleanedSuffix), flag, 0o644); err != nil {
		return abort(err)
	}
	if ns.timeIdxFile, err = l.fs.OpenFile(name(timeIndexSuffix+cleanedSuffix), flag, 0o644); err != nil {
		return abort(err)
	}
	if _, err := ns.logFile.Write(batches); err != nil {
		return abort(err)
	}
	for pos := 0; pos < len(batches); {
		h, _ := ParseBatchHeader(batches[pos:])
		ns.indexBatch(&h, int64(pos), limits)
		pos += h.Size()
	}
	if err := ns.seal(); err != nil {
		return abort(err)
	}
	if ns.nextOffset != old.nextOffset {
		return abort(fmt.Errorf("%w: rewritten segment ends at %d, not %d", ErrCorruptBatch, ns.nextOffset, old.nextOffset))
	}
	if err := compactStep("written"); err != nil {
		return abort(err)
	}
	for _, f := range []File{ns.logFile, ns.indexFile, ns.timeIdxFile} {
		if err := f.Sync(); err != nil {
			return abort(err)
		}
	}
	ns.logDirty, ns.indexDirty = false, false
	if err := compactStep("synced"); err != nil {
		return abort(err)
	}
	return ns, nil
}

// discardCleaned closes the files of ns, a rewritten segment not swapped
// in, and removes them; it returns err, naming the segment. (Should the
// removal fail or not be durable, Open removes .cleaned files.)
func (l *Log) discardCleaned(ns *segment, err error) error {
	ns.closeFiles()
	for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		removeIfExists(l.fs, segmentFileName(l.dir, ns.baseOffset, ext+cleanedSuffix))
	}
	return fmt.Errorf("log: compact segment %d: %w", ns.baseOffset, err)
}

// swapSegment replaces old by ns, written by writeCleaned, crash safely:
// rename the .log.cleaned to .log.swap and fsync the directory (the commit
// point); rename the .cleaned indexes and the .log.swap over the segment's
// files and fsync the directory; then put ns in old's place. It holds
// flushMu, and first checks, under it, that the run may still swap: not
// if the log is closing or failed, nor if a truncation cut into the
// compacted range (errCompactionStale), nor if old was deleted
// (errSegmentGone); ns is then discarded.
func (l *Log) swapSegment(run *compactRun, old, ns *segment) error {
	base := old.baseOffset
	name := func(ext string) string { return segmentFileName(l.dir, base, ext) }
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	err := l.usableLocked()
	if err == nil {
		err = run.checkLocked(old)
	}
	l.mu.Unlock()
	if err != nil {
		return l.discardCleaned(ns, err)
	}
	if err := l.fs.Rename(name(logSuffix+cleanedSuffix), name(logSuffix+swapSuffix)); err != nil {
		return l.discardCleaned(ns, err)
	}
	if err := compactStep("renamed-swap"); err != nil {
		return err // the rename may or may not be durable: as a crash
	}
	// From here on the swap is committed once the directory is synced;
	// failures leave the files to recovery.
	if err := l.fs.SyncDir(l.dir); err != nil {
		ns.closeFiles()
		return l.fail(fmt.Errorf("log: compact segment %d: %w", base, err))
	}
	if err := compactStep("committed"); err != nil {
		return err
	}
	for _, r := range [][2]string{
		{indexSuffix + cleanedSuffix, indexSuffix},
		{timeIndexSuffix + cleanedSuffix, timeIndexSuffix},
		{logSuffix + swapSuffix, logSuffix},
	} {
		if err := l.fs.Rename(name(r[0]), name(r[1])); err != nil {
			ns.closeFiles()
			return l.fail(fmt.Errorf("log: compact segment %d: %w", base, err))
		}
		if err := compactStep("renamed" + r[1]); err != nil {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		ns.closeFiles()
		return l.fail(fmt.Errorf("log: compact segment %d: %w", base, err))
	}
	if err := compactStep("done"); err != nil {
		return err
	}

	l.segMu.Lock()
	l.mu.Lock()
	for i, s := range l.segments {
		if s == old {
			l.segments[i] = ns
		}
	}
	// Offsets do not change: the transaction index stays as it is.
	ns.txnFile, ns.aborted, ns.pendingTxnIndex, ns.txnCreated = old.txnFile, old.aborted, old.pendingTxnIndex, old.txnCreated
	old.txnFile = nil
	l.mu.Unlock()
	err = old.closeFiles()
	l.segMu.Unlock()
	if err != nil {
		l.logger().Warn("log: close compacted segment", "dir", l.dir, "base", base, "err", err)
	}
	return nil
}

// finishCompactionLocked deals with the leftovers of a Compact interrupted
// by a crash, before recovery lists the segments: a %020d.log.swap is a
// committed rewrite and replaces the segment; .cleaned files are removed.
// The indexes of a segment with any leftover are removed (recovery rebuilds
// them), since they may belong to the other version of the segment. It
// reports whether it changed anything (the directory was then synced).
func (l *Log) finishCompactionLocked(names []string) (bool, error) {
	suspect := map[int64]bool{}
	var swaps []int64
	var cleaned []string
	for _, name := range names {
		if base, ok := parseOffsetFileName(name, logSuffix+swapSuffix); ok {
			swaps = append(swaps, base)
			suspect[base] = true
			continue
		}
		if stem, ok := strings.CutSuffix(name, cleanedSuffix); ok {
			for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				if base, ok := parseOffsetFileName(stem, ext); ok {
					suspect[base] = true
					cleaned = append(cleaned, name)
				}
			}
		}
	}
	if len(suspect) == 0 {
		return false, nil
	}
	for _, base := range swaps {
		if err := l.fs.Rename(segmentFileName(l.dir, base, logSuffix+swapSuffix), segmentFileName(l.dir, base, logSuffix)); err != nil {
			return false, err
		}
		l.logger().Warn("log: completed an interrupted compaction", "dir", l.dir, "segment", base)
	}
	for _, name := range cleaned {
		if err := removeIfExists(l.fs, join(l.dir, name)); err != nil {
			return false, err
		}
	}
	for base := range suspect {
		for _, ext := range []string{indexSuffix, timeIndexSuffix} {
			if err := removeIfExists(l.fs, segmentFileName(l.dir, base, ext)); err != nil {
				return false, err
			}
		}
	}
	return true, l.fs.SyncDir(l.dir)
}

// rawRecord is one record of a batch (of its decompressed records for a
// compressed batch).
type rawRecord struct {
	b           []byte // the whole record, length prefix included
	tsDelta     int64
	offsetDelta int64
	key         []byte
	hasKey      bool
	nullValue   bool
}

// parseRecords splits the records of the batch with header h (data: the
// bytes after the header, decompressed) into its records. ok is false for
// records it cannot parse (such batches are kept whole).
func parseRecords(h *BatchHeader, data []byte) (recs []rawRecord, ok bool) {
	if h.RecordCount < 0 {
		return nil, false
	}
	rest := data
	prevDelta := int64(-1)
	for range h.RecordCount {
		length, n := binary.Varint(rest)
		if n <= 0 || length < 1 || length > int64(len(rest)-n) {
			return nil, false
		}
		r := rawRecord{b: rest[:n+int(length)]}
		rec := rest[n : n+int(length)]
		rest = rest[n+int(length):]
		rec = rec[1:] // attributes
		var k int
		if r.tsDelta, k = binary.Varint(rec); k <= 0 {
			return nil, false
		}
		rec = rec[k:]
		if r.offsetDelta, k = binary.Varint(rec); k <= 0 || r.offsetDelta <= prevDelta || r.offsetDelta > int64(h.LastOffsetDelta) {
			return nil, false
		}
		prevDelta = r.offsetDelta
		rec = rec[k:]
		keyLen, k := binary.Varint(rec)
		if k <= 0 || keyLen < -1 || keyLen > int64(len(rec)-k) {
			return nil, false
		}
		rec = rec[k:]
		if keyLen >= 0 {
			r.key, r.hasKey = rec[:keyLen], true
			rec = rec[keyLen:]
		}
		valueLen, k := binary.Varint(rec)
		if k <= 0 || valueLen < -1 || valueLen > int64(len(rec)-k) {
			return nil, false
		}
		r.nullValue = valueLen < 0
		recs = append(recs, r)
	}
	if len(rest) != 0 {
		return nil, false
	}
	return recs, true
}

// rewriteBatch returns batch with only the records kept, uncompressed: same
// base offset, last offset delta, timestamps, producer fields, leader epoch
// and attributes but the codec (cleared); new length, record count and
// CRC-32C.
func rewriteBatch(batch []byte, h *BatchHeader, kept []rawRecord) []byte {
	size := BatchHeaderSize
	for _, r := range kept {
		size += len(r.b)
	}
	out := make([]byte, BatchHeaderSize, size)
	copy(out, batch[:BatchHeaderSize])
	for _, r := range kept {
		out = append(out, r.b...)
	}
	be := binary.BigEndian
	be.PutUint16(out[offAttributes:], uint16(h.Attributes&^AttrCompressionMask))
	be.PutUint32(out[offLength:], uint32(len(out)-LogOverhead))
	be.PutUint32(out[offRecordCount:], uint32(len(kept)))
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

// fillerRun is a run of adjacent batches whose records were all removed
// and that need not be kept for producer state. It becomes one empty batch
// spanning their offsets, so that the segment keeps having no offset gaps.
type fillerRun struct {
	base, last    int64
	epoch         int32
	baseTs, maxTs int64
	timestampType int16
}

func newFillerRun(h *BatchHeader) *fillerRun {
	return &fillerRun{base: h.BaseOffset, last: h.LastOffset(), epoch: h.PartitionLeaderEpoch,
		baseTs: h.BaseTimestamp, maxTs: h.MaxTimestamp, timestampType: h.Attributes & AttrTimestampType}
}

// extend adds the next batch h to the run if it has the same leader epoch
// (so the leader epoch cache can still be rebuilt from batches) and the
// span still fits a last offset delta.
func (r *fillerRun) extend(h *BatchHeader) bool {
	if h.PartitionLeaderEpoch != r.epoch || h.BaseOffset != r.last+1 || h.LastOffset()-r.base > math.MaxInt32 {
		return false
	}
	r.last = h.LastOffset()
	r.maxTs = max(r.maxTs, h.MaxTimestamp)
	return true
}

func (r *fillerRun) encode() []byte {
	b := make([]byte, BatchHeaderSize)
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(r.base))
	be.PutUint32(b[offLength:], uint32(BatchHeaderSize-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(r.epoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(r.timestampType))
	be.PutUint32(b[offLastOffsetDelta:], uint32(r.last-r.base))
	be.PutUint64(b[offBaseTimestamp:], uint64(r.baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(r.maxTs))
	be.PutUint64(b[offProducerID:], math.MaxUint64) // -1
	be.PutUint16(b[offProducerEpoch:], math.MaxUint16)
	be.PutUint32(b[offBaseSequence:], math.MaxUint32)
	be.PutUint32(b[offRecordCount:], 0)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// isFiller reports whether h is a compaction filler: an empty batch that is
// neither a control batch nor an idempotent or transactional producer's
// (those keep their original offsets; only fillers merge several batches).
func isFiller(h *BatchHeader) bool {
	return h.RecordCount == 0 && h.Size() == BatchHeaderSize && !h.IsControl() && !isIdempotent(h) &&
		!(h.IsTransactional() && h.ProducerID >= 0)
}

// trimFiller makes the filler b, with header h, start at from (inside it)
// instead: the same last offset, a shorter last offset delta, a new CRC.
// h is updated to match.
func trimFiller(b []byte, h *BatchHeader, from int64) {
	last := h.LastOffset()
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(from))
	be.PutUint32(b[offLastOffsetDelta:], uint32(last-from))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:BatchHeaderSize], castagnoli))
	h.BaseOffset, h.LastOffsetDelta = from, int32(last-from)
	h.CRC = be.Uint32(b[offCRC:])
}
