// Package records validates the Records bytes that a Produce request
// carries for one partition, before the leader appends them. The bytes are
// never re-encoded: a batch that passes is appended exactly as it came, with
// only its base offset and partition leader epoch patched (internal/log).
//
// The checks follow Apache Kafka's produce path: ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords and LogValidator (origin CLIENT,
// magic 2). Where samsa differs, it says so below.
//
// # What Validate checks, in order
//
//  1. Framing, as Kafka's batch iterator sees it: some bytes at all
//     (ErrEmpty); a length prefix (ErrTruncated); a length field of at
//     least 14, the legacy minimum (ErrBadLength); a magic byte of 0, 1 or 2
//     (ErrInvalidMagic); the whole first batch present (ErrTruncated); magic
//     2, as Produce v3+ requires (ErrUnsupportedMagic); a length that holds
//     the 61-byte v2 header (ErrBadLength); nothing after the batch
//     (ErrTrailingBytes), since Produce v3+ allows exactly one batch per
//     partition.
//  2. The log's checks: base offset 0 (ErrBaseOffset); batch size at most
//     max.message.bytes (ErrMessageTooLarge); CRC-32C (ErrCRC); records no
//     larger than a segment when MaxSegmentBytes is set
//     (ErrRecordListTooLarge); a codec from 0 to 4 (ErrUnsupportedCompression).
//  3. The batch: recordCount > 0 and lastOffsetDelta+1 == recordCount
//     (ErrInvalidRecordCount); not a control batch (ErrControlBatch); with a
//     producer id, a sequence >= 0 and (samsa only) an epoch >= 0; and
//     (samsa only) no transactional flag without a producer id
//     (ErrProducerFields).
//  4. Every record, decompressing first if needed: its varint framing
//     (lengths within the record and the record within the batch, varints
//     of at most 5 or 10 bytes, no negative lengths but -1 for a null key,
//     value or header value, a header count no larger than the bytes left
//     could hold, the fields adding up to the record's length), all as
//     ErrMalformedRecord; its offset delta equal to its index
//     (ErrOffsetDelta); exactly recordCount records filling the section
//     (ErrInvalidRecordCount); a non-null key on a compacted topic
//     (ErrMissingKey); for CreateTime, a timestamp (baseTimestamp + delta,
//     -1 exempt) within [Now - before.max.ms, Now + after.max.ms]
//     (ErrInvalidTimestamp); and no LogAppendTime claimed by the producer
//     where Kafka rejects that (ErrInvalidTimestamp). Per-record failures
//     come as a *RecordError carrying the record's index.
//
// # Errors and Kafka codes
//
// Every error wraps one of six kinds; the broker maps the kind (errors.Is)
// and nothing else:
//
//	kind                       Kafka error code                     refinements
//	ErrCorrupt                 CORRUPT_MESSAGE (2)                  ErrBadLength, ErrInvalidMagic, ErrCRC, ErrDecompress
//	ErrMessageTooLarge         MESSAGE_TOO_LARGE (10)               ErrDecompressedTooLarge
//	ErrRecordListTooLarge      RECORD_LIST_TOO_LARGE (18)
//	ErrInvalidTimestamp        INVALID_TIMESTAMP (32)
//	ErrUnsupportedCompression  UNSUPPORTED_COMPRESSION_TYPE (76)
//	ErrInvalidRecord           INVALID_RECORD (87)                  ErrEmpty, ErrTruncated, ErrTrailingBytes,
//	                                                                ErrUnsupportedMagic, ErrBaseOffset,
//	                                                                ErrInvalidRecordCount, ErrControlBatch,
//	                                                                ErrProducerFields, ErrMalformedRecord,
//	                                                                ErrOffsetDelta, ErrMissingKey
//	ErrBadLimits (caller bug)  UNKNOWN_SERVER_ERROR (-1)
//	ErrDecompressBusy          REQUEST_TIMED_OUT (7)                wraps context.DeadlineExceeded, not a kind
//
// These are the codes Kafka answers for the same input, with these
// exceptions, all made because samsa stores the bytes as they are:
//
//   - Trailing bytes after the batch: Kafka rejects a complete second batch
//     (INVALID_RECORD) but silently trims a partial one; samsa rejects both.
//   - Offset deltas that are not 0, 1, 2…: Kafka rewrites (recompresses) such
//     a compressed batch and ignores them in an uncompressed one; samsa
//     cannot rewrite, so it rejects them.
//   - Key, value or header-value lengths below -1: Kafka reads them as null;
//     samsa rejects them.
//   - Undecodable compressed data: Kafka fails with an unmapped exception
//     (UNKNOWN_SERVER_ERROR); samsa says CORRUPT_MESSAGE.
//   - A codec id of 5 to 7: Kafka fails with an unmapped exception; samsa
//     says UNSUPPORTED_COMPRESSION_TYPE.
//   - A header maxTimestamp that disagrees with the records: Kafka rewrites
//     the field (and the CRC); Validate reports the true value in
//     Result.MaxTimestamp and leaves the bytes alone.
//
// Left to the broker: UNSUPPORTED_COMPRESSION_TYPE for zstd in Produce v3
// to v6 (Result.Compression == 4), the producer state checks (sequence gaps,
// fencing), stamping LogAppendTime batches (Result.LogAppendTime), and a
// topic compression.type other than "producer", which would need
// re-encoding.
//
// # Decompression
//
// gzip (klauspost/compress/gzip, concatenated members allowed), snappy
// (both the Java client's xerial framing, recognised by its magic, and a
// single raw block, as librdkafka, franz-go and sarama write it; snappy's
// own stream framing is not used by Kafka clients and is not accepted), lz4
// (the frame format, pierrec/lz4) and zstd (klauspost/compress/zstd).
//
// Output goes into a pooled buffer and never past MaxDecompressedBytes
// (default DefaultMaxDecompressedBytes, 64 MiB) per batch. Snappy states its
// decoded size before decoding, and zstd frames usually do, so those bombs
// fail before anything is allocated; gzip, lz4 and zstd without a stated
// size are read in doubling chunks and stop one byte past the cap. Exceeding
// it is ErrDecompressedTooLarge (MESSAGE_TOO_LARGE), which makes the Java
// producer split the batch and retry.
//
// Memory: no single output buffer exceeds the cap (+1 byte); the doubling
// allocates under twice the cap in all. Each codec adds a bounded working
// set of its own: gzip a 32 KiB window, lz4 one block buffer (up to 4 MiB,
// from lz4's pool), zstd a window ring of the frame's declared window size.
// zstd windows are therefore capped at the cap too: a frame declaring a
// larger window fails as ErrDecompressedTooLarge before its ring is
// allocated. (The Java producer declares windows of up to 128 MiB, at zstd
// level 22; levels up to 21 fit the default cap.) Decoders are pooled;
// buffers above 8 MiB and zstd decoders that held a window above 8 MiB are
// not returned to the pools. klauspost's DecodeAll is not used: past its cap
// it reallocates before it notices, and its limits apply per frame, so
// concatenated frames overshoot them.
//
// Limits.Memory, when set, is a memory budget shared with the rest of the
// request path (the protocol server's, queued.max.request.bytes): Validate
// takes the output buffer's bytes from it before decompressing and gives
// them back when it returns. It tries a cap of four times the compressed
// size first (at least 64 KiB), which covers most batches, and retries with
// four times more while the output is larger, up to the cap above; a retry
// costs a second decompression, where taking the full cap for every batch
// would let a few batches fill the budget. A decompression that finds no
// room neither fails (a producer would take MESSAGE_TOO_LARGE for a batch
// that is not) nor waits for room (the waiting requests may hold the
// budget themselves): a small one (a try of at most 256 KiB, four times a
// compressed size the request frame already counts) runs outside the
// budget at once; a larger one runs outside it one at a time process-wide,
// waiting at most 5 s for its turn, then fails with ErrDecompressBusy
// (REQUEST_TIMED_OUT, retriable), so that a stream of decompression bombs
// neither holds other producers' batches for ever nor adds more than one
// large batch's worth (and four times the small frames') over the budget.
//
// ForEachRecord iterates the records of a stored batch with the same
// decoder and limits, for uses such as ListOffsets by timestamp.
package records
