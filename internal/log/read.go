package log

import (
	"errors"
	"fmt"
	"sort"
)

// segmentView is a segment as a reader saw it under mu: its bytes up to end
// stay unchanged while the reader holds segMu for reading.
type segmentView struct {
	seg *segment
	end int64
}

// segmentIndexLocked returns the index of the segment holding offset: the
// last one whose base offset is <= offset (0 if none).
func (l *Log) segmentIndexLocked(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset }) - 1
	return max(i, 0)
}

// Read returns whole batches, starting with the batch that contains offset
// and stopping before the first batch whose last offset is >= maxOffset
// (the caller passes the high watermark or the LEO), at most maxBytes of
// them, except that with minOne the first batch is returned even if it
// alone is larger (KIP-74). The result spans segments as needed and is a
// fresh copy the caller owns; it is empty (nil) when offset is the LEO or
// no batch qualifies. offset below the log start offset or above the LEO is
// ErrOffsetOutOfRange.
//
// Read is Slice followed by Records.AppendTo: a fetch response uses Slice
// and sends the batches from the files instead.
func (l *Log) Read(offset, maxOffset int64, maxBytes int, minOne bool) ([]byte, error) {
	for {
		r, err := l.Slice(offset, maxOffset, maxBytes, minOne)
		if err != nil || r.Len() == 0 {
			return nil, err
		}
		out, err := r.AppendTo(nil)
		if errors.Is(err, ErrRecordsGone) {
			// Cut or closed between the two steps: look again.
			continue
		}
		return out, err
	}
}

// Slice finds the batches Read would return and returns them as ranges of
// the segment files, reading only their headers (see Records).
//
// Slice holds the append lock only to look up where to start; the header
// reads run concurrently with appends.
func (l *Log) Slice(offset, maxOffset int64, maxBytes int, minOne bool) (Records, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()

	r := Records{l: l}
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return r, err
	}
	leo := l.leoLocked()
	if offset < l.startOffset || offset > leo {
		start := l.startOffset
		l.mu.Unlock()
		return r, fmt.Errorf("%w: offset %d, log has [%d, %d)", ErrOffsetOutOfRange, offset, start, leo)
	}
	if offset == leo || offset >= maxOffset || maxBytes <= 0 && !minOne {
		l.mu.Unlock()
		return r, nil
	}
	i := l.segmentIndexLocked(offset)
	pos := l.segments[i].lookup(offset)
	views := l.viewsLocked(i, int64(maxBytes)+pos)
	l.mu.Unlock()

	// Skip to the batch containing offset. The index is a hint: should its
	// position not lead to a batch at or before offset, scan from the start.
	first := views[0]
	start, err := skipToOffset(first.seg.logFile, pos, first.end, offset)
	if pos > 0 && (err != nil || start == pos && !batchStartsAtOrBefore(first.seg.logFile, pos, offset)) {
		start, err = skipToOffset(first.seg.logFile, 0, first.end, offset)
	}
	if err != nil {
		return r, err
	}
	pos = start
	bufp := headerBufPool.Get().(*[]byte)
	defer headerBufPool.Put(bufp)
	for vi := 0; vi < len(views); vi++ {
		v := views[vi]
		if vi > 0 {
			pos = 0
		}
		if pos < v.end {
			stop, err := r.addBatches(v, pos, maxOffset, maxBytes, minOne, (*bufp)[:0])
			if err != nil {
				return Records{l: l}, err
			}
			if stop {
				break
			}
		}
		if vi == len(views)-1 {
			// Room is left: look at the segments after the last one seen.
			// (Unless the last one grew meanwhile: its new bytes come first,
			// and the next Slice gets them.)
			l.mu.Lock()
			next := len(l.segments)
			if v.seg.size == v.end {
				next = sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > v.seg.baseOffset })
			}
			if next < len(l.segments) {
				views = append(views, l.viewsLocked(next, int64(maxBytes)-r.size)...)
			}
			l.mu.Unlock()
		}
	}
	return r, nil
}

// viewsLocked returns views of segments[i:], enough to hold budget bytes.
func (l *Log) viewsLocked(i int, budget int64) []segmentView {
	var views []segmentView
	avail := int64(0)
	for _, s := range l.segments[i:] {
		views = append(views, segmentView{seg: s, end: s.size})
		if avail += s.size; avail >= budget {
			break
		}
	}
	return views
}

// skipToOffset returns the position of the first batch in [pos, end) whose
// last offset is >= offset (end if none), reading headers only.
func skipToOffset(f File, pos, end, offset int64) (int64, error) {
	bufp := headerBufPool.Get().(*[]byte)
	defer headerBufPool.Put(bufp)
	sc := newHeaderScanner(f, pos, end, (*bufp)[:0])
	for sc.next() {
		if sc.h.LastOffset() >= offset {
			return sc.batchPos, nil
		}
	}
	if sc.err != nil {
		return 0, sc.err
	}
	if sc.corrupt != nil {
		return 0, sc.corrupt
	}
	return end, nil
}

// batchStartsAtOrBefore reports whether the batch at pos has a base offset
// <= offset.
func batchStartsAtOrBefore(f File, pos, offset int64) bool {
	h, err := readBatchHeaderAt(f, pos)
	return err == nil && h.BaseOffset <= offset
}

// addBatches adds to r the batches of view v from pos on that fit the
// limits, reading their headers only (buf is the scan buffer). stop
// reports that a limit was reached (more batches exist but must not be
// returned).
func (r *Records) addBatches(v segmentView, pos, maxOffset int64, maxBytes int, minOne bool, buf []byte) (stop bool, err error) {
	sc := newHeaderScanner(v.seg.logFile, pos, v.end, buf)
	fr := fileRange{seg: v.seg, pos: pos, end: pos, gen: v.seg.cuts}
	defer func() {
		if fr.end > fr.pos {
			r.ranges = append(r.ranges, fr)
		}
	}()
	for sc.next() {
		h := &sc.h
		if h.LastOffset() >= maxOffset {
			return true, nil
		}
		size := int64(h.Size())
		first := r.size == 0
		if r.size+size > int64(maxBytes) && !(first && minOne) {
			return true, nil
		}
		fr.end += size
		r.size += size
		r.next = h.NextOffset()
		r.compressions |= 1 << uint8(h.Compression()&7)
		if first && size > int64(maxBytes) {
			return true, nil // KIP-74: the first batch whole, and nothing else
		}
	}
	if sc.err != nil {
		return true, fmt.Errorf("log: read segment %d: %w", v.seg.baseOffset, sc.err)
	}
	if sc.corrupt != nil {
		return true, fmt.Errorf("segment %d: %w", v.seg.baseOffset, sc.corrupt)
	}
	// The whole region was walked: continue into the next segment.
	return false, nil
}

// grow extends b by n bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// BatchAtTimestamp returns a copy of the first batch (at or above the log
// start offset) whose max timestamp is >= ts, for ListOffsets by timestamp;
// the caller finds the exact record. ok is false when there is none.
func (l *Log) BatchAtTimestamp(ts int64) (batch []byte, ok bool, err error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()

	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return nil, false, err
	}
	type candidate struct {
		v   segmentView
		pos int64
	}
	var candidates []candidate
	start := l.startOffset
	for _, s := range l.segments[l.segmentIndexLocked(start):] {
		if s.maxTimestamp >= ts {
			candidates = append(candidates, candidate{segmentView{s, s.size}, s.timeLookup(ts)})
		}
	}
	l.mu.Unlock()

	for _, c := range candidates {
		sc := newBatchScanner(c.v.seg.logFile, c.pos, c.v.end, false, nil)
		for sc.next() {
			if sc.h.MaxTimestamp >= ts && sc.h.LastOffset() >= start {
				return append([]byte(nil), sc.batch...), true, nil
			}
		}
		if sc.err != nil {
			return nil, false, sc.err
		}
		if sc.corrupt != nil {
			return nil, false, sc.corrupt
		}
	}
	return nil, false, nil
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// its (first) record, for ListOffsets with timestamp -3 (KIP-734); (-1, -1)
// if no batch has a timestamp. The offset is exact for uncompressed batches
// and the batch's base offset for compressed ones.
func (l *Log) MaxTimestamp() (ts int64, offset int64) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()

	l.mu.Lock()
	if l.usableLocked() != nil {
		l.mu.Unlock()
		return -1, -1
	}
	var best *segment
	for _, s := range l.segments {
		if s.maxTimestamp >= 0 && (best == nil || s.maxTimestamp > best.maxTimestamp) {
			best = s
		}
	}
	if best == nil {
		l.mu.Unlock()
		return -1, -1
	}
	ts, base := best.maxTimestamp, best.maxTimestampBase
	pos, end := best.lookup(base), best.size
	l.mu.Unlock()

	sc := newBatchScanner(best.logFile, pos, end, false, nil)
	for sc.next() {
		if sc.h.BaseOffset == base {
			return ts, offsetOfMaxTimestamp(sc.batch, &sc.h)
		}
	}
	return ts, base
}
