//go:build cgo

package test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestCompatConfluent produces records with keys, values and headers
// through confluent-kafka-go (librdkafka) with acks=all and delivery
// reports, plain and with enable.idempotence=true, once per compression
// codec, to a three-partition topic, and reads each partition back with a
// Consumer that Assigns the partitions from the beginning (groups:
// groups_confluent_test.go). Delivery reports and
// consumed records must carry exactly the expected partitions, offsets,
// keys, values and headers, in order.
func TestCompatConfluent(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 100*time.Second)
	kcl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(kcl)

	// librdkafka enables LZ4 only when the broker advertises FindCoordinator
	// (rdkafka_feature.c ties the LZ4 feature to it, for 0.8.2 brokers);
	// without it, compression.type=lz4 silently sends uncompressed batches.
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	// One broker: take its answer whatever id kadm keys it by (right after
	// start that may be the seed's, not node 1's).
	var bv kadm.BrokerApiVersions
	ok := false
	for _, v := range versions {
		if v.Err == nil {
			bv, ok = v, true
		}
	}
	if !ok {
		t.Fatalf("ApiVersions: no broker answered: %+v", versions)
	}
	if _, findCoordinator := bv.KeyMaxVersion(10); !findCoordinator {
		t.Fatal("FindCoordinator not advertised: librdkafka would not send LZ4")
	}
	lz4Stored := codecLz4

	const n, partitions = 300, 3
	codecs := []struct {
		name string
		attr uint8
	}{
		{"none", codecNone},
		{"gzip", codecGzip},
		{"snappy", codecSnappy},
		{"lz4", lz4Stored},
		{"zstd", codecZstd},
	}
	for _, idempotent := range []bool{false, true} {
		mode := "plain"
		if idempotent {
			mode = "idempotent"
		}
		for _, c := range codecs {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				topic := fmt.Sprintf("confluent-%s-%s", mode, c.name)
				if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
					t.Fatalf("create topic: %v", err)
				}
				waitPartitionsLed(t, kcl, topic, partitions)
				want := makeCompatRecords(n, partitions)
				confluentProduce(t, ctx, b.Addr, topic, want, kafka.ConfigMap{
					"compression.type":   c.name,
					"enable.idempotence": idempotent,
				})
				var all []kafka.TopicPartition
				for p := range int32(partitions) {
					all = append(all, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
				}
				got := confluentConsume(t, ctx, b.Addr, all, n)
				checkCompatRecords(t, want, got)
				checkEndOffsets(t, ctx, b.Addr, topic, compatCounts(want))
				checkStoredCompression(t, consumeKgo(t, ctx, b.Addr, topic, []int32{0, 1, 2}, n), c.attr)

				// Again from an offset inside a batch.
				mid := compatFrom(want, 1, compatMidOffset)
				fromMid := confluentConsume(t, ctx, b.Addr,
					[]kafka.TopicPartition{{Topic: &topic, Partition: 1, Offset: kafka.Offset(compatMidOffset)}}, len(mid))
				checkCompatRecords(t, mid, fromMid)
			})
		}
	}
}

func confluentProduce(t *testing.T, ctx context.Context, addr, topic string, want []compatRecord, extra kafka.ConfigMap) {
	t.Helper()
	cfg := kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"client.id":          "samsa-compat",
		"acks":               "all",
		"linger.ms":          5,
		"message.timeout.ms": 30000,
		"log_level":          4,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	defer p.Close()

	// Delivery reports arrive on this channel, one per message; it has room
	// for all of them so librdkafka never blocks on it.
	reports := make(chan kafka.Event, len(want))
	for i, r := range want {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            r.Key,
			Value:          r.Value,
			Opaque:         i,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(m, reports); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	acked := make([]bool, len(want))
	for range want {
		var e kafka.Event
		select {
		case e = <-reports:
		case <-ctx.Done():
			t.Fatalf("waiting for delivery reports: %v", ctx.Err())
		}
		m, ok := e.(*kafka.Message)
		if !ok {
			t.Fatalf("unexpected event on the delivery channel: %v", e)
		}
		i := m.Opaque.(int)
		if m.TopicPartition.Error != nil {
			t.Fatalf("message %d not delivered: %v", i, m.TopicPartition.Error)
		}
		if acked[i] {
			t.Fatalf("two delivery reports for message %d", i)
		}
		acked[i] = true
		if m.TopicPartition.Partition != want[i].Partition || int64(m.TopicPartition.Offset) != want[i].Offset {
			t.Errorf("message %d delivered at %d@%d, want %d@%d", i,
				m.TopicPartition.Partition, m.TopicPartition.Offset, want[i].Partition, want[i].Offset)
		}
	}
	if left := p.Flush(10000); left != 0 {
		t.Fatalf("%d messages still queued after flush", left)
	}
}

// confluentConsume assigns the given partitions (with their start offsets)
// and reads n messages.
func confluentConsume(t *testing.T, ctx context.Context, addr string, tps []kafka.TopicPartition, n int) []compatRecord {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": addr,
		"client.id":         "samsa-compat",
		// confluent-kafka-go requires a group id even for a consumer that
		// only assigns partitions; no group requests are made without
		// Subscribe and with auto-commit off.
		"group.id":             "samsa-compat-unused",
		"enable.auto.commit":   false,
		"auto.offset.reset":    "error",
		"enable.partition.eof": false,
		"fetch.wait.max.ms":    200,
		"log_level":            4,
	})
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	defer c.Close()
	if err := c.Assign(tps); err != nil {
		t.Fatalf("assign: %v", err)
	}
	var out []compatRecord
	for len(out) < n {
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(out), n, err)
		}
		m, err := c.ReadMessage(100 * time.Millisecond)
		if err != nil {
			var kerr kafka.Error
			if errors.As(err, &kerr) && kerr.Code() == kafka.ErrTimedOut {
				continue
			}
			t.Fatalf("consumed %d of %d: %v", len(out), n, err)
		}
		g := compatRecord{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Key: m.Key, Value: m.Value}
		for _, h := range m.Headers {
			g.Headers = append(g.Headers, compatHeader{Key: h.Key, Value: h.Value})
		}
		out = append(out, g)
	}
	return out
}
