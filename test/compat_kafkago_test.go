package test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestCompatKafkaGo creates a three-partition topic with kafka-go's
// Conn.CreateTopics on a connection to the controller (CreateTopics from
// kafka-go), writes records with keys, values and headers through a Writer
// and reads each partition back with a partition Reader (no group), once
// per compression codec, with RequiredAcks all and with the zero Writer's
// acks=none (the broker sends no produce response; every record must still
// arrive). Records must come back exactly, in order, at consecutive offsets
// from 0.
func TestCompatKafkaGo(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 100*time.Second)
	kcl := newKgoClient(t, b.Addr)

	const n, partitions = 300, 3
	codecs := []struct {
		name  string
		codec kafka.Compression
		attr  uint8
	}{
		{"none", 0, codecNone},
		{"gzip", kafka.Gzip, codecGzip},
		{"snappy", kafka.Snappy, codecSnappy},
		{"lz4", kafka.Lz4, codecLz4},
		{"zstd", kafka.Zstd, codecZstd},
	}
	acks := []struct {
		name string
		acks kafka.RequiredAcks
	}{
		{"acks-all", kafka.RequireAll},
		{"acks-none", kafka.RequireNone}, // the zero Writer's default
	}
	for _, a := range acks {
		for _, c := range codecs {
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				topic := fmt.Sprintf("kafkago-%s-%s", a.name, c.name)
				kafkaGoCreateTopic(t, ctx, b.Addr, topic, partitions)
				waitPartitionsLed(t, kcl, topic, partitions)

				want := makeCompatRecords(n, partitions)
				transport := &kafka.Transport{}
				defer transport.CloseIdleConnections()
				w := &kafka.Writer{
					Addr:         kafka.TCP(b.Addr),
					Topic:        topic,
					Transport:    transport,
					RequiredAcks: a.acks,
					Compression:  c.codec,
					// The partition comes from the key; see makeCompatRecords.
					Balancer: kafka.BalancerFunc(func(m kafka.Message, ps ...int) int {
						return compatPartitionOfKey(m.Key, len(ps))
					}),
					BatchSize:    n,
					BatchTimeout: 10 * time.Millisecond,
				}
				msgs := make([]kafka.Message, len(want))
				for i, r := range want {
					m := kafka.Message{Key: r.Key, Value: r.Value}
					for _, h := range r.Headers {
						m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
					}
					msgs[i] = m
				}
				if err := w.WriteMessages(ctx, msgs...); err != nil {
					w.Close()
					t.Fatalf("write messages: %v", err)
				}
				if err := w.Close(); err != nil {
					t.Fatalf("close writer: %v", err)
				}

				counts := compatCounts(want)
				var got []compatRecord
				for p := range int32(partitions) {
					got = append(got, kafkaGoReadPartition(t, ctx, b.Addr, topic, p, kafka.FirstOffset, counts[p])...)
				}
				checkCompatRecords(t, want, got)
				checkEndOffsets(t, ctx, b.Addr, topic, counts)
				checkStoredCompression(t, consumeKgo(t, ctx, b.Addr, topic, []int32{0, 1, 2}, n), c.attr)

				// Again from an offset inside a batch.
				mid := compatFrom(want, 1, compatMidOffset)
				checkCompatRecords(t, mid, kafkaGoReadPartition(t, ctx, b.Addr, topic, 1, compatMidOffset, int64(len(mid))))
			})
		}
	}
}

// kafkaGoCreateTopic creates a topic the way kafka-go programs do: find the
// controller over one connection, then CreateTopics on a connection to it.
func kafkaGoCreateTopic(t *testing.T, ctx context.Context, addr, topic string, partitions int) {
	t.Helper()
	dialer := &kafka.Dialer{Timeout: 10 * time.Second}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	controller, err := conn.Controller()
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	if controller.ID != 1 {
		t.Errorf("controller id %d, want 1", controller.ID)
	}
	cc, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(controller.Host, strconv.Itoa(controller.Port)))
	if err != nil {
		t.Fatalf("dial controller %s:%d: %v", controller.Host, controller.Port, err)
	}
	defer cc.Close()
	if deadline, ok := ctx.Deadline(); ok {
		cc.SetDeadline(deadline)
	}
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	ps, err := cc.ReadPartitions(topic)
	if err != nil {
		t.Fatalf("read partitions of %s: %v", topic, err)
	}
	if len(ps) != partitions {
		t.Fatalf("topic %s has %d partitions, want %d", topic, len(ps), partitions)
	}
}

// kafkaGoReadPartition reads n messages of one partition from an offset (or
// kafka.FirstOffset) on with a partition Reader.
func kafkaGoReadPartition(t *testing.T, ctx context.Context, addr, topic string, partition int32, offset, n int64) []compatRecord {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: int(partition),
		MinBytes:  1,
		MaxBytes:  10 << 20,
		MaxWait:   200 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		t.Fatalf("set offset %d: %v", offset, err)
	}
	var out []compatRecord
	for int64(len(out)) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("%s[%d]: read message %d of %d: %v", topic, partition, len(out), n, err)
		}
		g := compatRecord{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value}
		for _, h := range m.Headers {
			g.Headers = append(g.Headers, compatHeader{Key: h.Key, Value: h.Value})
		}
		out = append(out, g)
	}
	return out
}
