package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnCommitAppendAfterMarkerCode: the broker verified a
// TxnOffsetCommit's transaction, then the transaction's marker landed on
// the offsets partition before the commit's append (the store refuses it
// with ErrTxnState). The answer is TRANSACTION_ABORTABLE from v4, as when
// the verification itself finds the partition outside the transaction
// (the client aborts and goes on), and INVALID_TXN_STATE before v4, which
// knows no TRANSACTION_ABORTABLE.
func TestTxnCommitAppendAfterMarkerCode(t *testing.T) {
	for _, tc := range []struct {
		version int16
		want    int16
	}{
		{3, kerr.InvalidTxnState.Code},
		{4, kerr.TransactionAbortable.Code},
		{5, kerr.TransactionAbortable.Code},
	} {
		h := newHarness(t)
		h.store.fail(ErrTxnState)
		resp := h.c.StartTxnCommitOffsets(txnCommitReq(tc.version, 7, 10), 1)(context.Background())
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: response %+v", tc.version, resp)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("v%d: error %v, want %v", tc.version, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// txnCommitReq is a TxnOffsetCommit of version v by transactional id
// "tx", producer pid at epoch 0, of offset for t/0 in group "g" (no
// generation).
func txnCommitReq(v int16, pid, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = v
	req.TransactionalID, req.Group = "tx", "g"
	req.ProducerID, req.ProducerEpoch, req.Generation = pid, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
