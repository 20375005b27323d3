package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchAbortedTxnsBoundedByReturnedData: a read_committed fetch gets
// the aborted transactions of the offsets it returns, bounded, as in
// Kafka, by the offset after the last batch returned: not every aborted
// transaction up to the last stable offset, which would grow each response
// without limit (12 bytes per transaction, outside any max-bytes budget).
func TestFetchAbortedTxnsBoundedByReturnedData(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 120*time.Second)
	const topic = "txn-aborted-bound"
	adm := kadm.NewClient(newKgoClient(t, b.Addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := newKgoClient(t, b.Addr, kgo.TransactionalID("aborted-bound"), kgo.DefaultProduceTopic(topic))
	const n = 30
	for i := range n {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "aborted-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Fatal(err)
		}
	}
	fc := newKgoClient(t, b.Addr)
	var aborted int
	WaitFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID = -1
		req.IsolationLevel = 1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, 1 // one batch: offset 0
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, fc)
		if err != nil {
			return err
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return fmt.Errorf("fetch error %d", p.ErrorCode)
		}
		if p.LastStableOffset < 2*n {
			return fmt.Errorf("LSO %d", p.LastStableOffset)
		}
		aborted = len(p.AbortedTransactions)
		return nil
	})
	// The batch returned is offset 0 (the first aborted transaction's
	// only batch); its abort marker is at 1. Only that transaction
	// overlaps what was returned.
	if aborted != 1 {
		t.Fatalf("a fetch returning offset 0 only carries %d aborted transactions, want 1 (those below the end of the data returned)", aborted)
	}
}

// TestTxnV2ProduceRightAfterEndTxn: under transactions v2 a producer's
// first batch of a transaction follows its EndTxn at once, usually before
// the previous transaction's markers are written. The broker retries the
// implicit add (CONCURRENT_TRANSACTIONS meanwhile) itself, as Kafka does,
// rather than answering it to clients, which wait for a metadata refresh
// (franz-go: 5 s) before they retry.
func TestTxnV2ProduceRightAfterEndTxn(t *testing.T) {
	b := StartBroker(t) // transaction.version 2, the default
	ctx := testContext(t, 60*time.Second)
	cl := newKgoClient(t, b.Addr)
	const topic = "txn-v2-back-to-back"
	id := kmsg.StringPtr("back-to-back")
	pid, epoch := txnSetup(t, ctx, cl, topic, 1, *id)
	rc := dialBad(t, b.Addr) // the versions asked for: Produce v12, EndTxn v5
	const n = 8
	for i := range n {
		batch := withAttributes(buildRecordBatch(pid, epoch, 0, time.Now().UnixMilli(), []rawRecord{{Value: fmt.Appendf(nil, "v-%d", i)}}), 0x10)
		wantCode(t, fmt.Sprintf("transaction %d's first batch, right after the previous EndTxn", i), txnProduce(t, rc, 12, id, topic, 0, batch), noError)
		end := kmsg.NewPtrEndTxnRequest()
		end.Version = 5
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = *id, pid, epoch, true
		er := rc.roundTrip(end).(*kmsg.EndTxnResponse)
		if er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != epoch+1 {
			t.Fatalf("EndTxn v5 of transaction %d: %+v, want producer %d epoch %d", i, er, pid, epoch+1)
		}
		epoch = er.ProducerEpoch
	}
	if got := consumeAll(t, ctx, b.Addr, topic, n, kgo.ReadCommitted()); len(got) != n {
		t.Fatalf("read_committed read %d records, want %d: %q", len(got), n, got)
	}
}
