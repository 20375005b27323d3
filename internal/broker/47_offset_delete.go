package broker

// OffsetDelete (key 47), version 0. Offsets of topics the group's members
// subscribe to cannot be deleted (GROUP_SUBSCRIBED_TO_TOPIC). The offsets
// are gone as the request arrives; the answer waits for the tombstones'
// commit. As in Kafka (KafkaApis.handleOffsetDeleteRequest), partitions
// the metadata does not have are answered UNKNOWN_TOPIC_OR_PARTITION and
// the group gets the rest; a group error (GROUP_ID_NOT_FOUND, ...) is the
// whole answer (OffsetDeleteResponse.Builder.merge). With an authorizer,
// the group needs DELETE (else GROUP_AUTHORIZATION_FAILED is the answer)
// and each topic READ (else TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	s := b.view()
	known := *r
	known.Topics = nil
	az := b.authz(req)
	if !az.group(kmsg.ACLOperationDelete, r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply(resp)
	}
	var unknown []kmsg.OffsetDeleteResponseTopic
	for _, t := range r.Topics {
		kt := t
		kt.Partitions = nil
		var ut *kmsg.OffsetDeleteResponseTopic
		code := int16(0)
		if !az.topic(kmsg.ACLOperationRead, t.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			if code == 0 && knownPartition(s, t.Topic, p.Partition) {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			code := code
			if code == 0 {
				code = kerr.UnknownTopicOrPartition.Code
			}
			if ut == nil {
				unknown = append(unknown, kmsg.NewOffsetDeleteResponseTopic())
				ut = &unknown[len(unknown)-1]
				ut.Topic = t.Topic
			}
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			ut.Partitions = append(ut.Partitions, rp)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	wait := b.groups.StartDeleteOffsets(&known)
	return protocol.Response{Later: func() kmsg.Response {
		resp := wait(ctx)
		if resp.ErrorCode == 0 && len(unknown) > 0 {
			resp.Topics = append(unknown, resp.Topics...)
		}
		return resp
	}}
}
