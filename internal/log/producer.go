package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"
)

// producerBatchesRetained is how many recent batches are remembered per
// producer to answer retries (Kafka's NUM_BATCHES_TO_RETAIN, matching the
// clients' max.in.flight.requests.per.connection limit of 5).
const producerBatchesRetained = 5

// producerBatch is what is remembered of one batch of an idempotent producer.
type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// producerEntry is the state of one idempotent or transactional producer:
// its current epoch, its last batches (oldest first), and its transaction
// on this partition, if one is open. An entry may hold no batches: a
// transaction marker that bumped the producer's epoch (transactions v2)
// leaves the epoch and nothing else.
type producerEntry struct {
	epoch int16
	// coordinatorEpoch is the transaction coordinator epoch of the latest
	// marker; an older coordinator's markers are refused.
	coordinatorEpoch int32
	// inTxn: a transactional batch was appended and no marker followed
	// yet; txnFirst is the offset of that first batch.
	inTxn    bool
	txnFirst int64
	// lastTimestamp is the max timestamp of the producer's last batch (the
	// broker clock when the batch has none); expiration measures from it.
	lastTimestamp int64
	n             int // batches[:n] are valid
	batches       [producerBatchesRetained]producerBatch
}

func (e *producerEntry) last() producerBatch { return e.batches[e.n-1] }

func (e *producerEntry) push(b producerBatch) {
	if e.n == len(e.batches) {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
}

// ProducerState is the public view of an idempotent producer's state.
type ProducerState struct {
	ProducerID   int64
	Epoch        int16
	LastSequence int32 // last sequence number appended; -1 if none in this epoch
	LastOffset   int64 // offset of the last record appended; -1 if none in this epoch
	// LastTimestamp is the max timestamp of its last batch or marker.
	LastTimestamp int64
	// CoordinatorEpoch is that of its last transaction marker (0 if none).
	CoordinatorEpoch int32
	// TxnStartOffset is the first offset of its open transaction, -1 if
	// none.
	TxnStartOffset int64
}

func (e *producerEntry) state(id int64) ProducerState {
	ps := ProducerState{ProducerID: id, Epoch: e.epoch, LastSequence: -1, LastOffset: -1,
		LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, TxnStartOffset: -1}
	if e.n > 0 {
		last := e.last()
		ps.LastSequence, ps.LastOffset = last.lastSeq, last.lastOffset
	}
	if e.inTxn {
		ps.TxnStartOffset = e.txnFirst
	}
	return ps
}

// producerStates tracks idempotent producers, following Kafka's
// ProducerStateManager. Only batches with producerId >= 0 and baseSequence
// >= 0 are tracked.
type producerStates map[int64]producerEntry

func isIdempotent(h *BatchHeader) bool { return h.ProducerID >= 0 && h.BaseSequence >= 0 }

// nextSequence is the sequence following seq; sequences wrap from
// math.MaxInt32 to 0.
func nextSequence(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 0
	}
	return seq + 1
}

// checkProducerBatch validates the leader append of a batch of producer e
// (known is false when the producer has no state). It returns the
// original batch when h is a retry of one of the remembered batches.
func checkProducerBatch(e producerEntry, known bool, h *BatchHeader) (dup producerBatch, err error) {
	if !known {
		// No state: a new producer, or one whose state expired or went with
		// retention. Kafka accepts any sequence then, and so do we.
		return dup, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return dup, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return dup, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d, want 0",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return dup, checkTxnState(e, h)
	}
	last := h.LastSequence()
	for _, b := range e.batches[:e.n] {
		if b.firstSeq == h.BaseSequence && b.lastSeq == last {
			return b, fmt.Errorf("%w: producer %d sequences %d..%d at offsets %d..%d",
				ErrDuplicateSequence, h.ProducerID, b.firstSeq, b.lastSeq, b.firstOffset, b.lastOffset)
		}
	}
	// An entry without batches (its epoch set by a marker) expects the
	// epoch's first sequence, 0.
	want := int32(0)
	if e.n > 0 {
		want = nextSequence(e.last().lastSeq)
	}
	if h.BaseSequence != want {
		return dup, fmt.Errorf("%w: producer %d epoch %d sequence %d, want %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, want)
	}
	return dup, checkTxnState(e, h)
}

// checkTxnState refuses a non-transactional batch from a producer whose
// transaction on this partition is still open, whatever its epoch, as
// Kafka does.
func checkTxnState(e producerEntry, h *BatchHeader) error {
	if e.inTxn && !h.IsTransactional() {
		return fmt.Errorf("%w: producer %d sent a non-transactional batch while its transaction from offset %d is open",
			ErrInvalidTxnState, h.ProducerID, e.txnFirst)
	}
	return nil
}

// applyProducerBatch records h, stored at baseOffset, in entry e. A new
// epoch starts the remembered batches afresh. nowMs stands in for a missing
// batch timestamp. The first transactional batch opens the producer's
// transaction.
func applyProducerBatch(e producerEntry, h *BatchHeader, nowMs int64) producerEntry {
	if h.ProducerEpoch != e.epoch {
		e.epoch, e.n = h.ProducerEpoch, 0
	}
	e.push(producerBatch{
		firstSeq: h.BaseSequence, lastSeq: h.LastSequence(),
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset(),
	})
	e.lastTimestamp = h.MaxTimestamp
	if e.lastTimestamp < 0 {
		e.lastTimestamp = nowMs
	}
	if h.IsTransactional() && !e.inTxn {
		e.inTxn, e.txnFirst = true, h.BaseOffset
	}
	return e
}

// applyCoordinatorBatch records a transactional batch without sequences
// (written by a coordinator on the producer's behalf) in entry e: its epoch
// and transaction, no batch to deduplicate.
func applyCoordinatorBatch(e producerEntry, h *BatchHeader, nowMs int64) producerEntry {
	if h.ProducerEpoch != e.epoch {
		e.epoch, e.n = h.ProducerEpoch, 0
	}
	e.lastTimestamp = h.MaxTimestamp
	if e.lastTimestamp < 0 {
		e.lastTimestamp = nowMs
	}
	if !e.inTxn {
		e.inTxn, e.txnFirst = true, h.BaseOffset
	}
	return e
}

// expire forgets producers idle for expirationMs or more, as Kafka does,
// except those with an open transaction: its first offset holds the last
// stable offset until a marker closes it.
func (p producerStates) expire(nowMs, expirationMs int64) {
	for id, e := range p {
		if !e.inTxn && nowMs-e.lastTimestamp >= expirationMs {
			delete(p, id)
		}
	}
}

// Producer snapshot file: <offset>.snapshot holds the state after every
// batch below offset. Layout, big-endian:
//
//	magic "SPS2", crc uint32 (CRC-32C of the rest), count uint32, then count
//	entries sorted by producer id:
//	producerId int64, epoch int16, coordinatorEpoch int32,
//	txnFirst int64 (-1: no open transaction), lastTimestamp int64, n uint8,
//	n × (firstSeq int32, lastSeq int32, firstOffset int64, lastOffset int64)
//
// Snapshots of the first format, "SPS1" (written before transactions: no
// coordinatorEpoch nor txnFirst, n >= 1), are still read.
const (
	snapshotSuffix     = ".snapshot"
	snapshotMagicV1    = "SPS1"
	snapshotMagic      = "SPS2"
	snapshotHeaderSize = 12
	snapshotEntryV1    = 8 + 2 + 8 + 1
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 8 + 1
	snapshotBatchSize  = 4 + 4 + 8 + 8
)

var errBadSnapshot = errors.New("log: malformed producer snapshot")

func (p producerStates) encode() []byte {
	ids := slices.Sorted(maps.Keys(p))
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(p)*(snapshotEntrySize+2*snapshotBatchSize))
	copy(b, snapshotMagic)
	binary.BigEndian.PutUint32(b[8:], uint32(len(ids)))
	for _, id := range ids {
		e := p[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		txnFirst := int64(-1)
		if e.inTxn {
			txnFirst = e.txnFirst
		}
		b = binary.BigEndian.AppendUint64(b, uint64(txnFirst))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastTimestamp))
		b = append(b, byte(e.n))
		for _, pb := range e.batches[:e.n] {
			b = binary.BigEndian.AppendUint32(b, uint32(pb.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(pb.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.firstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.lastOffset))
		}
	}
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

func decodeProducerSnapshot(b []byte) (producerStates, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: bad header", errBadSnapshot)
	}
	entrySize := snapshotEntrySize
	switch string(b[:4]) {
	case snapshotMagic:
	case snapshotMagicV1:
		entrySize = snapshotEntryV1
	default:
		return nil, fmt.Errorf("%w: bad header", errBadSnapshot)
	}
	v1 := entrySize == snapshotEntryV1
	if crc32.Checksum(b[8:], castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, fmt.Errorf("%w: CRC mismatch", errBadSnapshot)
	}
	count := binary.BigEndian.Uint32(b[8:])
	rest := b[snapshotHeaderSize:]
	if uint64(count)*uint64(entrySize) > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errBadSnapshot, count, len(rest))
	}
	p := make(producerStates, count)
	for range count {
		if len(rest) < entrySize {
			return nil, fmt.Errorf("%w: truncated entry", errBadSnapshot)
		}
		id := int64(binary.BigEndian.Uint64(rest))
		e := producerEntry{epoch: int16(binary.BigEndian.Uint16(rest[8:]))}
		if v1 {
			e.lastTimestamp = int64(binary.BigEndian.Uint64(rest[10:]))
			e.n = int(rest[18])
		} else {
			e.coordinatorEpoch = int32(binary.BigEndian.Uint32(rest[10:]))
			if first := int64(binary.BigEndian.Uint64(rest[14:])); first >= 0 {
				e.inTxn, e.txnFirst = true, first
			} else if first != -1 {
				return nil, fmt.Errorf("%w: producer %d transaction first offset %d", errBadSnapshot, id, first)
			}
			e.lastTimestamp = int64(binary.BigEndian.Uint64(rest[22:]))
			e.n = int(rest[30])
		}
		rest = rest[entrySize:]
		if v1 && e.n == 0 || e.n > producerBatchesRetained || len(rest) < e.n*snapshotBatchSize {
			return nil, fmt.Errorf("%w: producer %d with %d batches", errBadSnapshot, id, e.n)
		}
		for i := range e.n {
			e.batches[i] = producerBatch{
				firstSeq:    int32(binary.BigEndian.Uint32(rest)),
				lastSeq:     int32(binary.BigEndian.Uint32(rest[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(rest[8:])),
				lastOffset:  int64(binary.BigEndian.Uint64(rest[16:])),
			}
			rest = rest[snapshotBatchSize:]
		}
		p[id] = e
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBadSnapshot, len(rest))
	}
	return p, nil
}

// pendingSnapshot is a producer snapshot taken under the append lock, to be
// written by the next flush round.
type pendingSnapshot struct {
	offset int64
	data   []byte
}
