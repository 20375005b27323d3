package test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
)

// saramaTxnProducer returns a sarama transactional producer.
func saramaTxnProducer(t *testing.T, addr, id string) sarama.SyncProducer {
	t.Helper()
	cfg := saramaConfig(sarama.V3_0_0_0)
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("new transactional producer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func saramaTxnSend(p sarama.SyncProducer, topic string, values ...string) error {
	if err := p.BeginTxn(); err != nil {
		return err
	}
	for _, v := range values {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}); err != nil {
			return err
		}
	}
	return nil
}

// saramaReadTxn reads topic's partition 0 from the start at the isolation
// level until it has want values and the high watermark.
func saramaReadTxn(t *testing.T, ctx context.Context, addr, topic string, iso sarama.IsolationLevel, want int) []string {
	t.Helper()
	cfg := saramaConfig(sarama.V3_0_0_0)
	cfg.Consumer.IsolationLevel = iso
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []string
	for len(got) < want {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-ctx.Done():
			t.Fatalf("read %d of %d: %v", len(got), want, ctx.Err())
		}
	}
	// Nothing more (duplicates, aborted records) arrives.
	select {
	case m := <-pc.Messages():
		t.Fatalf("unexpected record %q after %q", m.Value, got)
	case <-time.After(500 * time.Millisecond):
	}
	return got
}

// TestTransactionsSarama: sarama's transactional producer commits and
// aborts; its read_committed consumer sees only the committed records,
// its read_uncommitted one all; a second producer with the same
// transactional id fences the first.
func TestTransactionsSarama(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 90*time.Second)
	const topic = "txn-sarama"
	if _, err := kadm.NewClient(newKgoClient(t, b.Addr)).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := saramaTxnProducer(t, b.Addr, "sarama-txn")
	if err := saramaTxnSend(p, topic, "c1", "c2"); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTxn(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := saramaTxnSend(p, topic, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := p.AbortTxn(); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if err := saramaTxnSend(p, topic, "c3"); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTxn(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := saramaReadTxn(t, ctx, b.Addr, topic, sarama.ReadCommitted, 3); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Fatalf("read_committed got %q", got)
	}
	if got := saramaReadTxn(t, ctx, b.Addr, topic, sarama.ReadUncommitted, 4); !slices.Equal(got, []string{"c1", "c2", "a1", "c3"}) {
		t.Fatalf("read_uncommitted got %q", got)
	}

	if err := saramaTxnSend(p, topic, "zombie"); err != nil {
		t.Fatal(err)
	}
	p2 := saramaTxnProducer(t, b.Addr, "sarama-txn")
	if err := saramaTxnSend(p2, topic, "live"); err != nil {
		t.Fatal(err)
	}
	if err := p2.CommitTxn(); err != nil {
		t.Fatalf("second producer's commit: %v", err)
	}
	if err := p.CommitTxn(); err == nil {
		t.Fatal("the fenced producer committed")
	} else {
		t.Logf("fenced producer's commit failed: %v", err)
	}
	if got := saramaReadTxn(t, ctx, b.Addr, topic, sarama.ReadCommitted, 4); !slices.Equal(got, []string{"c1", "c2", "c3", "live"}) {
		t.Fatalf("read_committed after fencing got %q", got)
	}
}
