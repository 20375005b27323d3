package log

import (
	"encoding/binary"
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
	// broker passes the high watermark (the last stable offset once
	// transactions exist). The active segment is never cleaned.
	UpperBound int64
	// DeleteRetentionMs (delete.retention.ms): a tombstone (a keyed record
	// with a null value) that is the latest record of its key is kept until
	// its timestamp is more than this old by the log's clock, then removed.
	// Negative keeps tombstones forever. Tombstones without a timestamp
	// (-1) are kept.
	DeleteRetentionMs int64
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
}

// compactHook, when set (tests), is called at each step of a segment swap;
// an error stops Compact there, as a crash would.
var compactHook func(step string) error

func compactStep(step string) error {
	if compactHook != nil {
		return compactHook(step)
	}
	return nil
}

// Compact cleans the log as Kafka's log cleaner does for
// cleanup.policy=compact, synchronously: for every key, only the record
// with the latest offset survives in the cleaned segments. See the package
// documentation ("Compaction") for the rules and the file swap.
//
// Compact holds flushMu throughout (retention, truncation and flush rounds
// wait), and blocks reads and appends only while it swaps a segment in.
func (l *Log) Compact(opts CompactOptions) (CompactStats, error) {
	var stats CompactStats
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
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
	l.mu.Unlock()
	if len(segs) == 0 {
		return stats, nil
	}
	// Closed segments change only under flushMu, which we hold: they can be
	// read without other locks.

	// The offset map: key -> offset of its latest record in the cleanable
	// range.
	latest := map[string]int64{}
	for _, v := range segs {
		err := scanSegment(v, func(h *BatchHeader, batch []byte) {
			recs, ok := parseRecords(h, batch)
			if !ok {
				return
			}
			for _, r := range recs {
				if r.hasKey {
					latest[string(r.key)] = h.BaseOffset + r.offsetDelta
				}
			}
		})
		if err != nil {
			return stats, l.fail(err)
		}
	}

	for _, v := range segs {
		var out []byte
		removed, tombstones := 0, 0
		var run *fillerRun
		flush := func() {
			if run != nil {
				out = append(out, run.encode()...)
				run = nil
			}
		}
		err := scanSegment(v, func(h *BatchHeader, batch []byte) {
			recs, ok := parseRecords(h, batch)
			if !ok || h.IsControl() {
				flush()
				out = append(out, batch...)
				return
			}
			var kept []rawRecord
			for _, r := range recs {
				off := h.BaseOffset + r.offsetDelta
				keep := true
				if r.hasKey {
					switch {
					case latest[string(r.key)] > off:
						keep = false
					case r.nullValue && opts.DeleteRetentionMs >= 0:
						ts := h.BaseTimestamp + r.tsDelta
						if h.Attributes&AttrTimestampType != 0 {
							ts = h.MaxTimestamp
						}
						if ts >= 0 && nowMs-ts > opts.DeleteRetentionMs {
							keep = false
							tombstones++
						}
					}
				}
				if keep {
					kept = append(kept, r)
				} else {
					removed++
				}
			}
			switch {
			case len(kept) == len(recs):
				flush()
				out = append(out, batch...)
			case len(kept) > 0 || isIdempotent(h):
				// A sparse batch, or (all records gone) the empty header of
				// an idempotent batch, kept for producer state.
				flush()
				out = append(out, rewriteBatch(batch, h, kept)...)
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
		if err != nil {
			return stats, l.fail(err)
		}
		if removed == 0 {
			continue
		}
		if err := l.swapSegment(v.seg, out, limits); err != nil {
			return stats, err
		}
		stats.SegmentsCleaned++
		stats.BytesBefore += v.end
		stats.BytesAfter += int64(len(out))
		stats.RecordsRemoved += removed
		stats.TombstonesRemoved += tombstones
	}
	if stats.SegmentsCleaned > 0 {
		l.logger().Info("log: compacted", "dir", l.dir, "segments", stats.SegmentsCleaned,
			"bytes before", stats.BytesBefore, "bytes after", stats.BytesAfter, "records removed", stats.RecordsRemoved)
	}
	return stats, nil
}

// scanSegment calls fn for every batch of the view, verifying CRCs.
func scanSegment(v segmentView, fn func(h *BatchHeader, batch []byte)) error {
	sc := newBatchScanner(v.seg.logFile, 0, v.end, true, nil)
	for sc.next() {
		fn(&sc.h, sc.batch)
	}
	if sc.err != nil {
		return sc.err
	}
	return sc.corrupt
}

// swapSegment replaces old's files by a segment holding batches, crash
// safely: write %020d.{log,index,timeindex}.cleaned and fsync them; rename
// the .log.cleaned to .log.swap and fsync the directory (the commit point);
// rename the .cleaned indexes and the .log.swap over the segment's files and
// fsync the directory. flushMu must be held.
func (l *Log) swapSegment(old *segment, batches []byte, limits indexLimits) error {
	base := old.baseOffset
	name := func(ext string) string { return segmentFileName(l.dir, base, ext) }
	ns := newSegment(base, old.firstAppend)
	abort := func(err error) error {
		ns.closeFiles()
		for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			removeIfExists(l.fs, name(ext+cleanedSuffix))
		}
		return fmt.Errorf("log: compact segment %d: %w", base, err)
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
	if err := l.fs.Rename(name(logSuffix+cleanedSuffix), name(logSuffix+swapSuffix)); err != nil {
		return abort(err)
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

// rawRecord is one record of an uncompressed batch.
type rawRecord struct {
	b           []byte // the whole record, length prefix included
	tsDelta     int64
	offsetDelta int64
	key         []byte
	hasKey      bool
	nullValue   bool
}

// parseRecords splits an uncompressed batch into its records. ok is false
// for compressed batches and for records it cannot parse (such batches are
// kept whole).
func parseRecords(h *BatchHeader, batch []byte) (recs []rawRecord, ok bool) {
	if h.Compression() != 0 || h.RecordCount < 0 {
		return nil, false
	}
	rest := batch[BatchHeaderSize:h.Size()]
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

// rewriteBatch returns batch with only the records kept: same base offset,
// last offset delta, timestamps, producer fields and leader epoch; new
// length, record count and CRC-32C.
func rewriteBatch(batch []byte, h *BatchHeader, kept []rawRecord) []byte {
	out := make([]byte, BatchHeaderSize, h.Size())
	copy(out, batch[:BatchHeaderSize])
	for _, r := range kept {
		out = append(out, r.b...)
	}
	be := binary.BigEndian
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
