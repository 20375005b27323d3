package broker

// AddOffsetsToTxn (key 25), versions 0–4 (flexible from v3).
//
// The group's __consumer_offsets partition joins the producer's
// transaction (its offsets commit with it; TxnOffsetCommit follows), at
// the id's coordinator (NOT_COORDINATOR elsewhere). The principal needs
// WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and READ on the group (GROUP_AUTHORIZATION_FAILED). PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before v2.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	az := b.authz(req)
	switch {
	case !az.transactionalID(kmsg.ACLOperationWrite, r.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return reply(resp)
	case !az.group(kmsg.ACLOperationRead, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		n, err := b.ensureOffsetsTopic(ctx)
		if err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(r.Group, n)}
		code := b.txns.AddPartitions(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp}, false)
		resp.ErrorCode = fencedCode(code, r.Version, 2)
		return resp
	}}
}
