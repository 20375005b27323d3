package broker

// AddPartitionsToTxn (key 24), versions 0–5 (flexible from v3).
//
// v0–3 (producers): the partitions join the producer's transaction at its
// coordinator (internal/txn: AddPartitions), this broker only if it leads
// the id's __transaction_state partition (else NOT_COORDINATOR). The
// principal needs WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and on each
// topic (TOPIC_AUTHORIZATION_FAILED; internal topics always fail);
// unknown partitions get UNKNOWN_TOPIC_OR_PARTITION. If any partition
// fails, the others get OPERATION_NOT_ATTEMPTED and nothing changes.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).
//
// v4+ (brokers; CLUSTER_ACTION on the cluster, else a top-level
// CLUSTER_AUTHORIZATION_FAILED): a batch of transactions, each added as
// above (a transactions v2 producer's implicit add, KIP-890 part 2) or,
// with VerifyOnly, only checked (KIP-890 verification: a partition not in
// the transaction gets TRANSACTION_ABORTABLE).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	az := b.authz(req)
	s := b.view()
	if r.Version < 4 {
		return protocol.Response{Later: func() kmsg.Response {
			codes := b.addPartitionsToTxn(ctx, s, az, r.TransactionalID, r.ProducerID, r.ProducerEpoch, false, topicsOf(r.Topics), true)
			for _, t := range r.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, fencedCode(codes[t.Topic][p], r.Version, 2)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}}
	}
	if !az.cluster(kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		for _, tr := range r.Transactions {
			topics := make([]txnTopic, len(tr.Topics))
			for i, t := range tr.Topics {
				topics[i] = txnTopic{t.Topic, t.Partitions}
			}
			codes := b.addPartitionsToTxn(ctx, s, az, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, topics, false)
			rtr := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtr.TransactionalID = tr.TransactionalID
			for _, t := range tr.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p, codes[t.Topic][p]
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtr.Topics = append(rtr.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rtr)
		}
		return resp
	}}
}

// txnTopic is a topic's partitions in a transactional request.
type txnTopic struct {
	topic      string
	partitions []int32
}

func topicsOf(ts []kmsg.AddPartitionsToTxnRequestTopic) []txnTopic {
	out := make([]txnTopic, len(ts))
	for i, t := range ts {
		out[i] = txnTopic{t.Topic, t.Partitions}
	}
	return out
}

// addPartitionsToTxn adds (or with verifyOnly checks) topics' partitions
// in id's transaction and returns the code per topic and partition.
// fromClient: the request is a producer's, whose principal needs WRITE on
// the id and on each topic.
func (b *Broker) addPartitionsToTxn(ctx context.Context, s *coord.Snapshot, az authz, id string, pid int64, epoch int16,
	verifyOnly bool, topics []txnTopic, fromClient bool) map[string]map[int32]int16 {
	codes := map[string]map[int32]int16{}
	setAll := func(code int16) map[string]map[int32]int16 {
		for _, t := range topics {
			codes[t.topic] = map[int32]int16{}
			for _, p := range t.partitions {
				codes[t.topic][p] = code
			}
		}
		return codes
	}
	if fromClient && !az.transactionalID(kmsg.ACLOperationWrite, id) {
		return setAll(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	var parts []txn.TopicPartition
	failed := false
	setAll(0)
	for _, t := range topics {
		writable := !fromClient || az.topic(kmsg.ACLOperationWrite, t.topic) && !isInternalTopic(t.topic)
		for _, p := range t.partitions {
			_, known := s.Partition(t.topic, p)
			switch {
			case !writable:
				codes[t.topic][p], failed = kerr.TopicAuthorizationFailed.Code, true
			case !known:
				codes[t.topic][p], failed = kerr.UnknownTopicOrPartition.Code, true
			default:
				parts = append(parts, txn.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	if failed {
		for _, tp := range parts {
			codes[tp.Topic][tp.Partition] = kerr.OperationNotAttempted.Code
		}
		return codes
	}
	if verifyOnly {
		per, code := b.txns.Verify(id, pid, epoch, parts)
		if code != 0 {
			return setAll(code)
		}
		for tp, c := range per {
			codes[tp.Topic][tp.Partition] = c
		}
		return codes
	}
	// A broker's add (v4+) is a produce's implicit add under transactions
	// v2 (KIP-890 part 2).
	return setAll(b.txns.AddPartitions(ctx, id, pid, epoch, parts, !fromClient))
}
