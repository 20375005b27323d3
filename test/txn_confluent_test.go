//go:build cgo

package test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// confluentTxnProducer returns a librdkafka transactional producer with
// its transactions initialized.
func confluentTxnProducer(t *testing.T, ctx context.Context, addr, id string) *kafka.Producer {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": addr,
		"transactional.id":  id,
		"linger.ms":         1,
		"log_level":         4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	return p
}

// confluentTxnSend begins a transaction, produces values to topic's
// partition 0 and waits for their delivery reports.
func confluentTxnSend(t *testing.T, p *kafka.Producer, topic string, values ...string) error {
	t.Helper()
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	dr := make(chan kafka.Event, len(values))
	for _, v := range values {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(v)}, dr); err != nil {
			return err
		}
	}
	for range values {
		if m := (<-dr).(*kafka.Message); m.TopicPartition.Error != nil {
			return m.TopicPartition.Error
		}
	}
	return nil
}

// confluentRead reads topic's partition 0 from the start with librdkafka at
// the isolation level until it has want values, then until nothing more
// comes.
func confluentRead(t *testing.T, ctx context.Context, addr, topic, isolation string, want int) []string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":    addr,
		"group.id":             "samsa-txn-unused",
		"enable.auto.commit":   false,
		"isolation.level":      isolation,
		"enable.partition.eof": true,
		"fetch.wait.max.ms":    100,
		"log_level":            4,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ctx.Err() == nil {
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			got = append(got, string(e.Value))
		case kafka.PartitionEOF:
			if len(got) >= want {
				return got
			}
		case kafka.Error:
			t.Fatalf("consume: %v", e)
		}
	}
	t.Fatalf("read %d of %d records: %v", len(got), want, ctx.Err())
	return nil
}

// TestTransactionsConfluent: librdkafka's transactional producer commits
// and aborts; its read_committed consumer sees only the committed records
// and its read_uncommitted one all of them (neither sees a marker); a
// second producer with the same transactional id fences the first.
func TestTransactionsConfluent(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 90*time.Second)
	const topic = "txn-confluent"
	if _, err := kadm.NewClient(newKgoClient(t, b.Addr)).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := confluentTxnProducer(t, ctx, b.Addr, "rdkafka-txn")
	if err := confluentTxnSend(t, p, topic, "c1", "c2", "c3"); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := confluentTxnSend(t, p, topic, "a1", "a2"); err != nil {
		t.Fatal(err)
	}
	if err := p.AbortTransaction(ctx); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if err := confluentTxnSend(t, p, topic, "c4"); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := confluentRead(t, ctx, b.Addr, topic, "read_committed", 4); !slices.Equal(got, []string{"c1", "c2", "c3", "c4"}) {
		t.Fatalf("read_committed got %q", got)
	}
	if got := confluentRead(t, ctx, b.Addr, topic, "read_uncommitted", 6); !slices.Equal(got, []string{"c1", "c2", "c3", "a1", "a2", "c4"}) {
		t.Fatalf("read_uncommitted got %q", got)
	}
	// franz-go's read_committed consumer agrees.
	if got := consumeAll(t, ctx, b.Addr, topic, 4, kgo.ReadCommitted()); !slices.Equal(got, []string{"c1", "c2", "c3", "c4"}) {
		t.Fatalf("franz-go read_committed got %q", got)
	}

	// Fencing: a second producer of the id; the first can no longer commit.
	if err := confluentTxnSend(t, p, topic, "zombie"); err != nil {
		t.Fatal(err)
	}
	p2 := confluentTxnProducer(t, ctx, b.Addr, "rdkafka-txn")
	if err := confluentTxnSend(t, p2, topic, "live"); err != nil {
		t.Fatal(err)
	}
	if err := p2.CommitTransaction(ctx); err != nil {
		t.Fatalf("second producer's commit: %v", err)
	}
	err := p.CommitTransaction(ctx)
	var kerr kafka.Error
	if err == nil || !errors.As(err, &kerr) || !kerr.IsFatal() && !kerr.TxnRequiresAbort() {
		t.Fatalf("fenced producer's commit: %v, want a fatal error", err)
	}
	t.Logf("fenced producer's commit failed: %v", err)
	want := []string{"c1", "c2", "c3", "c4", "live"}
	if got := confluentRead(t, ctx, b.Addr, topic, "read_committed", len(want)); !slices.Equal(got, want) {
		t.Fatalf("read_committed after fencing got %q, want %q", got, want)
	}
}
