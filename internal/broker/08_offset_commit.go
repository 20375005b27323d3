package broker

// OffsetCommit (key 8), versions 2–8 (flexible from v8). Offsets are
// written to __consumer_offsets and acknowledged once committed there
// (acks=all); v6+ stores the leader epoch with the offset (KIP-320). The
// commit takes effect as it arrives (a pipelined OffsetFetch or LeaveGroup
// sees it); only the answer waits for the write. As in Kafka
// (KafkaApis.handleOffsetCommitRequest), partitions the metadata does not
// have are answered UNKNOWN_TOPIC_OR_PARTITION before the group is
// consulted, and the group is not consulted at all if no partition is
// left.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetCommit(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	s := b.view()
	known := *r
	known.Topics = nil
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range r.Topics {
		kt := t
		kt.Partitions = nil
		var unknown *kmsg.OffsetCommitResponseTopic
		for _, p := range t.Partitions {
			if knownPartition(s, t.Topic, p.Partition) {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			if unknown == nil {
				resp.Topics = append(resp.Topics, kmsg.NewOffsetCommitResponseTopic())
				unknown = &resp.Topics[len(resp.Topics)-1]
				unknown.Topic = t.Topic
			}
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
			unknown.Partitions = append(unknown.Partitions, rp)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	if len(known.Topics) == 0 {
		return reply(resp)
	}
	wait := b.groups.StartCommitOffsets(&known)
	return protocol.Response{Later: func() kmsg.Response {
		kr := wait(ctx)
		if len(resp.Topics) == 0 {
			return kr
		}
		// Merged by topic, as Kafka's OffsetCommitResponse.Builder.merge.
		index := make(map[string]int, len(resp.Topics))
		for i, t := range resp.Topics {
			index[t.Topic] = i
		}
		for _, t := range kr.Topics {
			i, ok := index[t.Topic]
			if !ok {
				resp.Topics = append(resp.Topics, t)
				continue
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, t.Partitions...)
		}
		resp.ThrottleMillis = kr.ThrottleMillis
		return resp
	}}
}
