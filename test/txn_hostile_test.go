package test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnProduce sends one batch to topic-partition with the transactional id
// (nil: none), in the given Produce version, and returns the partition's
// error code.
func txnProduce(t *testing.T, rc *badConn, version int16, txnID *string, topic string, partition int32, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return rc.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// withAttributes sets a batch's attributes and fixes its CRC.
func withAttributes(b []byte, attrs int16) []byte {
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], castagnoli))
	return b
}

// waitTxnState waits until transactional id id is in state.
func waitTxnState(t *testing.T, ctx context.Context, cl *kgo.Client, id, state string) {
	t.Helper()
	WaitFor(t, 10*time.Second, func() error {
		d, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
		if err != nil {
			return err
		}
		if s := d[id].State; s != state {
			return fmt.Errorf("state %s", s)
		}
		return nil
	})
}

// noError is the code 0 for wantCode.
var noError = &kerr.Error{Message: "NONE"}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestTransactionsHostileInput: what a client may not do with transactions
// is refused with Kafka's error code, and the partition stays usable.
func TestTransactionsHostileInput(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	cl := newKgoClient(t, b.Addr)
	const topic = "txn-hostile"
	id := kmsg.StringPtr("hostile")
	pid, epoch := txnSetup(t, ctx, cl, topic, 2, *id)
	// A raw connection sends the versions asked for (franz-go would
	// negotiate its own): Produce v9 is a transactions v1 producer's.
	rc := dialBad(t, b.Addr)
	rec := []rawRecord{{Value: []byte("v")}}
	now := time.Now().UnixMilli()
	txnBatch := func(seq int32) []byte {
		return withAttributes(buildRecordBatch(pid, epoch, seq, now, rec), 0x10)
	}

	// InitProducerId's own checks.
	for _, tc := range []struct {
		name    string
		id      *string
		timeout int32
		pid     int64
		epoch   int16
		want    *kerr.Error
	}{
		{"empty transactional id", kmsg.StringPtr(""), 60000, -1, -1, kerr.InvalidRequest},
		{"timeout above transaction.max.timeout.ms", id, 16 * 60 * 1000, -1, -1, kerr.InvalidTransactionTimeout},
		{"zero timeout", id, 0, -1, -1, kerr.InvalidTransactionTimeout},
		{"producer id without epoch", id, 60000, pid, -1, kerr.InvalidRequest},
		{"another producer's id", id, 60000, pid + 1000, 0, kerr.ProducerFenced},
		{"transactional id longer than a record holds", kmsg.StringPtr(strings.Repeat("x", 40000)), 60000, -1, -1, kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = tc.id, tc.timeout, tc.pid, tc.epoch
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantCode(t, "InitProducerId with "+tc.name, resp.ErrorCode, tc.want)
	}

	// Produce.
	wantCode(t, "a client's control batch", txnProduce(t, rc, 9, id, topic, 0, withAttributes(buildRecordBatch(pid, epoch, -1, now, rec), 0x30)),
		kerr.InvalidRecord)
	wantCode(t, "a transactional batch without a transactional id", txnProduce(t, rc, 9, nil, topic, 0, txnBatch(0)),
		kerr.TransactionalIDAuthorizationFailed)
	wantCode(t, "a transactional batch to a partition not in the transaction", txnProduce(t, rc, 9, id, topic, 0, txnBatch(0)),
		kerr.InvalidTxnState)
	wantCode(t, "a produce to __transaction_state", txnProduce(t, rc, 9, nil, "__transaction_state", 0, buildRecordBatch(-1, -1, -1, now, rec)),
		kerr.InvalidTopicException)

	// Out-of-order and mismatched transactional requests.
	end := func(pid int64, epoch int16, version int16) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = version
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = *id, pid, epoch, true
		return rc.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
	}
	wantCode(t, "EndTxn before any partition", end(pid, epoch, 3), kerr.InvalidTxnState)
	wantCode(t, "EndTxn of another producer id", end(pid+1, epoch, 3), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn v3 of a stale epoch", end(pid, epoch-1, 3), kerr.ProducerFenced)
	wantCode(t, "EndTxn v1 of a stale epoch", end(pid, epoch-1, 1), kerr.InvalidProducerEpoch)
	add := func(topics map[string][]int32) map[string]map[int32]int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = *id, pid, epoch
		for topic, ps := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = topic, ps
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[int32]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = map[int32]int16{}
			for _, rp := range rt.Partitions {
				out[rt.Topic][rp.Partition] = rp.ErrorCode
			}
		}
		return out
	}
	codes := add(map[string][]int32{topic: {0}, "no-such-topic": {0}, "__consumer_offsets": {0}})
	wantCode(t, "AddPartitionsToTxn of an unknown topic", codes["no-such-topic"][0], kerr.UnknownTopicOrPartition)
	wantCode(t, "AddPartitionsToTxn of __consumer_offsets", codes["__consumer_offsets"][0], kerr.TopicAuthorizationFailed)
	wantCode(t, "AddPartitionsToTxn of a good partition beside bad ones", codes[topic][0], kerr.OperationNotAttempted)
	codes = add(map[string][]int32{topic: {0}})
	wantCode(t, "AddPartitionsToTxn", codes[topic][0], noError)
	wantCode(t, "the transactional batch once added", txnProduce(t, rc, 9, id, topic, 0, txnBatch(0)), noError)
	wantCode(t, "a non-transactional batch of the producer during its transaction",
		txnProduce(t, rc, 9, id, topic, 0, buildRecordBatch(pid, epoch, 1, now, rec)), kerr.InvalidTxnState)

	// Markers: from an older coordinator, and malformed.
	marker := func(coordEpoch int32, pid int64) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordEpoch, false
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := brokerOne(t, ctx, cl).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "a marker with a negative producer id", marker(0, -5), kerr.InvalidRequest)
	wantCode(t, "commit the transaction", end(pid, epoch, 3), noError)
	waitTxnState(t, ctx, cl, *id, "CompleteCommit")
	wantCode(t, "a marker from an older coordinator", marker(-1, pid), kerr.TransactionCoordinatorFenced)

	// Transactions v2: Produce v12 adds the partition itself, and EndTxn
	// v5 bumps the epoch.
	wantCode(t, "a v12 transactional batch to a partition not in the transaction yet", txnProduce(t, rc, 12, id, topic, 1, txnBatch(0)), noError)
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = *id, pid, epoch, true
	if er := rc.roundTrip(req).(*kmsg.EndTxnResponse); er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != epoch+1 {
		t.Errorf("EndTxn v5: %+v, want no error, producer %d epoch %d", er, pid, epoch+1)
	}
	waitTxnState(t, ctx, cl, *id, "CompleteCommit")
	wantCode(t, "the old epoch after a v2 commit", txnProduce(t, rc, 12, id, topic, 1, txnBatch(1)), kerr.InvalidProducerEpoch)

	// The partition still works: read_committed reads the committed record.
	if got := consumeAll(t, ctx, b.Addr, topic, 2, kgo.ReadCommitted()); len(got) != 2 || got[0] != "v" || got[1] != "v" {
		t.Fatalf("read_committed after the hostile requests: %q", got)
	}
}

// txnSetup creates topic with partitions partitions (RF 1) and initializes
// transactional id id (timeout 60 s), returning its producer id and epoch.
func txnSetup(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, id string) (int64, int16) {
	t.Helper()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %+v", err, ir)
	}
	return ir.ProducerID, ir.ProducerEpoch
}
