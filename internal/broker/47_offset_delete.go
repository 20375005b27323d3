package broker

// OffsetDelete (key 47), version 0. Offsets of topics the group's members
// subscribe to cannot be deleted (GROUP_SUBSCRIBED_TO_TOPIC). The offsets
// are gone as the request arrives; the answer waits for the tombstones'
// commit. As in Kafka (KafkaApis.handleOffsetDeleteRequest), partitions
// the metadata does not have are answered UNKNOWN_TOPIC_OR_PARTITION and
// the group gets the rest; a group error (GROUP_ID_NOT_FOUND, ...) is the
// whole answer (OffsetDeleteResponse.Builder.merge).

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
	var unknown []kmsg.OffsetDeleteResponseTopic
	for _, t := range r.Topics {
		kt := t
		kt.Partitions = nil
		var ut *kmsg.OffsetDeleteResponseTopic
		for _, p := range t.Partitions {
			if knownPartition(s, t.Topic, p.Partition) {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			if ut == nil {
				unknown = append(unknown, kmsg.NewOffsetDeleteResponseTopic())
				ut = &unknown[len(unknown)-1]
				ut.Topic = t.Topic
			}
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
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
