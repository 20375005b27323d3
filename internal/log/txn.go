package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"
)

// Transactions on the log (see docs/transactions.md): transactional batches
// open a producer's transaction; a control batch holding one end-of-
// transaction marker, appended by the leader on the coordinator's request
// (AppendMarker), closes it. The log tracks the open transactions and those
// closed but not yet known to be replicated, whose earliest first offset
// bounds the last stable offset (LastStableOffset), and keeps an index of
// aborted transactions per segment (AbortedTxns) for read_committed fetches.

// Marker is an end-of-transaction marker: the control record that commits
// or aborts producer ProducerID's transaction on this partition.
type Marker struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch fences markers from an older transaction
	// coordinator.
	CoordinatorEpoch int32
	Commit           bool
	// Timestamp is the marker batch's timestamp (milliseconds).
	Timestamp int64
}

// Control record types (the key's second int16).
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// AbortedTxn is an aborted transaction, as Fetch responses report it:
// records of ProducerID from FirstOffset to LastOffset (the abort marker)
// are aborted. LastStableOffset is the first offset of the transactions
// still open when the marker was appended (LastOffset+1 if none): no
// transaction aborted later started below it.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// txnSpan is an open transaction (last -1) or a closed one whose marker may
// not be replicated yet (last: the marker's offset).
type txnSpan struct {
	producerID  int64
	first, last int64
}

// EncodeMarkerBatch returns a control batch holding marker m, with base
// offset 0 and leader epoch -1 (Append-style patching sets both).
func EncodeMarkerBatch(m Marker) []byte {
	typ := int16(controlTypeAbort)
	if m.Commit {
		typ = controlTypeCommit
	}
	// The record: attributes 0, timestamp delta 0, offset delta 0, a 4-byte
	// key (version 0, type), a 6-byte value (version 0, coordinator epoch),
	// no headers. Varints are zig-zag: 4 -> 8, 6 -> 12.
	rec := []byte{0, 0, 0, 8, 0, 0, byte(typ >> 8), byte(typ), 12, 0, 0}
	rec = binary.BigEndian.AppendUint32(rec, uint32(m.CoordinatorEpoch))
	rec = append(rec, 0)
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+1+len(rec))
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(AttrTransactional|AttrControl))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(m.Timestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(m.Timestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(m.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(m.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// ParseMarker reads the end-of-transaction marker of control batch batch
// (header h). ok is false for a batch that holds no marker samsa knows:
// not a control batch, compressed, or of another control type (Kafka
// ignores those too).
func ParseMarker(h *BatchHeader, batch []byte) (m Marker, ok bool) {
	if !h.IsControl() || h.Compression() != 0 || h.RecordCount < 1 || len(batch) < h.Size() {
		return m, false
	}
	rec := batch[BatchHeaderSize:h.Size()]
	length, n := binary.Varint(rec)
	if n <= 0 || length < 1 || length > int64(len(rec)-n) {
		return m, false
	}
	rec = rec[n : n+int(length)]
	rec = rec[1:] // attributes
	for range 2 { // timestamp delta, offset delta
		if _, k := binary.Varint(rec); k > 0 {
			rec = rec[k:]
		} else {
			return m, false
		}
	}
	keyLen, k := binary.Varint(rec)
	if k <= 0 || keyLen < 4 || keyLen > int64(len(rec)-k) {
		return m, false
	}
	key := rec[k : k+int(keyLen)]
	rec = rec[k+int(keyLen):]
	switch typ := int16(binary.BigEndian.Uint16(key[2:])); typ {
	case controlTypeAbort, controlTypeCommit:
		m.Commit = typ == controlTypeCommit
	default:
		return m, false
	}
	valueLen, k := binary.Varint(rec)
	if k <= 0 || valueLen < 6 || valueLen > int64(len(rec)-k) {
		return m, false
	}
	value := rec[k : k+int(valueLen)]
	m.ProducerID, m.ProducerEpoch = h.ProducerID, h.ProducerEpoch
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	m.Timestamp = h.MaxTimestamp
	return m, true
}

// checkMarker validates marker m against producer state e (known is false
// when the producer has none): markers of an older producer epoch or from
// an older coordinator are refused, as in Kafka.
func checkMarker(e producerEntry, known bool, m Marker) error {
	if !known {
		return nil
	}
	if m.ProducerEpoch < e.epoch {
		return fmt.Errorf("%w: marker for producer %d epoch %d, current %d", ErrInvalidProducerEpoch, m.ProducerID, m.ProducerEpoch, e.epoch)
	}
	if m.CoordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, last %d",
			ErrCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// AppendMarker appends, as the leader of leaderEpoch, a control batch
// holding marker m, which commits or aborts the producer's transaction
// here (WriteTxnMarkers). A marker for a producer with no open transaction
// is appended too, as Kafka does, and changes nothing but the producer's
// epoch. A marker with a newer producer epoch moves the producer to it
// (transactions v2 bump the epoch at every transaction end): its next
// batch then starts at sequence 0.
func (l *Log) AppendMarker(m Marker, leaderEpoch int32) (AppendInfo, error) {
	if m.ProducerID < 0 || m.ProducerEpoch < 0 {
		return AppendInfo{}, fmt.Errorf("%w: marker for producer %d epoch %d", ErrCorruptBatch, m.ProducerID, m.ProducerEpoch)
	}
	batch := EncodeMarkerBatch(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if latest := l.epochs.latest(); leaderEpoch < latest {
		return AppendInfo{}, fmt.Errorf("%w: append in epoch %d, latest %d", ErrStaleLeaderEpoch, leaderEpoch, latest)
	}
	e, known := l.producers[m.ProducerID]
	if err := checkMarker(e, known, m); err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogStartOffset: l.startOffset}, err
	}
	SetBaseOffset(batch, l.leoLocked())
	SetPartitionLeaderEpoch(batch, leaderEpoch)
	return l.appendLocked(batch)
}

// BeginVerification starts the verification of a transactional batch of
// producer pid at epoch (KIP-890): it reports whether the batch needs the
// transaction coordinator's word that the partition is in the producer's
// transaction (not when the producer's transaction is open here at that
// epoch), and a token to append it with (AppendVerified) once the
// coordinator agreed. Any transactional batch or marker of the producer
// appended meanwhile voids the token: a batch delayed past its
// transaction's end cannot open a transaction the coordinator never hears
// of. A batch of an epoch older than the producer's here is refused at
// once (ErrInvalidProducerEpoch), before anyone is asked, as Kafka does.
func (l *Log) BeginVerification(pid int64, epoch int16) (token uint64, needed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.producers[pid]; ok {
		switch {
		case e.epoch > epoch:
			return 0, false, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
		case e.inTxn && e.epoch == epoch:
			return 0, false, nil
		}
	}
	// Verifications of the producer begun before (a retry on another
	// connection, two TxnOffsetCommits to one partition) share their
	// token, as Kafka shares its verification guard: a new token would
	// void theirs and refuse their batches.
	// Its age counts from the latest request, which must not find it
	// swept right after its own verification.
	if v, ok := l.verifying[pid]; ok && l.nowMs()-v.atMs < verificationExpiryMs {
		v.atMs = l.nowMs()
		l.verifying[pid] = v
		return v.token, true, nil
	}
	if l.verifying == nil {
		l.verifying = map[int64]verification{}
	}
	token = verifyTokens.Add(1)
	l.verifying[pid] = verification{token: token, atMs: l.nowMs()}
	return token, true, nil
}

// verifyTokens numbers the verifications of every log of the process, so
// that a token of one log is never one of another.
var verifyTokens atomic.Uint64

// VerificationCurrent reports whether token, from BeginVerification for
// producer pid, is still the producer's and valid: no transactional batch
// or marker of the producer was appended since.
func (l *Log) VerificationCurrent(pid int64, token uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.verifying[pid]
	return ok && v.token == token
}

// verification is a producer's pending verification (BeginVerification).
type verification struct {
	token uint64
	atMs  int64
}

// verificationExpiryMs is how long a verification's token stays usable:
// far longer than any request waits for the transaction coordinator, so
// only the tokens of requests that gave up go (EnforceRetention forgets
// them, so that producers that come and go leave nothing behind).
const verificationExpiryMs = 10 * 60 * 1000

// expireVerificationsLocked forgets the verifications older than
// verificationExpiryMs. mu is held.
func (l *Log) expireVerificationsLocked(nowMs int64) {
	for pid, v := range l.verifying {
		if nowMs-v.atMs >= verificationExpiryMs {
			delete(l.verifying, pid)
		}
	}
}

// AppendVerified is Append for produced batches that may be
// transactional: a transactional batch that would open its producer's
// transaction here needs the token of a verification begun for that
// producer and still valid (see BeginVerification), else
// ErrInvalidTxnState.
func (l *Log) AppendVerified(batches []byte, leaderEpoch int32, token uint64) (AppendInfo, error) {
	return l.append(batches, leaderEpoch, true, token)
}

// applyBatchLocked updates producer and transaction state for a stored
// batch (append, replication, recovery). mu (or exclusive use) is held.
func (l *Log) applyBatchLocked(h *BatchHeader, batch []byte, nowMs int64) {
	switch {
	case h.IsControl():
		if h.ProducerID < 0 {
			return
		}
		m, ok := ParseMarker(h, batch)
		if !ok {
			l.logger().Warn("log: control batch without a known marker", "dir", l.dir, "offset", h.BaseOffset)
			return
		}
		delete(l.verifying, h.ProducerID)
		e := l.producers[h.ProducerID]
		if m.ProducerEpoch != e.epoch {
			e.epoch, e.n = m.ProducerEpoch, 0
		}
		e.coordinatorEpoch = m.CoordinatorEpoch
		e.lastTimestamp = h.MaxTimestamp
		if e.lastTimestamp < 0 {
			e.lastTimestamp = nowMs
		}
		wasIn := e.inTxn
		e.inTxn = false
		l.producers[h.ProducerID] = e
		if wasIn {
			l.closeTxnLocked(h.ProducerID, h.BaseOffset, m.Commit)
		}
	case isIdempotent(h), h.IsTransactional() && h.ProducerID >= 0:
		// (Transactional batches without sequences are a coordinator's:
		// the group coordinator's transactional offset commits.)
		if h.IsTransactional() {
			delete(l.verifying, h.ProducerID)
		}
		e := l.producers[h.ProducerID]
		wasIn := e.inTxn
		if isIdempotent(h) {
			e = applyProducerBatch(e, h, nowMs)
		} else {
			e = applyCoordinatorBatch(e, h, nowMs)
		}
		l.producers[h.ProducerID] = e
		if e.inTxn && !wasIn {
			l.openTxnLocked(h.ProducerID, e.txnFirst)
		}
	}
}

// openTxnLocked records an open transaction.
func (l *Log) openTxnLocked(pid, first int64) {
	i, _ := slices.BinarySearchFunc(l.unstable, first, func(s txnSpan, first int64) int {
		return cmpInt64(s.first, first)
	})
	l.unstable = slices.Insert(l.unstable, i, txnSpan{producerID: pid, first: first, last: -1})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// closeTxnLocked records the marker at offset that ended pid's open
// transaction and, for an abort, indexes the aborted transaction in the
// segment holding the marker.
func (l *Log) closeTxnLocked(pid, offset int64, commit bool) {
	i := slices.IndexFunc(l.unstable, func(s txnSpan) bool { return s.producerID == pid && s.last < 0 })
	if i < 0 {
		return // unreachable: producer state and spans move together
	}
	l.unstable[i].last = offset
	l.closedSpans.Add(1)
	if commit {
		return
	}
	// The spans are in first-offset order: the first other open one bounds
	// the first offset of any transaction aborted later. (Closed ones do
	// not matter: a replay, which does not know the high watermark, gets
	// the same value.)
	lso := offset + 1
	for j, s := range l.unstable {
		if j != i && s.last < 0 {
			lso = min(lso, s.first)
			break
		}
	}
	seg := l.segments[l.segmentIndexLocked(offset)]
	seg.addAborted(AbortedTxn{ProducerID: pid, FirstOffset: l.unstable[i].first, LastOffset: offset, LastStableOffset: lso})
}

// rebuildUnstableLocked sets the open transactions from producer state
// (after loading a snapshot).
func (l *Log) rebuildUnstableLocked() {
	l.unstable = l.unstable[:0]
	for id, e := range l.producers {
		if e.inTxn {
			l.unstable = append(l.unstable, txnSpan{producerID: id, first: e.txnFirst, last: -1})
		}
	}
	slices.SortFunc(l.unstable, func(a, b txnSpan) int {
		if c := cmpInt64(a.first, b.first); c != 0 {
			return c
		}
		return cmpInt64(a.producerID, b.producerID)
	})
	l.closedSpans.Store(0)
}

// LastStableOffset returns the partition's last stable offset given its
// high watermark hw: the first offset of the earliest transaction that is
// open, or closed by a marker at or above hw, and at most hw. It forgets
// the closed transactions whose markers are below hw (see
// ForgetReplicatedTxns).
func (l *Log) LastStableOffset(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetReplicatedLocked(hw)
	if len(l.unstable) > 0 {
		// A transaction whose start was deleted (DeleteRecords,
		// retention) holds the offset at the log start, as in Kafka: no
		// answer names an offset that no longer exists.
		return min(max(l.unstable[0].first, l.startOffset), hw)
	}
	return hw
}

// ForgetReplicatedTxns forgets the closed transactions whose markers are
// below the high watermark hw: they no longer hold the last stable offset
// back. Every replica calls it as its high watermark moves; it takes no
// lock when there is nothing to forget.
func (l *Log) ForgetReplicatedTxns(hw int64) {
	if l.closedSpans.Load() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetReplicatedLocked(hw)
}

func (l *Log) forgetReplicatedLocked(hw int64) {
	if l.closedSpans.Load() == 0 {
		return
	}
	l.unstable = slices.DeleteFunc(l.unstable, func(s txnSpan) bool { return s.last >= 0 && s.last < hw })
	l.countClosedLocked()
}

// countClosedLocked recounts the closed spans after a change.
func (l *Log) countClosedLocked() {
	n := 0
	for _, s := range l.unstable {
		if s.last >= 0 {
			n++
		}
	}
	l.closedSpans.Store(int64(n))
}

// AbortedTxns returns the aborted transactions a read_committed fetch of
// the offsets [from, upTo) must know of: those whose marker is at or after
// from and whose first offset is below upTo, in marker order.
func (l *Log) AbortedTxns(from, upTo int64) []AbortedTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []AbortedTxn
	for _, s := range l.segments[l.segmentIndexLocked(from):] {
		for _, a := range s.aborted {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
			if a.LastStableOffset >= upTo {
				return out
			}
		}
	}
	return out
}

// Transaction index file (%020d.txnindex): the aborted transactions whose
// markers lie in the segment, in offset order, 32-byte big-endian entries:
// producerId int64, firstOffset int64, lastOffset int64 (the abort marker),
// lastStableOffset int64. Written only for segments that have one.
const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 32
)

var errBadTxnIndex = errors.New("log: malformed transaction index")

func appendTxnIndexEntry(b []byte, a AbortedTxn) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// decodeTxnIndex reads a transaction index whose markers must lie in
// [base, next), strictly increasing.
func decodeTxnIndex(b []byte, base, next int64) ([]AbortedTxn, error) {
	if len(b)%txnIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes", errBadTxnIndex, len(b))
	}
	out := make([]AbortedTxn, 0, len(b)/txnIndexEntrySize)
	prev := int64(-1)
	for ; len(b) > 0; b = b[txnIndexEntrySize:] {
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b)),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[8:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[16:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[24:])),
		}
		if a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastOffset <= prev ||
			a.LastOffset < base || a.LastOffset >= next || a.LastStableOffset < 0 || a.LastStableOffset > a.LastOffset+1 {
			return nil, fmt.Errorf("%w: entry %+v in segment [%d, %d)", errBadTxnIndex, a, base, next)
		}
		prev = a.LastOffset
		out = append(out, a)
	}
	return out, nil
}
