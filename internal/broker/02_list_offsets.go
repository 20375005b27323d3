package broker

// ListOffsets (key 2), versions 1–7 (flexible from v6).
//
// Timestamp -2: the log start offset; -1: the end a consumer can read, the
// high watermark, or for IsolationLevel 1 (read_committed, v2+) the last
// stable offset; -3 (v7, KIP-734): the offset and timestamp of the record
// with the largest timestamp; otherwise the first record whose timestamp is
// at least the one asked for. Both searches find only offsets below that
// end (offset -1 when there is none). v4+ checks CurrentLeaderEpoch and
// returns the leader epoch of the offset found. A new leader answers
// OFFSET_NOT_AVAILABLE (retriable) for everything but -2 until it has
// committed an entry of its own epoch: before that its high watermark may
// lag the previous leader's, and clients must never see it go back.
// With an authorizer, a topic the principal may not DESCRIBE gets
// TOPIC_AUTHORIZATION_FAILED on each partition.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/records"
)

func (b *Broker) handleListOffsets(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	s := b.view()
	az := b.authz(req)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		describable := az.topic(kmsg.ACLOperationDescribe, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			if !describable {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			lp, code := b.localLeader(s, t.Topic, p.Partition)
			rp.ErrorCode = code
			if code == 0 {
				err := lp.CheckLeaderEpoch(p.CurrentLeaderEpoch)
				if err == nil && p.Timestamp != -2 && !lp.HighWatermarkKnown() {
					err = errOffsetNotAvailable
				}
				if err == nil {
					rp.Offset, rp.Timestamp, err = listOffset(lp, p.Timestamp, r.IsolationLevel == 1)
				}
				rp.ErrorCode = errorCode(err)
				if rp.Offset >= 0 {
					rp.LeaderEpoch = epochForOffset(lp.Log().Epochs(), rp.Offset)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reply(resp)
}

// errOffsetNotAvailable: the high watermark is not yet known.
var errOffsetNotAvailable = errors.New("broker: new leader has not committed in its epoch yet")

// listOffset resolves one ListOffsets timestamp to (offset, timestamp),
// for a read_committed consumer if committed.
func listOffset(lp *localPartition, ts int64, committed bool) (int64, int64, error) {
	l := lp.Log()
	// hw: the end this consumer can read.
	hw := lp.HighWatermark()
	if committed {
		hw = lp.LastStableOffset()
	}
	switch ts {
	case -2:
		return l.StartOffset(), -1, nil
	case -1:
		return hw, -1, nil
	case -3:
		maxTs, off := l.MaxTimestamp()
		if off < 0 || off >= hw {
			return -1, -1, nil
		}
		return off, maxTs, nil
	}
	if ts < 0 {
		return -1, -1, errInvalidRequest
	}
	batch, ok, err := l.BatchAtTimestamp(ts)
	if err != nil || !ok {
		return -1, -1, err
	}
	h, err := klog.ParseBatchHeader(batch)
	if err != nil {
		return -1, -1, err
	}
	if h.Attributes&klog.AttrTimestampType != 0 {
		// LogAppendTime: every record carries the batch's max timestamp.
		if h.BaseOffset >= hw {
			return -1, -1, nil
		}
		return h.BaseOffset, h.MaxTimestamp, nil
	}
	offset, found := int64(-1), int64(-1)
	err = records.ForEachRecord(batch, &h, records.DefaultMaxDecompressedBytes, func(rec records.Record) bool {
		if t := h.BaseTimestamp + rec.TimestampDelta; t >= ts {
			offset, found = h.BaseOffset+int64(rec.OffsetDelta), t
			return false
		}
		return true
	})
	if err != nil || offset < 0 || offset >= hw {
		return -1, -1, err
	}
	return offset, found, nil
}

// epochForOffset returns the leader epoch in which offset was written, from
// the log's epoch entries, or -1.
func epochForOffset(entries []klog.EpochEntry, offset int64) int32 {
	epoch := int32(-1)
	for _, e := range entries {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}
