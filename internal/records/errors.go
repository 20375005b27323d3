package records

import "errors"

// The six kinds below are the only errors the broker needs to tell apart:
// each maps to one Kafka error code (see the table in doc.go). Every other
// sentinel in this file wraps exactly one of them, so
// errors.Is(err, ErrInvalidRecord) holds for ErrControlBatch, ErrMissingKey
// and the rest of that family.
var (
	// ErrCorrupt: the bytes are damaged (CRC mismatch, impossible lengths,
	// undecodable compressed data). Kafka: CORRUPT_MESSAGE (2).
	ErrCorrupt = errors.New("records: corrupt message")
	// ErrMessageTooLarge: the batch, or its decompressed records, exceed a
	// size limit. Kafka: MESSAGE_TOO_LARGE (10).
	ErrMessageTooLarge = errors.New("records: message too large")
	// ErrRecordListTooLarge: the records are larger than a log segment.
	// Kafka: RECORD_LIST_TOO_LARGE (18).
	ErrRecordListTooLarge = errors.New("records: record list too large")
	// ErrInvalidTimestamp: a record's timestamp is outside the allowed
	// window, or the producer claimed LogAppendTime. Kafka:
	// INVALID_TIMESTAMP (32).
	ErrInvalidTimestamp = errors.New("records: invalid timestamp")
	// ErrUnsupportedCompression: the batch names a codec that does not
	// exist. Kafka: UNSUPPORTED_COMPRESSION_TYPE (76).
	ErrUnsupportedCompression = errors.New("records: unsupported compression codec")
	// ErrInvalidRecord: the batch is well formed bytes but breaks a rule of
	// the produce path. Kafka: INVALID_RECORD (87).
	ErrInvalidRecord = errors.New("records: invalid record")
)

// Refinements of the kinds above. Tests and logs use them; the broker maps
// only the kind.
var (
	// ErrBadLength: a batch length field below the minimum batch size.
	ErrBadLength = kind(ErrCorrupt, "records: batch length out of range")
	// ErrInvalidMagic: a magic byte that is no record format at all.
	ErrInvalidMagic = kind(ErrCorrupt, "records: invalid magic byte")
	// ErrCRC: the batch's CRC-32C does not match its bytes.
	ErrCRC = kind(ErrCorrupt, "records: batch CRC-32C mismatch")
	// ErrDecompress: the compressed records could not be decompressed.
	ErrDecompress = kind(ErrCorrupt, "records: decompression failed")

	// ErrDecompressedTooLarge: the records decompress to more than
	// Limits.MaxDecompressedBytes. Mapped like any oversize batch
	// (MESSAGE_TOO_LARGE), which makes the Java producer split the batch
	// and retry rather than give up.
	ErrDecompressedTooLarge = kind(ErrMessageTooLarge, "records: decompressed records exceed the limit")

	// ErrEmpty: the partition's records field is empty or null.
	ErrEmpty = kind(ErrInvalidRecord, "records: no record batch")
	// ErrTruncated: the records end before their first batch does.
	ErrTruncated = kind(ErrInvalidRecord, "records: truncated record batch")
	// ErrTrailingBytes: bytes follow the first batch. Produce v3+ carries
	// exactly one batch per partition.
	ErrTrailingBytes = kind(ErrInvalidRecord, "records: bytes after the record batch")
	// ErrUnsupportedMagic: a magic 0 or 1 batch; Produce v3+ requires 2.
	ErrUnsupportedMagic = kind(ErrInvalidRecord, "records: batch magic is not 2")
	// ErrBaseOffset: a client batch must carry base offset 0.
	ErrBaseOffset = kind(ErrInvalidRecord, "records: batch base offset is not 0")
	// ErrInvalidRecordCount: recordCount, lastOffsetDelta and the records
	// actually present disagree.
	ErrInvalidRecordCount = kind(ErrInvalidRecord, "records: inconsistent record count")
	// ErrControlBatch: clients may not write control batches.
	ErrControlBatch = kind(ErrInvalidRecord, "records: control batch from a client")
	// ErrProducerFields: producer id, epoch, sequence and the
	// transactional flag contradict each other.
	ErrProducerFields = kind(ErrInvalidRecord, "records: inconsistent producer fields")
	// ErrMalformedRecord: a record's varint framing is broken.
	ErrMalformedRecord = kind(ErrInvalidRecord, "records: malformed record")
	// ErrOffsetDelta: a record's offset delta is not its index in the batch.
	ErrOffsetDelta = kind(ErrInvalidRecord, "records: record offset delta is not its index")
	// ErrMissingKey: a record without a key for a compacted topic.
	ErrMissingKey = kind(ErrInvalidRecord, "records: compacted topic cannot accept a record without a key")

	// ErrBadLimits: the caller passed Limits that make no sense. Not the
	// client's fault; the broker answers UNKNOWN_SERVER_ERROR.
	ErrBadLimits = errors.New("records: invalid limits")
)

// kindError is a sentinel that belongs to a broader kind: it prints its own
// message and unwraps to the kind.
type kindError struct {
	msg    string
	parent error
}

func kind(parent error, msg string) error { return &kindError{msg: msg, parent: parent} }

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// RecordError is returned when one record of an otherwise sound batch fails
// a per-record check. BatchIndex is the record's position in the batch, as
// Kafka reports it in the ProduceResponse record_errors (v8+). Err wraps the
// sentinel (ErrMalformedRecord, ErrOffsetDelta, ErrMissingKey or
// ErrInvalidTimestamp).
type RecordError struct {
	BatchIndex int32
	Err        error
}

func (e *RecordError) Error() string { return e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }
