package broker

// FindCoordinator (key 10), versions 0–4 (flexible from v3; v4 batches
// keys). A group's coordinator is the leader of its __consumer_offsets
// partition (group.PartitionFor), a transactional id's the leader of its
// __transaction_state partition (txn.PartitionFor); each topic is created
// on first use. As in Kafka (KafkaApis.getCoordinator), the
// key is not checked (the empty group id is a group, of partition 0), and
// a key type other than group and transaction is INVALID_REQUEST (share
// keys need v6). With an authorizer, a key needs DESCRIBE on its group
// (GROUP_AUTHORIZATION_FAILED) or transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked first.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

func (b *Broker) handleFindCoordinator(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	return protocol.Response{Later: func() kmsg.Response {
		for _, key := range keys {
			nodeID, host, port, code := b.findCoordinator(ctx, req, r.CoordinatorType, key)
			if r.Version < 4 {
				resp.NodeID, resp.Host, resp.Port, resp.ErrorCode = nodeID, host, port, code
				continue
			}
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Host, c.Port, c.ErrorCode = key, nodeID, host, port, code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}}
}

// findCoordinator locates the coordinator of one key.
func (b *Broker) findCoordinator(ctx context.Context, req *protocol.Request, keyType int8, key string) (int32, string, int32, int16) {
	switch keyType {
	case 0:
		if !b.authz(req).group(kmsg.ACLOperationDescribe, key) {
			return -1, "", -1, kerr.GroupAuthorizationFailed.Code
		}
	case 1:
		if !b.authz(req).transactionalID(kmsg.ACLOperationDescribe, key) {
			return -1, "", -1, kerr.TransactionalIDAuthorizationFailed.Code
		}
	default:
		return -1, "", -1, kerr.InvalidRequest.Code
	}
	var leader int32
	if keyType == 1 {
		id, ok, err := b.txnCoordinatorFor(ctx, key)
		if err != nil {
			b.logger.Warn("cannot create "+txn.StateTopic, "err", err)
		}
		if !ok {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code
		}
		leader = id
	} else {
		n, err := b.ensureOffsetsTopic(ctx)
		if err != nil {
			b.logger.Warn("cannot create "+group.OffsetsTopic, "err", err)
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code
		}
		vp, ok := b.view().Partition(group.OffsetsTopic, group.PartitionFor(key, n))
		if !ok || vp.Leader < 0 {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code
		}
		leader = vp.Leader
	}
	s := b.view()
	vb, ok := s.Brokers[leader]
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code
	}
	ep, ok := endpointFor(vb.Broker, req)
	if !ok {
		// Kafka's answer when the coordinator lacks the client's listener.
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code
	}
	return vb.ID, ep.Host, ep.Port, 0
}
