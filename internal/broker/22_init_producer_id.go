package broker

// InitProducerId (key 22), versions 0–4 (flexible from v2).
//
// Idempotent producers only: each call hands out a fresh producer id with
// epoch 0 from a block reserved in etcd, so ids are unique cluster-wide and
// across restarts. A v3+ request carrying an existing id and epoch (KIP-360
// epoch bump after an error) also gets a fresh id, which gives the producer
// a clean sequence space just as an epoch bump would. Transactional ids are
// not supported yet: they are answered with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a non-retriable error, rather than
// left to hang. With an authorizer, an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.

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
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return reply(resp)
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
