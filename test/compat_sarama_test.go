package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompatSarama creates a three-partition topic through sarama's
// ClusterAdmin (CreateTopics from sarama), produces records with keys,
// values and headers through a SyncProducer (acks=all, manual partitioner),
// and reads every partition back with a PartitionConsumer, once per
// compression codec and per protocol version (sarama's default Version and
// V3_6_0_0). Records must come back exactly, in order, at the offsets the
// producer reported. The "idempotent" subtest runs sarama's idempotent
// producer (InitProducerId, sequence numbers).
func TestCompatSarama(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 100*time.Second)
	kcl := newKgoClient(t, b.Addr)

	const n, partitions = 300, 3
	codecs := []struct {
		name  string
		codec sarama.CompressionCodec
		attr  uint8
	}{
		{"none", sarama.CompressionNone, codecNone},
		{"gzip", sarama.CompressionGZIP, codecGzip},
		{"snappy", sarama.CompressionSnappy, codecSnappy},
		{"lz4", sarama.CompressionLZ4, codecLz4},
		{"zstd", sarama.CompressionZSTD, codecZstd},
	}
	versions := []struct {
		name    string
		version sarama.KafkaVersion
	}{
		{"default", sarama.NewConfig().Version},
		{"v3.6", sarama.V3_6_0_0},
	}
	for _, v := range versions {
		for _, c := range codecs {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				topic := fmt.Sprintf("sarama-%s-%s", v.name, c.name)
				cfg := saramaConfig(v.version)
				cfg.Producer.Compression = c.codec
				runSaramaRoundTrip(t, ctx, b.Addr, kcl, topic, cfg, n, partitions, c.attr)
			})
		}
	}
	t.Run("idempotent", func(t *testing.T) {
		cfg := saramaConfig(sarama.V3_6_0_0)
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Compression = sarama.CompressionZSTD
		runSaramaRoundTrip(t, ctx, b.Addr, kcl, "sarama-idempotent", cfg, n, partitions, codecZstd)
	})
}

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "samsa-compat"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Admin.Timeout = 10 * time.Second
	return cfg
}

func runSaramaRoundTrip(t *testing.T, ctx context.Context, addr string, kcl *kgo.Client, topic string, cfg *sarama.Config, n, partitions int, codec uint8) {
	addrs := []string{addr}
	adm, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	err = withinContext(t, ctx, "create topic", func() error {
		return adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: 1}, false)
	})
	adm.Close()
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitionsLed(t, kcl, topic, int32(partitions))

	want := makeCompatRecords(n, partitions)
	prod, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("sync producer: %v", err)
	}
	msgs := make([]*sarama.ProducerMessage, len(want))
	for i, w := range want {
		m := &sarama.ProducerMessage{
			Topic:     topic,
			Partition: w.Partition,
			Key:       sarama.ByteEncoder(w.Key),
			Value:     sarama.ByteEncoder(w.Value),
		}
		for _, h := range w.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i] = m
	}
	// SendMessages hands all messages to the producer at once, so they are
	// batched (and compressed) together; it blocks until every one is
	// acknowledged.
	if err := withinContext(t, ctx, "send messages", func() error { return prod.SendMessages(msgs) }); err != nil {
		prod.Close()
		t.Fatalf("send messages: %v", err)
	}
	if err := prod.Close(); err != nil {
		t.Fatalf("close producer: %v", err)
	}
	for i, m := range msgs {
		if m.Partition != want[i].Partition || m.Offset != want[i].Offset {
			t.Fatalf("message %d acknowledged at %d@%d, want %d@%d", i, m.Partition, m.Offset, want[i].Partition, want[i].Offset)
		}
	}

	consumer, err := sarama.NewConsumer(addrs, cfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	counts := compatCounts(want)
	// All partition consumers run at once (they share the broker's fetch
	// requests); each is then read to its end.
	pcs := make([]sarama.PartitionConsumer, partitions)
	for p := range int32(partitions) {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume partition %d: %v", p, err)
		}
		pcs[p] = pc
	}
	defer func() {
		for _, pc := range pcs {
			pc.Close() // a second Close is harmless
		}
	}()
	var got []compatRecord
	for p, pc := range pcs {
		got = append(got, saramaRead(t, ctx, pc, int(counts[int32(p)]))...)
		if hwm := pc.HighWaterMarkOffset(); hwm != counts[int32(p)] {
			t.Errorf("partition %d: consumer's high watermark %d, want %d", p, hwm, counts[int32(p)])
		}
	}
	for p, pc := range pcs {
		if err := pc.Close(); err != nil {
			t.Errorf("close partition consumer %d: %v", p, err)
		}
	}
	checkCompatRecords(t, want, got)
	checkEndOffsets(t, ctx, addr, topic, counts)

	// Again from an offset inside a batch.
	mid := compatFrom(want, 1, compatMidOffset)
	pc, err := consumer.ConsumePartition(topic, 1, compatMidOffset)
	if err != nil {
		t.Fatalf("consume partition 1 from %d: %v", compatMidOffset, err)
	}
	defer pc.Close()
	fromMid := saramaRead(t, ctx, pc, len(mid))
	checkCompatRecords(t, mid, fromMid)
	checkStoredCompression(t, consumeKgo(t, ctx, addr, topic, []int32{0, 1, 2}, n), codec)
}

// saramaRead reads n messages from a partition consumer.
func saramaRead(t *testing.T, ctx context.Context, pc sarama.PartitionConsumer, n int) []compatRecord {
	t.Helper()
	var out []compatRecord
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			g := compatRecord{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
			for _, h := range m.Headers {
				g.Headers = append(g.Headers, compatHeader{Key: string(h.Key), Value: h.Value})
			}
			out = append(out, g)
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d: %v", len(out), n, ctx.Err())
		}
	}
	return out
}
