package broker

// DescribeProducers (key 61), version 0 (flexible).
//
// Every producer the leader's log tracks for each partition (idempotent
// and transactional): epoch, last sequence, last timestamp, coordinator
// epoch of its last marker and the first offset of its open transaction
// (-1 if none). With an authorizer a topic needs READ
// (TOPIC_AUTHORIZATION_FAILED); partitions not led here get
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeProducers(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	az := b.authz(req)
	s := b.view()
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		readable := az.topic(kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if !readable {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			lp, code := b.localLeader(s, t.Topic, p)
			rp.ErrorCode = code
			if code == 0 {
				for _, ps := range lp.Log().Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = ps.ProducerID, int32(ps.Epoch), ps.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.LastTimestamp, ps.CoordinatorEpoch, ps.TxnStartOffset
					rp.ActiveProducers = append(rp.ActiveProducers, ap)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reply(resp)
}
