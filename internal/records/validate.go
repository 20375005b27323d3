package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
)

// Values of message.timestamp.type.
const (
	CreateTime    = "CreateTime"
	LogAppendTime = "LogAppendTime"
)

// Kafka's defaults for the limits Validate enforces.
const (
	// DefaultMaxMessageBytes is message.max.bytes: 1 MiB plus the 12-byte
	// log overhead.
	DefaultMaxMessageBytes = 1048588
	// DefaultMaxDecompressedBytes is samsa's own cap on what one batch may
	// decompress to (Kafka has none: it streams). 64 MiB is 64 times the
	// default max.message.bytes, far above what real payloads compress by,
	// and small enough that a bomb costs a bounded amount of memory.
	DefaultMaxDecompressedBytes = 64 << 20
	// DefaultMaxTimestampDiffBefore is message.timestamp.before.max.ms.
	DefaultMaxTimestampDiffBefore = math.MaxInt64
	// DefaultMaxTimestampDiffAfter is message.timestamp.after.max.ms as of
	// Kafka 4.0 (KIP-1030; Long.MAX_VALUE in 3.6 to 3.9).
	DefaultMaxTimestampDiffAfter = 3600000
)

// Byte offset of the magic byte in any batch or legacy message set entry,
// and the smallest length field Kafka's batch iterator accepts (the v0
// message overhead) before it knows the magic.
const (
	magicOffset     = 16
	minLegacyLength = 14
)

// Limits are the topic's settings Validate checks against. Start from
// DefaultLimits: the zero value of the timestamp fields means "no skew at
// all allowed", as it does in Kafka.
type Limits struct {
	// MaxMessageBytes is max.message.bytes: the largest batch, header
	// included. <= 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int32
	// MaxDecompressedBytes caps the decompressed records of one batch.
	// <= 0 means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int64
	// MaxSegmentBytes is segment.bytes; records larger than a segment get
	// ErrRecordListTooLarge. 0 skips the check.
	MaxSegmentBytes int32
	// TimestampType is CreateTime (also when empty) or LogAppendTime. For
	// LogAppendTime the skew limits do not apply; Validate only reports it
	// and the broker stamps the batch.
	TimestampType string
	// MaxTimestampDiffBefore and MaxTimestampDiffAfter are
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms:
	// how far a CreateTime record may lie behind or ahead of Now.
	MaxTimestampDiffBefore int64
	MaxTimestampDiffAfter  int64
	// Compacted is cleanup.policy containing compact: every record needs
	// a key.
	Compacted bool
	// Now is the broker's clock in milliseconds since the epoch; 0 reads
	// time.Now.
	Now int64
	// Memory, if set, is the budget decompression takes its output
	// buffer from (the broker passes the protocol server's request-path
	// budget, queued.max.request.bytes). See "Decompression" in the
	// package documentation.
	Memory MemoryBudget
}

// MemoryBudget is a memory budget shared with other users (the protocol
// server's request path), which decompression takes its buffers from.
type MemoryBudget interface {
	// TryAcquire takes n bytes if they fit, and reports whether it did.
	TryAcquire(n int64) bool
	// Release returns n bytes.
	Release(n int64)
}

// DefaultLimits returns Kafka's defaults for a CreateTime, non-compacted
// topic.
func DefaultLimits() Limits {
	return Limits{
		MaxMessageBytes:        DefaultMaxMessageBytes,
		MaxDecompressedBytes:   DefaultMaxDecompressedBytes,
		TimestampType:          CreateTime,
		MaxTimestampDiffBefore: DefaultMaxTimestampDiffBefore,
		MaxTimestampDiffAfter:  DefaultMaxTimestampDiffAfter,
	}
}

// Result describes a batch that passed Validate.
type Result struct {
	// Header is the batch's header as the client sent it. The bytes hold
	// exactly one batch: Header.Size() == len(records).
	Header klog.BatchHeader
	// RecordCount is the number of records (== Header.RecordCount).
	RecordCount int32
	// Compression is the codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
	Compression int
	// ProducerID, ProducerEpoch and BaseSequence are the idempotent
	// producer's fields, all -1 when the batch has no producer id.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Transactional is the batch's transactional attribute.
	Transactional bool
	// MaxTimestamp is, for CreateTime, the largest record timestamp, or -1
	// when no record has one; it may differ from Header.MaxTimestamp, which
	// Kafka overwrites with this value. For LogAppendTime it is Now.
	MaxTimestamp int64
	// OffsetDeltaOfMaxTimestamp is the offset delta of the first record
	// holding MaxTimestamp (0 for LogAppendTime, -1 when MaxTimestamp is).
	OffsetDeltaOfMaxTimestamp int32
	// LogAppendTime reports that the topic uses LogAppendTime: the broker
	// must set the batch's timestamp type and max timestamp to Now.
	LogAppendTime bool
	// Now is the clock reading the timestamps were checked against.
	Now int64
	// UncompressedBytes is the size of the records section after
	// decompression (the section's own size when not compressed).
	UncompressedBytes int
}

// Validate checks the records a client produced to one partition, before
// the leader appends them unchanged. It follows Kafka's produce path
// (ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and
// LogValidator); doc.go lists every check and its error. It allocates
// nothing for a valid batch beyond pooled buffers.
func Validate(b []byte, lim Limits) (Result, error) {
	res := Result{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, MaxTimestamp: -1, OffsetDeltaOfMaxTimestamp: -1}
	logAppendTime, err := lim.check()
	if err != nil {
		return res, err
	}
	h, err := parseFraming(b)
	if err != nil {
		return res, err
	}
	res.Header = h

	// UnifiedLog.analyzeAndValidateRecords, in its order.
	if h.BaseOffset != 0 {
		return res, fmt.Errorf("%w: %d", ErrBaseOffset, h.BaseOffset)
	}
	maxBytes := int(lim.MaxMessageBytes)
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	if h.Size() > maxBytes {
		return res, fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", ErrMessageTooLarge, h.Size(), maxBytes)
	}
	if err := klog.VerifyCRC(b, &h); err != nil {
		return res, fmt.Errorf("%w: %w", ErrCRC, err)
	}
	if lim.MaxSegmentBytes > 0 && len(b) > int(lim.MaxSegmentBytes) {
		return res, fmt.Errorf("%w: %d bytes, segment.bytes is %d", ErrRecordListTooLarge, len(b), lim.MaxSegmentBytes)
	}
	codec := h.Compression()
	if codec > codecZstd {
		return res, fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, codec)
	}

	// LogValidator.validateBatch.
	if h.RecordCount <= 0 {
		return res, fmt.Errorf("%w: record count %d", ErrInvalidRecordCount, h.RecordCount)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.RecordCount) {
		return res, fmt.Errorf("%w: last offset delta %d with %d records", ErrInvalidRecordCount, h.LastOffsetDelta, h.RecordCount)
	}
	if h.IsControl() {
		return res, ErrControlBatch
	}
	if err := checkProducer(&h); err != nil {
		return res, err
	}

	now := lim.Now
	if now == 0 {
		now = time.Now().UnixMilli()
	}
	res.RecordCount = h.RecordCount
	res.Compression = codec
	res.Transactional = h.IsTransactional()
	if h.ProducerID >= 0 {
		res.ProducerID, res.ProducerEpoch, res.BaseSequence = h.ProducerID, h.ProducerEpoch, h.BaseSequence
	}
	res.LogAppendTime = logAppendTime
	res.Now = now

	// LogValidator.validateRecord, for every record.
	data := b[klog.BatchHeaderSize:h.Size()]
	if codec != codecNone {
		buf := getBuffer()
		defer putBuffer(buf)
		out, release, err := decompressWithin(lim.Memory, codec, data, buf, decompressLimit(lim.MaxDecompressedBytes))
		defer release()
		if err != nil {
			return res, err
		}
		data = out
	}
	res.UncompressedBytes = len(data)
	if err := checkRecords(data, &h, &lim, logAppendTime, now, &res); err != nil {
		return res, err
	}
	if logAppendTime {
		res.MaxTimestamp, res.OffsetDeltaOfMaxTimestamp = now, 0
	}
	return res, nil
}

// check validates the limits themselves and reports LogAppendTime.
func (lim *Limits) check() (logAppendTime bool, err error) {
	switch lim.TimestampType {
	case "", CreateTime:
	case LogAppendTime:
		logAppendTime = true
	default:
		return false, fmt.Errorf("%w: timestamp type %q", ErrBadLimits, lim.TimestampType)
	}
	if lim.MaxTimestampDiffBefore < 0 || lim.MaxTimestampDiffAfter < 0 {
		return false, fmt.Errorf("%w: negative timestamp difference", ErrBadLimits)
	}
	return logAppendTime, nil
}

// parseFraming checks that b holds exactly one complete v2 batch and parses
// its header. The order of the checks, and so which error a mangled input
// gets, follows Kafka's batch iterator (ByteBufferLogInputStream) and then
// ProduceRequest.validateRecords.
func parseFraming(b []byte) (klog.BatchHeader, error) {
	var h klog.BatchHeader
	if len(b) == 0 {
		return h, ErrEmpty
	}
	if len(b) < klog.LogOverhead {
		return h, fmt.Errorf("%w: %d bytes, shorter than a batch length prefix", ErrTruncated, len(b))
	}
	length := int32(binary.BigEndian.Uint32(b[klog.LogOverhead-4:]))
	if length < minLegacyLength {
		return h, fmt.Errorf("%w: %d", ErrBadLength, length)
	}
	if len(b) <= magicOffset {
		return h, fmt.Errorf("%w: %d bytes, shorter than a batch header", ErrTruncated, len(b))
	}
	magic := int8(b[magicOffset])
	if magic < 0 || magic > 2 {
		return h, fmt.Errorf("%w: %d", ErrInvalidMagic, magic)
	}
	size := int64(klog.LogOverhead) + int64(length)
	if int64(len(b)) < size {
		return h, fmt.Errorf("%w: %d of %d bytes", ErrTruncated, len(b), size)
	}
	if magic != 2 {
		return h, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, magic)
	}
	if length < klog.BatchHeaderSize-klog.LogOverhead {
		return h, fmt.Errorf("%w: %d, shorter than a v2 batch header", ErrBadLength, length)
	}
	if int64(len(b)) > size {
		return h, fmt.Errorf("%w: %d bytes after a batch of %d", ErrTrailingBytes, int64(len(b))-size, size)
	}
	h, err := klog.ParseBatchHeader(b)
	switch {
	case err == nil:
		return h, nil
	case errors.Is(err, klog.ErrBadOffsets) && h.BaseOffset != 0:
		return h, fmt.Errorf("%w: %d", ErrBaseOffset, h.BaseOffset)
	case errors.Is(err, klog.ErrBadOffsets):
		return h, fmt.Errorf("%w: last offset delta %d", ErrInvalidRecordCount, h.LastOffsetDelta)
	default: // the checks above leave nothing else for it to find
		return h, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
}

// checkProducer checks the idempotence fields. Kafka rejects a producer id
// without a sequence; samsa also rejects a negative epoch with a producer
// id, and a transactional batch without one, which no client writes and
// which would confuse the producer state and read_committed consumers.
func checkProducer(h *klog.BatchHeader) error {
	switch {
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return fmt.Errorf("%w: producer id %d with sequence %d", ErrProducerFields, h.ProducerID, h.BaseSequence)
	case h.ProducerID >= 0 && h.ProducerEpoch < 0:
		return fmt.Errorf("%w: producer id %d with epoch %d", ErrProducerFields, h.ProducerID, h.ProducerEpoch)
	case h.ProducerID < 0 && h.IsTransactional():
		return fmt.Errorf("%w: transactional batch without a producer id", ErrProducerFields)
	}
	return nil
}

// checkRecords walks the records section (decompressed) of the batch. Like
// Kafka it keeps going past a record with a missing key or a bad timestamp,
// so that INVALID_TIMESTAMP wins if any record has one; framing errors stop
// the walk at once.
func checkRecords(data []byte, h *klog.BatchHeader, lim *Limits, logAppendTime bool, now int64, res *Result) error {
	lower := subSaturating(now, lim.MaxTimestampDiffBefore)
	upper := addSaturating(now, lim.MaxTimestampDiffAfter)
	claimsLogAppendTime := h.Attributes&klog.AttrTimestampType != 0
	var keyErr, timeErr error
	maxTimestamp, maxDelta := int64(-1), int32(-1)
	var r Record
	off := 0
	for i := range h.RecordCount {
		if off == len(data) {
			return fmt.Errorf("%w: batch holds %d records, header says %d", ErrInvalidRecordCount, i, h.RecordCount)
		}
		next, err := parseRecord(data, off, &r)
		if err != nil {
			return malformed(i, off, err)
		}
		off = next
		if r.OffsetDelta != i {
			return &RecordError{BatchIndex: i, Err: fmt.Errorf("%w: record %d has offset delta %d", ErrOffsetDelta, i, r.OffsetDelta)}
		}
		if lim.Compacted && r.Key == nil {
			if keyErr == nil {
				keyErr = &RecordError{BatchIndex: i, Err: fmt.Errorf("%w: record %d", ErrMissingKey, i)}
			}
			continue // Kafka checks the timestamp only of records with a key
		}
		// Wraps on overflow, as in Java: consumers compute the same value.
		ts := h.BaseTimestamp + r.TimestampDelta
		if ts > maxTimestamp {
			maxTimestamp, maxDelta = ts, r.OffsetDelta
		}
		if timeErr != nil {
			continue
		}
		switch {
		case !logAppendTime && ts != -1: // -1 is "no timestamp"
			if ts < lower || ts > upper {
				timeErr = &RecordError{BatchIndex: i, Err: fmt.Errorf("%w: record %d has timestamp %d, allowed [%d, %d]", ErrInvalidTimestamp, i, ts, lower, upper)}
			}
		case claimsLogAppendTime:
			timeErr = &RecordError{BatchIndex: i, Err: fmt.Errorf("%w: producer set the timestamp type to LogAppendTime", ErrInvalidTimestamp)}
		}
	}
	if off != len(data) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecordCount, len(data)-off, h.RecordCount)
	}
	if timeErr != nil {
		return timeErr
	}
	if keyErr != nil {
		return keyErr
	}
	res.MaxTimestamp, res.OffsetDeltaOfMaxTimestamp = maxTimestamp, maxDelta
	return nil
}

func subSaturating(a, b int64) int64 { // b >= 0
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func addSaturating(a, b int64) int64 { // b >= 0
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
