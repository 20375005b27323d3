package records

import (
	"encoding/binary"
	"hash/crc32"

	klog "github.com/samsa-io/samsa/internal/log"
)

// KV is one record to build: a key and a value, nil for null (a nil value
// is a tombstone on a compacted topic).
type KV struct {
	Key, Value []byte
}

// castagnoli is the CRC-32C table of the batch checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Build returns one uncompressed v2 record batch holding recs, all with
// timestamp ts (milliseconds), no producer id and no headers, at base
// offset 0: what a broker writes for itself (the group coordinator's
// records), for Partition.AppendAsLeader to place. recs must not be empty.
func Build(recs []KV, ts int64) []byte { return buildBatch(recs, ts, -1, -1, 0) }

// BuildTxn is Build for records written in producer pid's transaction at
// epoch (the group coordinator's transactional offset commits): the
// transactional attribute and the producer fields set, no sequence.
func BuildTxn(recs []KV, ts int64, pid int64, epoch int16) []byte {
	return buildBatch(recs, ts, pid, epoch, klog.AttrTransactional)
}

func buildBatch(recs []KV, ts int64, pid int64, epoch int16, attrs int16) []byte {
	b := make([]byte, klog.BatchHeaderSize, klog.BatchHeaderSize+len(recs)*16)
	for i, r := range recs {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = appendVarBytes(body, r.Key)
		body = appendVarBytes(body, r.Value)
		body = binary.AppendVarint(body, 0) // headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	// Header: baseOffset, batchLength, partitionLeaderEpoch (set on
	// append), magic, crc, attributes, lastOffsetDelta, baseTimestamp,
	// maxTimestamp, producerId, producerEpoch, baseSequence, recordCount.
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-klog.LogOverhead))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}
