package broker

// ListTransactions (key 66), versions 0–1 (flexible).
//
// The transactional ids coordinated here (admins ask every broker),
// filtered by state names (unknown names are listed in
// UnknownStateFilters and match nothing), producer ids and, from v1, how
// long ago the transaction started (internal/txn: List).
// COORDINATOR_LOAD_IN_PROGRESS while a partition led here is loading.
// With an authorizer only ids the principal may DESCRIBE are listed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

func (b *Broker) handleListTransactions(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	az := b.authz(req)
	var states []txn.State
	unknown := false
	for _, name := range r.StateFilters {
		st, err := kmsg.ParseTransactionState(name)
		if err != nil || st == kmsg.TransactionStateDead || st.String() != name {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			unknown = true
			continue
		}
		states = append(states, txn.State(st))
	}
	if unknown && len(states) == 0 {
		return reply(resp) // only unknown states: nothing matches
	}
	duration := int64(-1)
	if r.Version >= 1 {
		duration = r.DurationFilterMillis
	}
	listed, loading := b.txns.List(states, r.ProducerIDFilters, duration)
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return reply(resp)
	}
	for _, l := range listed {
		if !az.transactionalID(kmsg.ACLOperationDescribe, l.ID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.ID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return reply(resp)
}
