package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader of a partition is killed (kill -9) while an idempotent
// producer writes with acks=all to three partitions of replication factor 3
// (min.insync.replicas 2). Every acknowledged record is later read exactly
// once, at the offset it was acknowledged with, and after the killed broker
// returns and catches up all three replicas hold byte-identical logs.
func TestLeaderKilledUnderAcksAll(t *testing.T) {
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic = "acked"
	minISR := "2"
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
		t.Fatal(err)
	}
	partitionState := func() (map[int32]int32, map[int32]int) {
		md, err := c.Metadata()
		if err != nil {
			return nil, nil
		}
		leaders, isr := map[int32]int32{}, map[int32]int{}
		if tp, ok := metadataTopic(md, topic); ok {
			for _, p := range tp.Partitions {
				leaders[p.Partition], isr[p.Partition] = p.Leader, len(p.ISR)
			}
		}
		return leaders, isr
	}
	fullISR := func() error {
		leaders, isr := partitionState()
		for p := int32(0); p < 3; p++ {
			if isr[p] != 3 || leaders[p] < 0 {
				return fmt.Errorf("partition %d: leader %d, %d in sync", p, leaders[p], isr[p])
			}
		}
		return nil
	}
	WaitFor(t, 30*time.Second, fullISR)

	// Retries and metadata refreshes every 100ms at most (not franz-go's
	// growing backoff and 5 s minimum metadata age), so the time to the
	// first acknowledgement after the kill measures the cluster.
	w := startAckedWorkload(t, c, topic, 3, 3, kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(100*time.Millisecond))
	w.WaitAcked(t, 2000, 30*time.Second)
	leaders, _ := partitionState()
	victim := leaders[0]
	killed := time.Now()
	c.Kill9(victim)
	atKill := w.Acked()
	WaitFor(t, 30*time.Second, func() error {
		if leaders, _ := partitionState(); leaders[0] == victim || leaders[0] < 0 {
			return fmt.Errorf("partition 0 led by %d", leaders[0])
		}
		return nil
	})
	elected := time.Since(killed)
	// Production goes on through the failover.
	w.WaitAcked(t, atKill+2000, 60*time.Second)
	failover, ok := w.FirstAckAfter(0, killed)
	if !ok {
		t.Fatalf("no write to partition 0 sent after the kill was acknowledged")
	}
	t.Logf("failover of partition 0 after leader %d was killed (broker.session.timeout.ms %d): new leader in metadata after %v, first write sent after the kill acknowledged after %v",
		victim, c.SessionTimeout.Milliseconds(), elected.Round(time.Millisecond), failover.Round(time.Millisecond))
	w.Stop(t)
	c.Restart(victim)
	WaitFor(t, 60*time.Second, fullISR)
	want := w.Verify(t, c)
	CheckReplication(t, c, topic)
	t.Logf("%d records acknowledged, %d before the leader (broker %d) was killed; all read back once", want, atKill, victim)
}

// With both followers dead the ISR shrinks to the leader; with
// min.insync.replicas 2 acks=all writes are refused with
// NOT_ENOUGH_REPLICAS (acks=1 still works) until the followers return,
// and nothing acknowledged before is lost.
func TestNotEnoughReplicas(t *testing.T) {
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "minisr"
	minISR := "2"
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
		t.Fatal(err)
	}
	state := func() (int32, []int32) {
		md, err := c.Metadata()
		if err != nil {
			return -1, nil
		}
		tp, ok := metadataTopic(md, topic)
		if !ok || len(tp.Partitions) != 1 {
			return -1, nil
		}
		return tp.Partitions[0].Leader, tp.Partitions[0].ISR
	}
	WaitFor(t, 30*time.Second, func() error {
		if l, isr := state(); l < 0 || len(isr) != 3 {
			return fmt.Errorf("leader %d ISR %v", l, isr)
		}
		return nil
	})
	all := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(3*time.Second))
	for i := range 10 {
		if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("before-", i))}).FirstErr(); err != nil {
			t.Fatalf("acks=all with a full ISR: %v", err)
		}
	}
	leader, _ := state()
	var followers []int32
	for _, id := range c.IDs() {
		if id != leader {
			followers = append(followers, id)
			c.Kill9(id)
		}
	}
	WaitFor(t, 30*time.Second, func() error {
		if _, isr := state(); len(isr) != 1 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	// franz-go retries NOT_ENOUGH_REPLICAS until its delivery timeout and
	// then reports its own timeout, so ask the leader directly.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte("refused")}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := all.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := kresp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with an ISR of 1: error code %d, want NOT_ENOUGH_REPLICAS (%d)", code, kerr.NotEnoughReplicas.Code)
	}
	if err := all.ProduceSync(ctx, &kgo.Record{Value: []byte("refused too")}).FirstErr(); err == nil {
		t.Fatal("the client's acks=all write succeeded with an ISR of 1")
	}
	one := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctx, &kgo.Record{Value: []byte("acks-1")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 with an ISR of 1: %v", err)
	}
	for _, id := range followers {
		c.Restart(id)
	}
	WaitFor(t, 60*time.Second, func() error {
		if _, isr := state(); len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	fresh := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("acks=all after the ISR grew back: %v", err)
	}
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 12 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i := range 10 {
		if want := fmt.Sprint("before-", i); got[i] != want {
			t.Fatalf("record %d: got %q, want %q (all: %v)", i, got[i], want, got)
		}
	}
	if got[10] != "acks-1" || got[11] != "after" {
		t.Fatalf("records 10-11: %v, want acks-1 then after (the refused write must be absent)", got[10:])
	}
	CheckReplication(t, c, topic)
}
