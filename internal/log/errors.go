package log

import "errors"

// Errors of the log. They are wrapped with %w; test with errors.Is. (The
// batch-parsing errors live in batch.go.)
var (
	// ErrOffsetOutOfRange: a read or truncation below the log start offset or
	// above the log end offset.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrNonMonotonic: replicated batches that do not start at the LEO or
	// whose offsets go backwards.
	ErrNonMonotonic = errors.New("log: batch offsets not monotonic")
	// ErrCorruptBatch: a batch given to Append or AppendReplicated fails
	// header or CRC validation (wraps the batch.go error), or data read from
	// disk does not parse.
	ErrCorruptBatch = errors.New("log: corrupt record batch")
	// ErrDuplicateSequence: the batch repeats one of the last five batches of
	// its producer; the AppendInfo returned with it holds the original
	// offsets.
	ErrDuplicateSequence = errors.New("log: duplicate sequence number")
	// ErrOutOfOrderSequence: the batch's first sequence does not follow the
	// producer's last one.
	ErrOutOfOrderSequence = errors.New("log: out of order sequence number")
	// ErrInvalidProducerEpoch: the batch's producer epoch is older than the
	// producer's current one.
	ErrInvalidProducerEpoch = errors.New("log: invalid producer epoch")
	// ErrInvalidTxnState: a non-transactional batch from a producer whose
	// transaction on the partition is open.
	ErrInvalidTxnState = errors.New("log: invalid transaction state")
	// ErrCoordinatorFenced: a transaction marker from an older transaction
	// coordinator than the producer's last marker came from.
	ErrCoordinatorFenced = errors.New("log: transaction coordinator fenced")
	// ErrStaleLeaderEpoch: Append or AssignEpoch with a leader epoch older
	// than the latest one in the leader epoch cache. Leader epochs only grow
	// on a replica; an older one means the caller lost leadership.
	ErrStaleLeaderEpoch = errors.New("log: leader epoch older than the latest epoch")
	// ErrClosed: the log was closed or deleted.
	ErrClosed = errors.New("log: closed")
	// ErrFailed: an earlier write, sync or truncate failed, so what is on
	// disk is unknown. The log refuses all further work; reopening it runs
	// recovery. Returned errors wrap both ErrFailed and the I/O error.
	ErrFailed = errors.New("log: failed after an I/O error; reopen to recover")
	// ErrRecordsGone: the bytes of a Records were cut (truncation) or their
	// file closed (retention, compaction, the log closing) before they were
	// sent or read. The reader asks again.
	ErrRecordsGone = errors.New("log: records truncated or deleted before they were read")
)
