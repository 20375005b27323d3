package broker

// TxnOffsetCommit (key 28), versions 0–5 (flexible from v3).
//
// Offsets committed in the producer's transaction (internal/group:
// StartTxnCommitOffsets): pending until the transaction's marker reaches
// the group's __consumer_offsets partition. With an authorizer the
// principal needs WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), READ on the
// group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions); unknown partitions get
// UNKNOWN_TOPIC_OR_PARTITION. Before the write, the transaction
// coordinator confirms that the group's partition is in the transaction
// (KIP-890 verification, skipped when the transaction is already open
// there at the request's epoch): otherwise INVALID_TXN_STATE
// (TRANSACTION_ABORTABLE from v4). From v5 (transactions v2) the
// coordinator adds the partition instead. An epoch older than the one the
// partition knows is INVALID_PRODUCER_EPOCH, checked again when the
// commit is appended, as is a marker of the producer written since the
// verification (INVALID_TXN_STATE).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	s := b.view()
	az := b.authz(req)
	setAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	switch {
	case !az.transactionalID(kmsg.ACLOperationWrite, r.TransactionalID):
		return reply(setAll(kerr.TransactionalIDAuthorizationFailed.Code))
	case !az.group(kmsg.ACLOperationRead, r.Group):
		return reply(setAll(kerr.GroupAuthorizationFailed.Code))
	}
	known := *r
	known.Topics = nil
	for _, t := range r.Topics {
		kt := t
		kt.Partitions = nil
		readable := az.topic(kmsg.ACLOperationRead, t.Topic)
		var refused *kmsg.TxnOffsetCommitResponseTopic
		for _, p := range t.Partitions {
			code := int16(0)
			switch {
			case !readable:
				code = kerr.TopicAuthorizationFailed.Code
			case !knownPartition(s, t.Topic, p.Partition):
				code = kerr.UnknownTopicOrPartition.Code
			}
			if code == 0 {
				kt.Partitions = append(kt.Partitions, p)
				continue
			}
			if refused == nil {
				resp.Topics = append(resp.Topics, kmsg.NewTxnOffsetCommitResponseTopic())
				refused = &resp.Topics[len(resp.Topics)-1]
				refused.Topic = t.Topic
			}
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			refused.Partitions = append(refused.Partitions, rp)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	if len(known.Topics) == 0 {
		return reply(resp)
	}
	merge := func(kr *kmsg.TxnOffsetCommitResponse) *kmsg.TxnOffsetCommitResponse {
		resp.Topics = append(resp.Topics, kr.Topics...)
		return resp
	}
	setKnown := func(code int16) *kmsg.TxnOffsetCommitResponse {
		kresp := known.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range known.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			kresp.Topics = append(kresp.Topics, rt)
		}
		return merge(kresp)
	}
	// Verification, when the group's partition is led here (the group
	// coordinator answers NOT_COORDINATOR otherwise).
	n := b.cfg.Groups.Partitions
	if vt, ok := s.Topics[group.OffsetsTopic]; ok {
		n = int32(len(vt.Topic.Partitions))
	}
	tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(r.Group, n)}
	// The log's verification token (klog.Log.BeginVerification): a
	// marker of the producer appended between the verification and the
	// commit's append voids it, and the append is refused instead of
	// opening a transaction that has already ended.
	var token uint64
	if lp, code := b.localLeader(s, tp.Topic, tp.Partition); code == 0 {
		// v5+ (transactions v2) adds the group's partition to the
		// transaction; older versions only verify.
		vs := []txnLogVerification{{tp: tp, log: lp.Log()}}
		per, code := b.verifyLogs(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, vs, r.Version < 5)
		if vs[0].err != nil {
			return reply(setKnown(kerr.InvalidProducerEpoch.Code))
		}
		if vs[0].needed {
			if code == 0 {
				code = per[tp]
			}
			if code = txnCommitVerifyCode(code, r.Version); code != 0 {
				return reply(setKnown(code))
			}
			token = vs[0].token
		}
	}
	wait := b.groups.StartTxnCommitOffsets(&known, token)
	return protocol.Response{Later: func() kmsg.Response { return merge(wait(ctx)) }}
}

// txnCommitVerifyCode turns a verification answer into the error of a
// TxnOffsetCommit of version v: a coordinator that could not be asked is
// COORDINATOR_NOT_AVAILABLE (retriable), PRODUCER_FENCED
// INVALID_PRODUCER_EPOCH, a partition not in the transaction
// TRANSACTION_ABORTABLE from v4, INVALID_TXN_STATE before.
func txnCommitVerifyCode(code, v int16) int16 {
	switch code {
	case kerr.NotEnoughReplicas.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable.Code:
		if v < 4 {
			return kerr.InvalidTxnState.Code
		}
	}
	return code
}
