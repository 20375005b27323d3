package log

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// File name extensions of a segment's files.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	// txnIndexSuffix (txn.go) names the transaction index, which exists
	// only for segments holding abort markers.
)

// segmentFileName is the file of base offset base with extension ext.
func segmentFileName(dir string, base int64, ext string) string {
	return join(dir, fmt.Sprintf("%020d%s", base, ext))
}

// parseOffsetFileName parses "<20 digits><ext>".
func parseOffsetFileName(name, ext string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ext)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil && off >= 0
}

// indexLimits are the configured limits that govern index entries.
type indexLimits struct {
	intervalBytes    int64 // bytes of batches between offset index entries
	maxOffsetEntries int   // offset index full: roll
	maxTimeEntries   int   // time index full: roll (one slot stays free for seal)
}

func (c Config) indexLimits() indexLimits {
	return indexLimits{
		intervalBytes:    int64(c.IndexIntervalBytes),
		maxOffsetEntries: int(c.SegmentIndexBytes) / offsetIndexEntrySize,
		maxTimeEntries:   int(c.SegmentIndexBytes) / timeIndexEntrySize,
	}
}

// segment is one segment of a partition's log: the batches from baseOffset
// on in a .log file, with a sparse offset index and a time index held both
// in memory and in .index and .timeindex files.
//
// The file handles are set when the segment is opened and closed only by
// goroutines that hold Log.segMu for writing. Every other field is guarded
// by Log.mu; only the goroutine appending (holding Log.mu) changes them.
type segment struct {
	baseOffset                      int64
	logFile, indexFile, timeIdxFile File
	// txnFile is the transaction index (txn.go), nil while the segment has
	// none; it is created at the first abort marker. fsys and dir locate it.
	txnFile File
	fsys    FS
	dir     string
	// txnCreated: txnFile was created since the last flush round, whose
	// directory sync makes it durable.
	txnCreated bool

	size       int64 // bytes of valid batches in logFile
	nextOffset int64 // offset after the last batch; baseOffset when empty

	offsetIndex []offsetIndexEntry
	timeIndex   []timeIndexEntry
	// aborted are the aborted transactions whose markers lie in the
	// segment, in offset order (the transaction index).
	aborted []AbortedTxn
	// Index entries added in memory but not yet written to the files.
	pendingIndex, pendingTimeIndex, pendingTxnIndex []byte
	// bytesSinceIndexEntry counts batch bytes since the last offset index
	// entry (or the start of the segment).
	bytesSinceIndexEntry int64

	maxTimestamp     int64 // largest batch max timestamp; -1 if none has one
	maxTimestampBase int64 // base offset of the batch holding maxTimestamp

	// firstTimestamp (the first batch's max timestamp, -1 if none) and
	// firstAppend (broker time of the first append, or of opening the log)
	// drive segment.ms.
	firstTimestamp int64
	firstAppend    time.Time

	// Written since the last flush round synced them.
	logDirty, indexDirty bool
	// closed: the files were closed (the segment was deleted or replaced,
	// or the log closed). Set by closeFiles, with segMu held for writing
	// and flushMu held (or during Open).
	closed bool
	// cuts counts the times the log file was cut (truncated): a Records
	// taken before a cut may name bytes that are no longer there. Written
	// with segMu held for writing.
	cuts uint64
}

func newSegment(base int64, now time.Time) *segment {
	return &segment{
		baseOffset: base, nextOffset: base,
		maxTimestamp: -1, maxTimestampBase: -1, firstTimestamp: -1,
		firstAppend: now,
	}
}

// createSegment creates the files of a new, empty segment (replacing stale
// files of the same name). The directory entries still need a SyncDir.
func createSegment(fsys FS, dir string, base int64, now time.Time) (*segment, error) {
	return openSegmentFiles(fsys, dir, base, now, os.O_TRUNC)
}

// openSegment opens an existing segment; missing index files are created
// empty (they are then rebuilt).
func openSegment(fsys FS, dir string, base int64, now time.Time) (*segment, error) {
	return openSegmentFiles(fsys, dir, base, now, 0)
}

func openSegmentFiles(fsys FS, dir string, base int64, now time.Time, extraFlag int) (*segment, error) {
	s := newSegment(base, now)
	s.fsys, s.dir = fsys, dir
	flag := os.O_CREATE | os.O_RDWR | os.O_APPEND | extraFlag
	var err error
	if s.logFile, err = fsys.OpenFile(segmentFileName(dir, base, logSuffix), flag, 0o644); err == nil {
		if s.indexFile, err = fsys.OpenFile(segmentFileName(dir, base, indexSuffix), flag, 0o644); err == nil {
			s.timeIdxFile, err = fsys.OpenFile(segmentFileName(dir, base, timeIndexSuffix), flag, 0o644)
		}
	}
	if err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("log: open segment %d: %w", base, err)
	}
	return s, nil
}

// closeFiles closes the segment's files.
func (s *segment) closeFiles() error {
	s.closed = true
	var errs []error
	for _, f := range []File{s.logFile, s.indexFile, s.timeIdxFile, s.txnFile} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// removeSegmentFiles removes a segment's files (after closeFiles).
func removeSegmentFiles(fsys FS, dir string, base int64) error {
	var errs []error
	for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		errs = append(errs, removeIfExists(fsys, segmentFileName(dir, base, ext)))
	}
	return errors.Join(errs...)
}

func (s *segment) relOffset(offset int64) uint32 { return uint32(offset - s.baseOffset) }

// fitsRelOffset reports whether offset can be stored relative to the base.
func (s *segment) fitsRelOffset(offset int64) bool {
	return offset >= s.baseOffset && offset-s.baseOffset <= math.MaxUint32
}

// lookup returns the position of a batch at or before the batch holding
// offset: where a scan for offset starts.
func (s *segment) lookup(offset int64) int64 {
	if offset <= s.baseOffset {
		return 0
	}
	rel := min(offset-s.baseOffset, math.MaxUint32)
	if i := floorOffsetEntry(s.offsetIndex, uint32(rel)); i >= 0 {
		return int64(s.offsetIndex[i].position)
	}
	return 0
}

// timeLookup returns the position where a scan for the first batch whose
// max timestamp is >= ts may start: batches before it all have smaller
// timestamps.
func (s *segment) timeLookup(ts int64) int64 {
	if i := lastTimeEntryBelow(s.timeIndex, ts); i >= 0 {
		return s.lookup(s.baseOffset + int64(s.timeIndex[i].relOffset))
	}
	return 0
}

// indexFull reports whether either index has no room left for entries.
func (s *segment) indexFull(lim indexLimits) bool {
	return len(s.offsetIndex) >= lim.maxOffsetEntries || len(s.timeIndex) >= lim.maxTimeEntries-1
}

// indexBatch updates the in-memory state for a batch stored at pos: the
// largest timestamp, and index entries every lim.intervalBytes. Entries go
// to the pending buffers; writePendingIndexes writes them.
func (s *segment) indexBatch(h *BatchHeader, pos int64, lim indexLimits) {
	if pos == 0 {
		s.firstTimestamp = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.maxTimestampBase = h.MaxTimestamp, h.BaseOffset
	}
	if pos > 0 && s.bytesSinceIndexEntry >= lim.intervalBytes {
		if len(s.offsetIndex) < lim.maxOffsetEntries {
			e := offsetIndexEntry{relOffset: s.relOffset(h.BaseOffset), position: uint32(pos)}
			s.offsetIndex = append(s.offsetIndex, e)
			s.pendingIndex = appendOffsetIndexEntry(s.pendingIndex, e)
		}
		if len(s.timeIndex) < lim.maxTimeEntries-1 {
			s.maybeAppendTimeEntry()
		}
		s.bytesSinceIndexEntry = 0
	}
	s.bytesSinceIndexEntry += int64(h.Size())
	s.size = pos + int64(h.Size())
	s.nextOffset = h.NextOffset()
}

// maybeAppendTimeEntry adds a time index entry if the largest timestamp grew
// since the last entry.
func (s *segment) maybeAppendTimeEntry() {
	if s.maxTimestamp < 0 || len(s.timeIndex) > 0 && s.timeIndex[len(s.timeIndex)-1].timestamp >= s.maxTimestamp {
		return
	}
	e := timeIndexEntry{timestamp: s.maxTimestamp, relOffset: s.relOffset(s.maxTimestampBase)}
	s.timeIndex = append(s.timeIndex, e)
	s.pendingTimeIndex = appendTimeIndexEntry(s.pendingTimeIndex, e)
}

// seal records the segment's largest timestamp in the time index, so that
// after a restart the last entry gives it without a scan. Called when the
// segment stops being the active one (roll, close).
func (s *segment) seal() error {
	s.maybeAppendTimeEntry()
	return s.writePendingIndexes()
}

// writePendingIndexes writes the pending index entries to the files.
func (s *segment) writePendingIndexes() error {
	if len(s.pendingIndex) > 0 {
		s.indexDirty = true
		if _, err := s.indexFile.Write(s.pendingIndex); err != nil {
			return err
		}
		s.pendingIndex = s.pendingIndex[:0]
	}
	if len(s.pendingTimeIndex) > 0 {
		s.indexDirty = true
		if _, err := s.timeIdxFile.Write(s.pendingTimeIndex); err != nil {
			return err
		}
		s.pendingTimeIndex = s.pendingTimeIndex[:0]
	}
	if len(s.pendingTxnIndex) > 0 {
		if s.txnFile == nil {
			f, err := s.fsys.OpenFile(segmentFileName(s.dir, s.baseOffset, txnIndexSuffix), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			s.txnFile = f
			s.txnCreated = true
		}
		s.indexDirty = true
		if _, err := s.txnFile.Write(s.pendingTxnIndex); err != nil {
			return err
		}
		s.pendingTxnIndex = s.pendingTxnIndex[:0]
	}
	return nil
}

// addAborted indexes an aborted transaction whose marker is in the
// segment; writePendingIndexes writes it.
func (s *segment) addAborted(a AbortedTxn) {
	s.aborted = append(s.aborted, a)
	s.pendingTxnIndex = appendTxnIndexEntry(s.pendingTxnIndex, a)
}

// dropAbortedFrom removes the aborted transactions whose markers are at or
// after offset, from memory and from the file.
func (s *segment) dropAbortedFrom(offset int64) error {
	k := len(s.aborted)
	for k > 0 && s.aborted[k-1].LastOffset >= offset {
		k--
	}
	if k == len(s.aborted) {
		return nil
	}
	inFile := len(s.aborted) - len(s.pendingTxnIndex)/txnIndexEntrySize
	s.aborted = s.aborted[:k]
	if k >= inFile {
		s.pendingTxnIndex = s.pendingTxnIndex[:(k-inFile)*txnIndexEntrySize]
		return nil
	}
	s.pendingTxnIndex = s.pendingTxnIndex[:0]
	s.indexDirty = true
	return s.txnFile.Truncate(int64(k) * txnIndexEntrySize)
}

// resetIndexes clears the in-memory state derived from the batches.
func (s *segment) resetIndexes() {
	s.size, s.nextOffset = 0, s.baseOffset
	s.offsetIndex, s.timeIndex = nil, nil
	s.pendingIndex, s.pendingTimeIndex = s.pendingIndex[:0], s.pendingTimeIndex[:0]
	s.bytesSinceIndexEntry = 0
	s.maxTimestamp, s.maxTimestampBase, s.firstTimestamp = -1, -1, -1
}

// recover rebuilds the segment's indexes from its batches, verifying every
// batch (header, CRC-32C, base offset continuing the previous batch, the
// first one at the segment's base offset), and truncates the
// file at the first batch that fails. onBatch, if set, sees every valid
// batch. It reports whether anything was cut off.
func (s *segment) recover(prevNext int64, lim indexLimits, onBatch func(*BatchHeader)) (cut bool, err error) {
	info, err := s.logFile.Stat()
	if err != nil {
		return false, err
	}
	fileSize := info.Size()
	s.resetIndexes()
	next := max(prevNext, s.baseOffset)
	sc := newBatchScanner(s.logFile, 0, fileSize, true, nil)
	for sc.next() {
		h := &sc.h
		if h.BaseOffset != next || !s.fitsRelOffset(h.LastOffset()) {
			sc.corrupt = fmt.Errorf("%w: at position %d: base offset %d after offset %d in segment %d",
				ErrCorruptBatch, sc.batchPos, h.BaseOffset, next, s.baseOffset)
			break
		}
		s.indexBatch(h, sc.batchPos, lim)
		if onBatch != nil {
			onBatch(h)
		}
		next = h.NextOffset()
	}
	if sc.err != nil {
		return false, sc.err
	}
	if s.size < fileSize {
		s.cuts++
		if err := s.logFile.Truncate(s.size); err != nil {
			return false, err
		}
		s.logDirty, cut = true, true
	}
	// Rewrite both index files from scratch.
	if err := s.indexFile.Truncate(0); err != nil {
		return cut, err
	}
	if err := s.timeIdxFile.Truncate(0); err != nil {
		return cut, err
	}
	s.indexDirty = true
	return cut, s.writePendingIndexes()
}

// load opens a segment that lies below the recovery point without scanning
// all of it: it reads and checks both index files, then scans (and
// verifies) the batches after the last offset index entry to find the
// segment's end. It reports false when anything fails a check, in which case
// the caller runs recover instead.
func (s *segment) load(prevNext int64, lim indexLimits) (ok bool, err error) {
	info, err := s.logFile.Stat()
	if err != nil {
		return false, err
	}
	s.resetIndexes()
	s.size = info.Size()
	b, err := readAll(s.indexFile)
	if err != nil {
		return false, err
	}
	if s.offsetIndex, err = decodeOffsetIndex(b, s.size); err != nil {
		return false, nil
	}
	if b, err = readAll(s.timeIdxFile); err != nil {
		return false, err
	}
	if s.timeIndex, err = decodeTimeIndex(b, math.MaxUint32); err != nil {
		return false, nil
	}
	if n := len(s.timeIndex); n > 0 {
		s.maxTimestamp = s.timeIndex[n-1].timestamp
		s.maxTimestampBase = s.baseOffset + int64(s.timeIndex[n-1].relOffset)
	}
	pos, expect := int64(0), int64(-1)
	if n := len(s.offsetIndex); n > 0 {
		pos, expect = int64(s.offsetIndex[n-1].position), s.baseOffset+int64(s.offsetIndex[n-1].relOffset)
	}
	next := max(prevNext, s.baseOffset)
	// since replays indexBatch's rule over the batches after the last
	// entry: where the rule would have added an entry that the index lacks,
	// the index is incomplete (lost, or written with another interval) and
	// is rebuilt.
	since := int64(0)
	sc := newBatchScanner(s.logFile, pos, s.size, true, nil)
	for sc.next() {
		h := &sc.h
		if expect >= 0 && h.BaseOffset != expect || expect < 0 && h.BaseOffset != next || !s.fitsRelOffset(h.LastOffset()) {
			return false, nil
		}
		if expect < 0 && sc.batchPos > 0 && since >= lim.intervalBytes && len(s.offsetIndex) < lim.maxOffsetEntries {
			return false, nil
		}
		since += int64(h.Size())
		expect = -1
		if sc.batchPos == 0 {
			s.firstTimestamp = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.maxTimestampBase = h.MaxTimestamp, h.BaseOffset
		}
		next = h.NextOffset()
	}
	if sc.err != nil {
		return false, sc.err
	}
	if sc.corrupt != nil || expect >= 0 {
		return false, nil
	}
	if n := len(s.timeIndex); n > 0 && s.baseOffset+int64(s.timeIndex[n-1].relOffset) >= next {
		return false, nil
	}
	s.nextOffset = next
	s.bytesSinceIndexEntry = s.size - pos
	if pos > 0 {
		// The first batch's timestamp (for segment.ms) lies before the scan.
		h, err := readBatchHeaderAt(s.logFile, 0)
		if err != nil {
			return false, nil
		}
		s.firstTimestamp = h.MaxTimestamp
	}
	return true, nil
}

// readBatchHeaderAt reads and parses the header of the batch at pos.
func readBatchHeaderAt(f File, pos int64) (BatchHeader, error) {
	var b [BatchHeaderSize]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return BatchHeader{}, err
	}
	h, err := ParseBatchHeader(b[:])
	if errors.Is(err, ErrBatchTooLong) {
		err = nil // the header is complete; the records are not needed
	}
	return h, err
}

// findTruncationPoint returns the position of the first batch whose last
// offset is >= offset, and the offset where the batches before it end: the
// LEO once the segment is cut there (a batch that straddles offset goes
// whole, and the LEO never sits in a gap).
func (s *segment) findTruncationPoint(offset int64) (pos, keptEnd int64, err error) {
	// Start one index entry early so the scan sees the batch before the
	// truncation point, whose end the LEO becomes.
	from := s.lookup(offset)
	if i := floorOffsetEntry(s.offsetIndex, s.relOffset(max(offset, s.baseOffset))); i >= 0 && int64(s.offsetIndex[i].position) == from {
		from = 0
		if i > 0 {
			from = int64(s.offsetIndex[i-1].position)
		}
	}
	keptEnd = s.baseOffset
	sc := newBatchScanner(s.logFile, from, s.size, false, nil)
	for sc.next() {
		if sc.h.LastOffset() >= offset {
			return sc.batchPos, keptEnd, nil
		}
		keptEnd = sc.h.NextOffset()
	}
	if sc.err != nil {
		return 0, 0, sc.err
	}
	if sc.corrupt != nil {
		return 0, 0, sc.corrupt
	}
	return s.size, keptEnd, nil
}

// truncateTo cuts the segment at position pos, where the batch with base
// offset newNext (or the end) starts, and trims the indexes to match.
func (s *segment) truncateTo(pos, newNext int64, lim indexLimits) error {
	fullIndex := s.indexFull(lim)
	k := 0
	for k < len(s.offsetIndex) && int64(s.offsetIndex[k].position) < pos {
		k++
	}
	j := 0
	for j < len(s.timeIndex) && s.baseOffset+int64(s.timeIndex[j].relOffset) < newNext {
		j++
	}
	s.offsetIndex, s.timeIndex = s.offsetIndex[:k], s.timeIndex[:j]
	s.pendingIndex, s.pendingTimeIndex = s.pendingIndex[:0], s.pendingTimeIndex[:0]
	s.logDirty, s.indexDirty = true, true
	s.cuts++
	if err := s.logFile.Truncate(pos); err != nil {
		return err
	}
	if err := s.indexFile.Truncate(int64(k) * offsetIndexEntrySize); err != nil {
		return err
	}
	if err := s.timeIdxFile.Truncate(int64(j) * timeIndexEntrySize); err != nil {
		return err
	}
	s.size, s.nextOffset = pos, max(newNext, s.baseOffset)
	// Recompute the largest timestamp. A time index entry is added at every
	// offset index entry where it grew, so the last remaining time entry
	// covers the batches up to the last remaining offset index entry and only
	// the batches after that need a look, unless an index filled up and
	// entries stopped.
	s.maxTimestamp, s.maxTimestampBase = -1, -1
	if j > 0 {
		s.maxTimestamp, s.maxTimestampBase = s.timeIndex[j-1].timestamp, s.baseOffset+int64(s.timeIndex[j-1].relOffset)
	}
	from := int64(0)
	if k > 0 && !fullIndex {
		from = int64(s.offsetIndex[k-1].position)
	}
	sc := newBatchScanner(s.logFile, from, pos, false, nil)
	for sc.next() {
		if sc.h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.maxTimestampBase = sc.h.MaxTimestamp, sc.h.BaseOffset
		}
	}
	if sc.err != nil {
		return sc.err
	}
	if sc.corrupt != nil {
		return sc.corrupt
	}
	s.bytesSinceIndexEntry = pos - from
	if pos == 0 {
		s.firstTimestamp = -1
	}
	return nil
}

// largestTimestamp is the segment's largest timestamp for retention.ms: its
// largest batch timestamp, or the file's modification time when no batch
// carries a timestamp (as in Kafka).
func (s *segment) largestTimestamp() (int64, error) {
	if s.maxTimestamp >= 0 {
		return s.maxTimestamp, nil
	}
	info, err := s.logFile.Stat()
	if err != nil {
		return 0, err
	}
	return info.ModTime().UnixMilli(), nil
}
