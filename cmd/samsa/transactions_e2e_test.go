package main

// End-to-end test of `samsa transactions` against a real in-process
// broker: a franz-go transaction left open, and a hanging transaction (a
// transactional batch the coordinator never heard of, possible only with
// transaction.partition.verification.enable off) found and aborted.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	samsatest "github.com/samsa-io/samsa/test"
)

// txnBatch is a one-record transactional batch of producer pid at epoch.
func txnBatch(pid int64, epoch int16, value string) []byte {
	rec := kmsg.Record{Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	now := time.Now().UnixMilli()
	b := (&kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: 0, NumRecords: 1, Records: rec.AppendTo(nil)}).AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestE2ETransactions(t *testing.T) {
	b := samsatest.StartBroker(t, func(cfg *broker.Config) { cfg.TxnVerification = false })
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}
	const topic = "tx"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// An open transaction of franz-go on partition 0.
	open, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("open-one"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out, _, err := c.run("", "transactions", "list")
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(out)
	if len(rows) != 2 || rows[1][0] != "open-one" || rows[1][1] != "1" || rows[1][3] != "Ongoing" {
		t.Fatalf("transactions list:\n%s", out)
	}
	pid := rows[1][2]
	out, _, err = c.run("", "transactions", "describe", "--transactional-id", "open-one")
	if err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(out); len(rows) != 2 || rows[1][2] != pid || rows[1][4] != "Ongoing" || rows[1][8] != topic+"-0" {
		t.Fatalf("transactions describe:\n%s", out)
	}
	out, _, err = c.run("", "transactions", "describe-producers", "--topic", topic, "--partition", "0")
	if err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(out); len(rows) != 2 || rows[1][0] != pid || rows[1][5] != "0" {
		t.Fatalf("transactions describe-producers:\n%s", out)
	}
	// It is known to its coordinator: not hanging.
	c.ok("TOPIC  PARTITION  PRODUCER-ID  PRODUCER-EPOCH  COORDINATOR-EPOCH  START-OFFSET  LAST-TIMESTAMP  DURATION-MIN\n",
		"transactions", "find-hanging", "--max-transaction-timeout", "0s")
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// A hanging transaction on partition 1: a batch of a transactional
	// producer that never added the partition.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr("rogue")
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, ir)
	}
	prod := kmsg.NewPtrProduceRequest()
	prod.Acks, prod.TimeoutMillis, prod.TransactionID = -1, 10000, kmsg.StringPtr("rogue")
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 1, txnBatch(ir.ProducerID, ir.ProducerEpoch, "hanging")
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	pr, err := prod.RequestWith(ctx, cl)
	if err != nil || pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %v %+v", err, pr)
	}
	lsoBelowHW := func() (bool, error) {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return false, err
		}
		h, _ := hw.Lookup(topic, 1)
		l, _ := lso.Lookup(topic, 1)
		return l.Offset < h.Offset, nil
	}
	if below, err := lsoBelowHW(); err != nil || !below {
		t.Fatalf("the hanging transaction does not hold the last stable offset back (%v)", err)
	}
	out, _, err = c.run("", "transactions", "find-hanging", "--max-transaction-timeout", "0s")
	if err != nil {
		t.Fatal(err)
	}
	rows = tableRows(out)
	if len(rows) != 2 || rows[1][0] != topic || rows[1][1] != "1" || rows[1][2] != fmt.Sprint(ir.ProducerID) || rows[1][5] != "0" {
		t.Fatalf("find-hanging:\n%s", out)
	}
	c.ok(fmt.Sprintf("Aborted the transaction of producer %d (epoch %d) on %s-1\n", ir.ProducerID, ir.ProducerEpoch, topic),
		"transactions", "abort", "--topic", topic, "--partition", "1", "--start-offset", "0")
	if below, err := lsoBelowHW(); err != nil || below {
		t.Fatalf("the last stable offset still lags after the abort (%v)", err)
	}
	out, _, err = c.run("", "transactions", "find-hanging", "--max-transaction-timeout", "0s")
	if err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("find-hanging after the abort: %v\n%s", err, out)
	}
	if _, errOut, err := c.run("", "transactions", "abort", "--topic", topic, "--partition", "1", "--start-offset", "5"); err == nil {
		t.Fatalf("abort of a transaction that does not exist succeeded (%s)", errOut)
	}
}
