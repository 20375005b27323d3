// Package log is samsa's on-disk log of one partition: a segmented,
// append-only sequence of Kafka v2 record batches, stored byte for byte as
// producers and leaders sent them, with the indexes, checkpoints and
// producer state beside them. See docs/storage.md for the durability
// guarantees; this comment is the format reference.
//
// # Files
//
// A partition directory holds:
//
//	%020d.log                  a segment: batches whose offsets start at the
//	                           base offset in the name
//	%020d.index                its sparse offset index
//	%020d.timeindex            its time index
//	%020d.txnindex             the aborted transactions whose markers
//	                           the segment holds (only if it has any)
//	%020d.snapshot             producer state as of that offset
//	leader-epoch-checkpoint    the leader epoch cache
//	recovery-point             offset below which everything is durable
//	log-start-offset           the log start offset
//	*.tmp                      a checkpoint being written (deleted on open)
//	%020d.{log,index,timeindex}.cleaned
//	                           a segment being rewritten by Compact
//	%020d.log.swap             a rewritten segment, committed, about to
//	                           replace %020d.log
//
// Segment (.log): Kafka v2 record batches back to back, nothing else. Only
// baseOffset and partitionLeaderEpoch are patched on a leader append; both
// lie outside the CRC-32C (Castagnoli) that covers attributes..end, so no
// batch is re-encoded (see batch.go for the header layout). Each segment
// starts at its base offset and each batch where the previous one ended:
// samsa logs have no offset gaps, even compacted (see Compaction).
//
// Offset index (.index): 8-byte big-endian entries (base offset of a batch
// minus the segment's base offset: uint32, position of the batch in the
// segment: uint32), both strictly increasing. An entry is added for the
// first batch that starts index.interval.bytes or more after the previous
// entry (or the segment start); a lookup finds the last entry at or below
// an offset and scans forward from its position.
//
// Time index (.timeindex): 12-byte big-endian entries (timestamp: int64,
// relative offset: uint32). An entry (T, O) says that no batch up to and
// including the one based at O has a timestamp above T, and that the batch
// at O has T. Entries are considered at the same points as offset index
// entries and added only when the largest timestamp grew, so timestamps
// strictly increase; when a segment stops being the active one (roll,
// close) a final entry records its largest timestamp.
//
// Both indexes are also held in memory (up to about 0.6% of the log's size
// with the default index.interval.bytes); the files exist so that open does not
// scan every segment.
//
// Checkpoints are text, in Kafka's style: a version line ("0"), then for
// recovery-point and log-start-offset one offset, for
// leader-epoch-checkpoint a count line and "epoch startOffset" lines. They
// are replaced atomically: write a temporary file, fsync, rename, fsync the
// directory.
//
// Producer snapshot (%020d.snapshot, named by the offset it describes the
// state before): "SPS2", CRC-32C of the rest (uint32), producer count
// (uint32), then per producer, sorted by id: producerId int64, epoch int16,
// coordinatorEpoch int32, txnFirst int64 (first offset of its open
// transaction, -1 if none), lastTimestamp int64, batch count uint8, and per
// remembered batch (at most five) firstSeq int32, lastSeq int32,
// firstOffset int64, lastOffset int64. Big-endian. Written at every roll
// (as of the new segment's base offset) and at close. "SPS1" snapshots
// (without coordinatorEpoch and txnFirst) are still read.
//
// Transaction index (.txnindex): 32-byte big-endian entries, one per abort
// marker in the segment, in offset order: producerId int64, firstOffset
// int64 (the transaction's first batch), lastOffset int64 (the marker),
// lastStableOffset int64 (the first offset of the transactions still open
// then, or lastOffset+1). Appended like the other indexes and synced with
// them; recovery trusts the entries below the producer snapshot it starts
// from and rebuilds the others by replaying the batches, the whole log if
// an index fails its checks. See docs/transactions.md.
//
// # Appending and rolling
//
// Append validates every batch (header, magic, CRC, record count), checks
// idempotent producer sequences and transaction state (txn.go), patches
// offsets and the leader epoch, and
// writes the whole request with one write to the active segment, then
// index entries. A new active segment is rolled, at the LEO, before an
// append that would make the active one exceed segment.bytes, when its
// first batch is older than segment.ms, when either index is full
// (segment.index.bytes), or when relative offsets would overflow.
//
// # Durability and flushing
//
// Appends go to the page cache. Flush runs a flush round: fdatasync of
// every file written since the last round, a directory fsync if files were
// created or removed, then the pending checkpoints (producer snapshots, the
// leader epoch cache, the log start offset, and after a roll the recovery
// point). Rounds run one at a time without the append lock; concurrent
// Flush callers share them (group commit). Close writes recovery point =
// LEO, so the next Open scans nothing.
//
// # Recovery
//
// Open loads the checkpoints and the segments. Segments wholly below the
// recovery point are trusted after cheap checks: their index files must
// have whole, strictly increasing entries pointing inside the segment, and
// the batches after the last offset index entry are scanned and verified
// to find the segment's end. From the segment holding the recovery point to
// the end, every batch is re-validated — length within the file, magic 2,
// CRC-32C, base offset exactly where the previous batch ended, relative
// offsets that fit — and the log is cut at the first byte that fails (a
// torn or zeroed tail, garbage); the indexes of those segments are rebuilt
// and later segments deleted. An index that fails its checks is rebuilt
// from its segment. The leader epoch cache keeps the checkpointed entries
// below the first verified segment and is rebuilt above it from the
// batches' partitionLeaderEpoch; an entry for an epoch assigned at the LEO
// with no batch yet survives. Producer state comes from the latest readable
// snapshot at or below the recovery point plus a scan of the batch headers
// from there to the LEO. A log that needed recovery is flushed and
// checkpointed before Open returns.
//
// A flipped bit in a batch's partitionLeaderEpoch cannot be detected (the
// field is outside the CRC, as in Kafka), and damage below the recovery
// point is found only where a segment's tail or indexes are checked.
//
// # Compaction
//
// Compact (cleanup.policy=compact; the broker's housekeeping calls it) is a
// synchronous, simplified version of Kafka's log cleaner. It cleans the
// closed segments whose batches all lie below the upper bound the caller
// passes (the last stable offset), never the active segment. Records of
// aborted transactions (per the transaction indexes) are removed first and
// never supersede anything; then it builds a map
// key -> offset of the key's latest record over those segments, then
// rewrites each of them, one at a time, keeping a keyed record only if it
// is the latest of its key in that range. Records above the bound are not
// consulted, so a record superseded only there stays until a later run.
// Records without a key and control batches are kept whole (control
// records' keys do not enter the map).
//
// Compressed batches are read through CompactOptions.Decompress, since the
// log has no decompressors (internal/records, which has them, depends on
// this package; the broker passes records.DecompressRecords). Their keys
// enter the map like any other. A compressed batch that loses nothing is
// kept byte for byte; one that loses some records is rewritten
// uncompressed (the codec bits of its attributes cleared, the rules below
// otherwise), unless that would grow its segment past the larger of
// segment.bytes and the segment's current size: it is then kept whole,
// compressed, stale records included. A batch whose records cannot be
// read (Decompress fails, malformed records, or a compressed batch with
// no Decompress) is kept whole and its keys stay out of the map, so its
// records never supersede anything: stale records may stay, but a latest
// one is never dropped. Such batches are counted in
// CompactStats.UndecodableBatches (those without Decompress are not).
//
// Offsets never change. A batch that loses records keeps its base offset,
// last offset delta, timestamps, producer fields, leader epoch and
// attributes (but the codec); its records keep their offset deltas (the
// batch becomes sparse), and its length, record count and CRC-32C are
// recomputed. A batch that loses all
// its records is kept as an empty batch (its header, record count 0) if it
// is an idempotent producer's, so producer state can still be rebuilt from
// headers; runs of other emptied batches with the same leader epoch become
// one empty "filler" batch spanning their offsets (producer id -1, the
// run's base and largest timestamps). Segments therefore still start at
// their base offset with each batch where the previous one ended, recovery
// checks them unchanged, and a Read of a removed offset returns the batch
// spanning it, whose next retained record comes after it. Consumers skip
// empty batches, as with Kafka's.
//
// Fillers are the only batches whose boundaries differ from those of the
// appended batches, so the only ones that can straddle a follower's LEO.
// AppendReplicated accepts a first batch that does if it is a filler,
// trimmed to start at the LEO; a follower that stopped inside a merged
// range thus catches up (its records below the LEO that the filler
// covered are superseded; its own compaction removes them).
//
// Tombstones (keyed records with a null value) that are the latest of
// their key are kept until the record's timestamp (the batch's max
// timestamp for LogAppendTime) is more than delete.retention.ms old by the
// log's clock, then removed; tombstones without a timestamp are kept.
// Superseded tombstones go at once, like any superseded record. (Kafka
// times this from when the tombstone's segment was first cleaned; the
// record timestamp needs no extra state.) An expired tombstone is kept
// nonetheless when an older record of its key may stay behind it, which
// removing the tombstone would bring back: in that run, after any batch
// whose records could not be read, and for a key with a stale record in a
// compressed batch kept whole.
//
// Compact holds only compactMu while it reads segments (each read holds
// segMu for reading and checks that the segment is still there) and writes
// the new ones; flushes, truncation, retention and epoch changes go on meanwhile.
// A truncation into the compacted range stops the run
// (CompactStats.Interrupted), a segment deleted by retention is skipped,
// and Close or Delete stop it (ErrClosed) and wait for it.
//
// The swap of one segment: write the new segment as
// %020d.log.cleaned with its indexes as .index.cleaned and .timeindex.cleaned,
// fsync them; then under flushMu, once sure that no truncation, deletion
// or Close came in between, rename the .log.cleaned to .log.swap and fsync
// the directory (the commit point); rename the .cleaned indexes and then the .log.swap
// over the segment's files, fsync the directory; finally, holding segMu and
// mu, put the new segment in place of the old one and close the old files.
// Open finishes an interrupted swap before anything else: a .log.swap
// replaces its segment's .log, .cleaned files are deleted, and the index
// files of every segment with such a leftover are deleted too (they may
// belong to the other version of the segment; recovery rebuilds them). A
// crash thus leaves either the old or the new segment, never a mix.
// Adjacent small segments are not merged yet.
//
// # Reading
//
// Slice returns the batches a fetch asks for as ranges of the segment
// files (Records), reading only their headers; the fetch response sends
// them from the files with sendfile (Records.WriteTo), so records are
// never copied into memory on the read path. Read is Slice followed by a
// copy (Records.AppendTo). A range sent after its segment was cut (any
// truncation of it) or closed (retention, compaction, Close) sends nothing
// more and fails with ErrRecordsGone; see docs/storage.md.
//
// # Concurrency
//
// See Log for the four locks (compactMu, flushMu, segMu, mu) and what each
// guards. In short: appends hold only mu and never wait for an fsync;
// reads hold segMu for reading and mu only to find where to start; flush
// rounds, truncation, retention, compacted-segment swaps and Close
// serialize on flushMu.
package log
