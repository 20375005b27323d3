package broker

// OffsetCommit (key 8), versions 2–8 (flexible from v8). Offsets are
// written to __consumer_offsets and acknowledged once committed there
// (acks=all); v6+ stores the leader epoch with the offset (KIP-320). The
// commit takes effect as it arrives (a pipelined OffsetFetch or LeaveGroup
// sees it); only the answer waits for the write. As in Kafka
// (KafkaApis.handleOffsetCommitRequest), partitions the metadata does not
// have are answered UNKNOWN_TOPIC_OR_PARTITION before the group is
// consulted, and the group is not consulted at all if no partition is
// left. Before that, with an authorizer: every partition gets
// GROUP_AUTHORIZATION_FAILED without READ on the group, and those of a
// topic without READ on it TOPIC_AUTHORIZATION_FAILED.

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
	az := b.authz(req)
	groupOK := az.group(kmsg.ACLOperationRead, r.Group)
	for _, t := range r.Topics {
		kt := t
		kt.Partitions = nil
		var refused *kmsg.OffsetCommitResponseTopic
		topicCode := int16(0)
		switch {
		case !groupOK:
			topicCode = kerr.GroupAuthorizationFailed.Code
		case !az.topic(kmsg.ACLOperationRead, t.Topic):
			topicCode = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			code := topicCode
			if code == 0 && !knownPartition(s, t.Topic, p.Partition) {
				code = kerr.UnknownTopicOrPartition.Code
			}
			if code == 0 {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			if refused == nil {
				resp.Topics = append(resp.Topics, kmsg.NewOffsetCommitResponseTopic())
				refused = &resp.Topics[len(resp.Topics)-1]
				refused.Topic = t.Topic
			}
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			refused.Partitions = append(refused.Partitions, rp)
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
