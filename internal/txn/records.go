package txn

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records of __transaction_state, in Kafka's own formats: key
// kmsg.TxnMetadataKey version 0 (the transactional id), value
// kmsg.TxnMetadataValue version 1 (flexible, with the previous and next
// producer ids and the client's transaction version as tagged fields). A
// transactional id that expired is a tombstone (null value).
const (
	keyVersion   = 0
	valueVersion = 1
)

// maxIDLen is the longest transactional id a record holds (an int16
// length).
const maxIDLen = 1<<15 - 1

func stateKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

// stateValue encodes a transaction's metadata.
func stateValue(t *txnMeta) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = t.producerID, t.epoch, t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp, v.StartTimestamp = t.lastUpdate, t.start
	v.PreviousProducerID, v.NextProducerID, v.NextProducerEpoch = t.prevProducerID, t.nextProducerID, -1
	if t.tv2 {
		v.ClientTransactionVersion = 2
	}
	for _, tp := range t.sortedPartitions() {
		n := len(v.Topics)
		if n == 0 || v.Topics[n-1].Topic != tp.Topic {
			vt := kmsg.NewTxnMetadataValueTopic()
			vt.Topic = tp.Topic
			v.Topics = append(v.Topics, vt)
			n++
		}
		v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
	}
	return v.AppendTo(nil)
}

var errBadRecord = errors.New("txn: malformed record")

// decodeRecord reads one record of __transaction_state: the id and, unless
// it is a tombstone (nil meta), the metadata.
func decodeRecord(key, value []byte) (string, *txnMeta, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("%w: key: %v", errBadRecord, err)
	}
	if k.Version != keyVersion {
		return "", nil, fmt.Errorf("%w: key version %d", errBadRecord, k.Version)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("%w: value of %q: %v", errBadRecord, k.TransactionalID, err)
	}
	if v.State < 0 || v.State > kmsg.TransactionStatePrepareEpochFence {
		return "", nil, fmt.Errorf("%w: state %d of %q", errBadRecord, v.State, k.TransactionalID)
	}
	t := &txnMeta{
		id: k.TransactionalID, producerID: v.ProducerID, prevProducerID: v.PreviousProducerID,
		epoch: v.ProducerEpoch, lastEpoch: -1, timeoutMs: v.TimeoutMillis, state: State(v.State),
		lastUpdate: v.LastUpdateTimestamp, start: v.StartTimestamp, partitions: map[TopicPartition]struct{}{},
	}
	t.nextProducerID, t.tv2 = v.NextProducerID, v.ClientTransactionVersion >= 2
	if v.Version == 0 {
		t.prevProducerID, t.nextProducerID = -1, -1
	}
	for _, vt := range v.Topics {
		for _, p := range vt.Partitions {
			t.partitions[TopicPartition{vt.Topic, p}] = struct{}{}
		}
	}
	return k.TransactionalID, t, nil
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (t *txnMeta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(t.partitions))
	for tp := range t.partitions {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}
