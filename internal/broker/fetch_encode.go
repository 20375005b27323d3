package broker

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/protocol"
)

// fetchRecords are the record batches of a Fetch response, by topic and
// partition index, not yet read: they are sent from the segment files.
type fetchRecords [][]klog.Records

// rawFetchResponse encodes resp (a Fetch response of version 4–12, the
// versions samsa serves) itself, byte for byte as kmsg encodes it, except
// that each partition's RecordBatches are recs' batches, sent by the
// connection's writer from the files (sendfile) in their places. The
// partitions' RecordBatches fields are ignored. Unknown tags are not
// encoded: samsa sets none.
func rawFetchResponse(resp *kmsg.FetchResponse, recs fetchRecords) *protocol.RawResponse {
	v := resp.Version
	flexible := v >= 12
	dst := make([]byte, 0, 256)
	dst = kbin.AppendInt32(dst, resp.ThrottleMillis) // v1+
	if v >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	var parts []protocol.RawPart
	dst = appendArrayLen(dst, len(resp.Topics), flexible)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		dst = appendString(dst, t.Topic, flexible) // v0–12; v13+ has the id
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LastStableOffset) // v4+
			if v >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			aborted := p.AbortedTransactions // v4+
			if flexible {
				dst = kbin.AppendCompactNullableArrayLen(dst, len(aborted), aborted == nil)
			} else {
				dst = kbin.AppendNullableArrayLen(dst, len(aborted), aborted == nil)
			}
			for _, a := range aborted {
				dst = kbin.AppendInt64(dst, a.ProducerID)
				dst = kbin.AppendInt64(dst, a.FirstOffset)
				if flexible {
					dst = append(dst, 0) // no tags
				}
			}
			if v >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			// RecordBatches: never null (librdkafka rejects a size of
			// -1), the batches from the files.
			var r klog.Records
			if ti < len(recs) && pi < len(recs[ti]) {
				r = recs[ti][pi]
			}
			if flexible {
				dst = kbin.AppendUvarint(dst, 1+uint32(r.Len()))
			} else {
				dst = kbin.AppendInt32(dst, int32(r.Len()))
			}
			if r.Len() > 0 {
				parts = append(parts, protocol.RawPart{At: len(dst), Data: r})
			}
			if flexible {
				dst = appendFetchPartitionTags(dst, p)
			}
		}
		if flexible {
			dst = append(dst, 0) // no topic tags
		}
	}
	if flexible {
		dst = append(dst, 0) // no response tags (Brokers is v16+)
	}
	return &protocol.RawResponse{Response: resp, Body: dst, Parts: parts}
}

// appendFetchPartitionTags appends a v12+ partition's tagged fields: those
// that differ from their defaults, in tag order.
func appendFetchPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	var fields [3][]byte // tags 0, 1, 2; nil when not sent
	var bufs [3][16]byte
	if p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 {
		fields[0] = kbin.AppendInt64(kbin.AppendInt32(bufs[0][:0], p.DivergingEpoch.Epoch), p.DivergingEpoch.EndOffset)
	}
	if p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 {
		fields[1] = kbin.AppendInt32(kbin.AppendInt32(bufs[1][:0], p.CurrentLeader.LeaderID), p.CurrentLeader.LeaderEpoch)
	}
	if p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 {
		fields[2] = kbin.AppendInt32(kbin.AppendInt64(bufs[2][:0], p.SnapshotID.EndOffset), p.SnapshotID.Epoch)
	}
	n := 0
	for _, f := range fields {
		if f != nil {
			n++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	for tag, f := range fields {
		if f == nil {
			continue
		}
		// The tag, the struct's size, the struct and its own (empty)
		// tag section.
		dst = kbin.AppendUvarint(dst, uint32(tag))
		dst = kbin.AppendUvarint(dst, uint32(len(f)+1))
		dst = append(append(dst, f...), 0)
	}
	return dst
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}
