package broker

// DeleteRecords (key 21), versions 0-2 (v2 flexible):
// kafka-delete-records.sh, Kafka Streams' repartition-topic purging, the
// admin clients' DeleteRecords.
//
// For each partition led here the leader moves its log start offset up to
// the requested offset (-1: the high watermark), deleting the segments
// wholly below it; then the answer waits, at most TimeoutMillis, until
// the partition's low watermark reaches that offset: the smallest log
// start offset among its live replicas, which followers report in their
// fetches and raise to the leader's as they fetch (replica.AppendFromLeader,
// up to their own high watermark). Each partition answers its low
// watermark, or REQUEST_TIMED_OUT if it did not get there in time.
//
// As Kafka: an offset above the high watermark, or negative but -1, is
// OFFSET_OUT_OF_RANGE; an internal topic INVALID_TOPIC_EXCEPTION; a topic
// whose cleanup.policy lacks delete (compacted only) POLICY_VIOLATION;
// without DELETE on the topic TOPIC_AUTHORIZATION_FAILED; a partition not
// led here NOT_LEADER_OR_FOLLOWER.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/replica"
)

func (b *Broker) handleDeleteRecords(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	az := b.authz(req)
	s := b.view()
	type deleting struct {
		lp     *localPartition
		rp     *kmsg.DeleteRecordsResponseTopicPartition
		offset int64
	}
	var waits []deleting
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(r.Topics))
	for ti, t := range r.Topics {
		rt := &resp.Topics[ti]
		*rt = kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(t.Partitions))
		deletable := az.topic(kmsg.ACLOperationDelete, t.Topic)
		for pi, p := range t.Partitions {
			rp := &rt.Partitions[pi]
			*rp = kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			code := int16(0)
			if !deletable {
				code = kerr.TopicAuthorizationFailed.Code
			}
			if code == 0 {
				code = errorCode(guardInternalTopic(t.Topic, "delete records of"))
			}
			var lp *localPartition
			if code == 0 {
				lp, code = b.localLeader(s, t.Topic, p.Partition)
			}
			if code == 0 && !lp.settings.Load().deleteOld {
				code = kerr.PolicyViolation.Code
			}
			if code == 0 && !b.sessionLive() {
				// Past its session's deadline it may have been deposed:
				// its followers must not delete on its word.
				code = kerr.NotLeaderForPartition.Code
			}
			var offset int64
			if code == 0 {
				// In the epoch localLeader saw, under the replica's
				// lock: a leader deposed meanwhile deletes nothing.
				var err error
				if offset, err = lp.DeleteRecords(lp.LeaderEpoch(), p.Offset); err != nil {
					code = errorCode(err)
				}
			}
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			waits = append(waits, deleting{lp, rp, offset})
		}
	}
	if len(waits) == 0 {
		return reply(resp)
	}
	live := func(id int32) bool { _, ok := b.view().Brokers[id]; return ok }
	return protocol.Response{Later: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(max(r.TimeoutMillis, 0))*time.Millisecond)
		defer cancel()
		for _, d := range waits {
			low, err := waitLowWatermark(wctx, d.lp, d.offset, live)
			switch {
			case err == nil:
				d.rp.LowWatermark = low
			case wctx.Err() != nil:
				d.rp.ErrorCode = kerr.RequestTimedOut.Code
			default:
				d.rp.ErrorCode = errorCode(err)
			}
		}
		return resp
	}}
}

// waitLowWatermark waits until lp's low watermark reaches offset and
// returns it; it fails when ctx ends or lp stops leading.
func waitLowWatermark(ctx context.Context, lp *localPartition, offset int64, live func(int32) bool) (int64, error) {
	w := replica.NewWaiter()
	lp.AddWaiter(w)
	defer lp.RemoveWaiter(w)
	// Brokers leaving the cluster change live without waking w: look
	// again now and then.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		low, err := lp.LowWatermark(live)
		if err != nil || low >= offset {
			return low, err
		}
		select {
		case <-ctx.Done():
			return low, ctx.Err()
		case <-w.C:
		case <-tick.C:
		}
	}
}
