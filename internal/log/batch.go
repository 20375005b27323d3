package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Kafka v2 record batch header layout (all integers big-endian):
//
//	offset  size  field
//	0       8     baseOffset            patched by the leader on append
//	8       4     batchLength           bytes after this field
//	12      4     partitionLeaderEpoch  patched by the leader on append
//	16      1     magic                 must be 2
//	17      4     crc                   CRC-32C of bytes 21..end
//	21      2     attributes
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61            records
//
// baseOffset and partitionLeaderEpoch lie outside the CRC, which is why the
// broker can assign offsets without re-encoding or re-checksumming a batch.
const (
	// BatchHeaderSize is the size of a v2 batch header, records excluded.
	BatchHeaderSize = 61
	// LogOverhead is the size of the baseOffset and batchLength fields that
	// precede every batch's batchLength bytes.
	LogOverhead = 12

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// Attribute bits.
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // 1 = LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

// Errors returned when parsing a batch header.
var (
	ErrShortBatch   = errors.New("log: batch shorter than its header")
	ErrBadLength    = errors.New("log: batch length field out of range")
	ErrBadMagic     = errors.New("log: unsupported batch magic")
	ErrBadCRC       = errors.New("log: batch CRC mismatch")
	ErrBadOffsets   = errors.New("log: batch offsets inconsistent")
	ErrBatchTooLong = errors.New("log: batch larger than the buffer holding it")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded fixed header of one v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the batch's total size on the wire and on disk.
func (h *BatchHeader) Size() int { return LogOverhead + int(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h *BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset following the batch.
func (h *BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression returns the codec bits of the attributes (0 none, 1 gzip,
// 2 snappy, 3 lz4, 4 zstd).
func (h *BatchHeader) Compression() int { return int(h.Attributes & AttrCompressionMask) }

// IsControl reports whether the batch is a control batch (transaction markers).
func (h *BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// IsTransactional reports whether the batch belongs to a transaction.
func (h *BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// LastSequence is the sequence number of the batch's last record, wrapping
// at math.MaxInt32 as Kafka does.
func (h *BatchHeader) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return h.BaseSequence
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 1<<31-1 {
		s -= 1 << 31
	}
	return int32(s)
}

// ParseBatchHeader decodes the header of the batch at the start of b. It
// checks that b holds the header, that the length field is consistent with the
// header size and with len(b) (ErrBatchTooLong when the batch continues past
// b), and that magic is 2. It does not verify the CRC; see VerifyCRC.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) < BatchHeaderSize {
		if len(b) >= offMagic+1 && b[offMagic] != 2 {
			return h, fmt.Errorf("%w: %d", ErrBadMagic, int8(b[offMagic]))
		}
		return h, ErrShortBatch
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.Length = int32(binary.BigEndian.Uint32(b[offLength:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: %d", ErrBadMagic, h.Magic)
	}
	if h.Length < BatchHeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: %d", ErrBadLength, h.Length)
	}
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	if h.LastOffsetDelta < 0 || h.BaseOffset < 0 || h.BaseOffset > 1<<62 {
		return h, fmt.Errorf("%w: base %d last delta %d", ErrBadOffsets, h.BaseOffset, h.LastOffsetDelta)
	}
	if int64(len(b)) < int64(LogOverhead)+int64(h.Length) {
		return h, ErrBatchTooLong
	}
	return h, nil
}

// VerifyCRC checks the CRC-32C of the batch at the start of b, whose header
// h was parsed from b.
func VerifyCRC(b []byte, h *BatchHeader) error {
	if got := crc32.Checksum(b[offAttributes:h.Size()], castagnoli); got != h.CRC {
		return fmt.Errorf("%w: stored %08x computed %08x", ErrBadCRC, h.CRC, got)
	}
	return nil
}

// SetBaseOffset patches the base offset of the batch at the start of b.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLogAppendTime stamps the batch at the start of b, which holds it
// whole, with the broker's append time (a LogAppendTime topic): the
// timestamp type attribute is set and the max timestamp becomes ts, as
// Kafka's LogValidator does; the records keep their own timestamps, which
// consumers ignore for such a batch. The CRC is computed again.
func SetLogAppendTime(b []byte, ts int64) {
	size := LogOverhead + int(binary.BigEndian.Uint32(b[offLength:]))
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:size], castagnoli))
}

// SetPartitionLeaderEpoch patches the partition leader epoch of the batch at
// the start of b.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}
