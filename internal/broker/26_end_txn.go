package broker

// EndTxn (key 26), versions 0–4 (flexible from v3).
//
// Commits or aborts the producer's transaction at the id's coordinator
// (internal/txn: EndTxn; NOT_COORDINATOR elsewhere): answered once the
// PrepareCommit or PrepareAbort is committed to __transaction_state; the
// markers follow. The principal needs WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before v2. Versions 5+ (transactions v2, an
// epoch bump at every end) are not advertised yet.

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
		resp.ErrorCode = fencedCode(b.txns.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit), r.Version, 2)
		return resp
	}}
}
