package broker

// OffsetForLeaderEpoch (key 23), versions 2–4 (flexible from v4).
//
// For each partition led here: check CurrentLeaderEpoch (FENCED_LEADER_EPOCH
// / UNKNOWN_LEADER_EPOCH), then answer the largest epoch at most the one
// asked for and the end offset of that epoch (the start of the next epoch,
// or the LEO for the current one); (-1, -1) when the epoch predates the
// log. Consumers use this to detect truncation (KIP-320); followers to find
// where their log diverges (KIP-101/279). With an authorizer, as Kafka,
// whatever the ReplicaID: CLUSTER_ACTION on the cluster allows every
// topic, else each topic needs DESCRIBE (else TOPIC_AUTHORIZATION_FAILED
// on its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	s := b.view()
	az := b.authz(req)
	clusterAction := az.cluster(kmsg.ACLOperationClusterAction)
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		describable := clusterAction || az.topic(kmsg.ACLOperationDescribe, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			if !describable {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			lp, code := b.localLeader(s, t.Topic, p.Partition)
			rp.ErrorCode = code
			if code == 0 {
				if err := lp.CheckLeaderEpoch(p.CurrentLeaderEpoch); err != nil {
					rp.ErrorCode = errorCode(err)
				} else {
					rp.LeaderEpoch, rp.EndOffset = lp.Log().EndOffsetForEpoch(p.LeaderEpoch)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reply(resp)
}
