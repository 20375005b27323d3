package broker

// InitProducerId (key 22), versions 0–4 (flexible from v2).
//
// Without a transactional id (an idempotent producer), each call hands out
// a fresh producer id with epoch 0 from a block reserved in etcd, so ids
// are unique cluster-wide and across restarts. A v3+ request carrying an
// existing id and epoch (KIP-360 epoch bump after an error) also gets a
// fresh id, which gives the producer a clean sequence space just as an
// epoch bump would. With an authorizer, an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.
//
// With a transactional id, the transaction coordinator of the id answers
// (internal/txn: InitProducerID), this broker only if it leads the id's
// __transaction_state partition (else NOT_COORDINATOR); the principal
// needs WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_
// FAILED). PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH before v4
// (KIP-588), as Kafka does.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleInitProducerID(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case r.TransactionalID != nil && *r.TransactionalID == "",
		(r.ProducerID == -1) != (r.ProducerEpoch == -1):
		// As Kafka: TransactionCoordinator.handleInitProducerId refuses
		// an empty transactional id, KafkaApis.handleInitProducerIdRequest
		// a producer id without its epoch or an epoch without its id.
		resp.ErrorCode = kerr.InvalidRequest.Code
		return reply(resp)
	case r.TransactionalID != nil:
		if !b.authz(req).transactionalID(kmsg.ACLOperationWrite, *r.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return reply(resp)
		}
		return protocol.Response{Later: func() kmsg.Response {
			res := b.txns.InitProducerID(ctx, *r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch)
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = fencedCode(res.Code, r.Version, 4), res.ProducerID, res.Epoch
			return resp
		}}
	}
	if az := b.authz(req); !az.cluster(kmsg.ACLOperationIdempotentWrite) && !az.anyOf(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply(resp)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := b.producerIDs.nextID(ctx)
	if err != nil {
		b.logger.Warn("cannot allocate a producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return reply(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return reply(resp)
}

// producerIDBlockSize is how many ids one etcd reservation covers.
const producerIDBlockSize = 1000

// producerIDAllocator hands out producer ids from blocks reserved in etcd.
type producerIDAllocator struct {
	client *coord.Client

	mu sync.Mutex
	// next and end delimit the unused part of the current block.
	next, end int64
}

func newProducerIDAllocator(c *coord.Client) *producerIDAllocator {
	return &producerIDAllocator{client: c}
}

func (a *producerIDAllocator) nextID(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == a.end {
		// Holding mu across the etcd call is deliberate: concurrent callers
		// would otherwise each reserve a block.
		first, err := a.client.AllocateProducerIDs(ctx, producerIDBlockSize)
		if err != nil {
			return -1, err
		}
		a.next, a.end = first, first+producerIDBlockSize
	}
	id := a.next
	a.next++
	return id, nil
}
