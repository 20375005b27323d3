package broker

// EndTxn (key 26), versions 0–5 (flexible from v3).
//
// Commits or aborts the producer's transaction at the id's coordinator
// (internal/txn: EndTxn; NOT_COORDINATOR elsewhere): answered once the
// PrepareCommit or PrepareAbort is committed to __transaction_state; the
// markers follow. The principal needs WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before v2. v5 is transactions v2 (KIP-890 part
// 2): every end bumps the epoch, and the answer carries the producer id
// and epoch to go on with.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleEndTxn(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	if !b.authz(req).transactionalID(kmsg.ACLOperationWrite, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		res := b.txns.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, r.Version >= 5)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = fencedCode(res.Code, r.Version, 2), res.ProducerID, res.Epoch
		return resp
	}}
}
