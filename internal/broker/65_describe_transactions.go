package broker

// DescribeTransactions (key 65), version 0 (flexible).
//
// The state of each transactional id coordinated here (internal/txn:
// Describe): NOT_COORDINATOR for ids of partitions led elsewhere,
// TRANSACTIONAL_ID_NOT_FOUND for unknown ones, INVALID_REQUEST for the
// empty id. With an authorizer an id needs DESCRIBE
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and the transaction's topics
// are listed only where the principal may DESCRIBE them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeTransactions(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	az := b.authz(req)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		switch {
		case !az.transactionalID(kmsg.ACLOperationDescribe, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case id == "":
			st.ErrorCode = kerr.InvalidRequest.Code
		default:
			d := b.txns.Describe(id)
			st.ErrorCode = d.Code
			if d.Code == 0 {
				st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
				st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
				for _, tp := range d.Partitions {
					if !az.topic(kmsg.ACLOperationDescribe, tp.Topic) {
						continue
					}
					if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
						t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
						t.Topic = tp.Topic
						st.Topics = append(st.Topics, t)
					}
					st.Topics[len(st.Topics)-1].Partitions = append(st.Topics[len(st.Topics)-1].Partitions, tp.Partition)
				}
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return reply(resp)
}
