package test

// Helpers shared by the client compatibility, admin, idempotence and
// ListOffsets tests: a deterministic record set and its exact comparison,
// bounded contexts, franz-go clients, raw requests, and a RecordBatch
// builder for hand-made produce requests.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testContext returns a context that ends after d or when the test ends.
func testContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// withinContext runs a blocking client call that takes no context (sarama's
// producer and admin calls) and fails the test if ctx ends first. The call
// is left running then; the test is failing anyway.
func withinContext(t testing.TB, ctx context.Context, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
		return ctx.Err()
	}
}

// compatHeader is a client-neutral record header.
type compatHeader struct {
	Key   string
	Value []byte
}

// compatRecord is a client-neutral record: what a test produces (Offset is
// then the offset it must get) or what it consumed.
type compatRecord struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []compatHeader
}

func (r compatRecord) String() string {
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, fmt.Sprintf("%s=%q", h.Key, h.Value))
	}
	v := r.Value
	if len(v) > 24 {
		v = v[:24]
	}
	return fmt.Sprintf("p%d@%d key=%q value=%q...(%d bytes) headers=[%s]",
		r.Partition, r.Offset, r.Key, v, len(r.Value), strings.Join(hs, " "))
}

// makeCompatRecords returns n records spread round-robin over the given
// number of partitions of a new topic, with the offsets they must get when
// produced in order: record i goes to partition i%partitions at offset
// i/partitions. Keys are unique; values are compressible and of varying
// size; records carry zero to three headers, one of them with a binary
// value.
func makeCompatRecords(n, partitions int) []compatRecord {
	out := make([]compatRecord, n)
	for i := range out {
		r := compatRecord{
			Partition: int32(i % partitions),
			Offset:    int64(i / partitions),
			Key:       []byte(fmt.Sprintf("key-%05d", i)),
		}
		var v bytes.Buffer
		fmt.Fprintf(&v, "value-%05d|", i)
		for j := 0; j < i%13; j++ {
			v.WriteString("the quick brown fox jumps over the lazy dog ")
		}
		r.Value = v.Bytes()
		for h := 0; h < i%4; h++ {
			hv := []byte(fmt.Sprintf("h%d-of-%d", h, i))
			if h == 2 {
				hv = []byte{0, byte(i), 0xff, byte(i >> 8)}
			}
			r.Headers = append(r.Headers, compatHeader{Key: fmt.Sprintf("hdr-%d", h), Value: hv})
		}
		out[i] = r
	}
	return out
}

// compatPartitionOfKey is the partition makeCompatRecords gave the record
// with this key; client partitioners that only see the key use it.
func compatPartitionOfKey(key []byte, partitions int) int {
	var i int
	if _, err := fmt.Sscanf(string(key), "key-%05d", &i); err != nil {
		panic(fmt.Sprintf("unexpected key %q", key))
	}
	return i % partitions
}

// checkCompatRecords compares consumed records with the produced ones,
// exactly and in order within each partition.
func checkCompatRecords(t testing.TB, want, got []compatRecord) {
	t.Helper()
	byPart := func(rs []compatRecord) map[int32][]compatRecord {
		m := map[int32][]compatRecord{}
		for _, r := range rs {
			m[r.Partition] = append(m[r.Partition], r)
		}
		return m
	}
	w, g := byPart(want), byPart(got)
	for p, gs := range g {
		if _, ok := w[p]; !ok {
			t.Errorf("consumed %d records from partition %d, produced none there", len(gs), p)
		}
	}
	for p, ws := range w {
		gs := g[p]
		if len(gs) != len(ws) {
			t.Errorf("partition %d: consumed %d records, want %d", p, len(gs), len(ws))
		}
		for i := 0; i < len(ws) && i < len(gs); i++ {
			if err := compareCompatRecord(ws[i], gs[i]); err != nil {
				t.Errorf("partition %d record %d: %v\n got  %v\n want %v", p, i, err, gs[i], ws[i])
				return // later records would only repeat the same misalignment
			}
		}
	}
}

func compareCompatRecord(want, got compatRecord) error {
	switch {
	case got.Partition != want.Partition:
		return fmt.Errorf("partition %d, want %d", got.Partition, want.Partition)
	case got.Offset != want.Offset:
		return fmt.Errorf("offset %d, want %d", got.Offset, want.Offset)
	case !bytes.Equal(got.Key, want.Key):
		return fmt.Errorf("key %q, want %q", got.Key, want.Key)
	case !bytes.Equal(got.Value, want.Value):
		return fmt.Errorf("value differs (%d bytes, want %d)", len(got.Value), len(want.Value))
	case len(got.Headers) != len(want.Headers):
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		if got.Headers[i].Key != want.Headers[i].Key || !bytes.Equal(got.Headers[i].Value, want.Headers[i].Value) {
			return fmt.Errorf("header %d is %s=%q, want %s=%q", i,
				got.Headers[i].Key, got.Headers[i].Value, want.Headers[i].Key, want.Headers[i].Value)
		}
	}
	return nil
}

// compatMidOffset is where the tests start reading a partition a second
// time: inside a batch, so the broker returns the whole batch and the
// client must skip the records before it.
const compatMidOffset = 37

// compatFrom returns the records of one partition from an offset on.
func compatFrom(rs []compatRecord, partition int32, offset int64) []compatRecord {
	var out []compatRecord
	for _, r := range rs {
		if r.Partition == partition && r.Offset >= offset {
			out = append(out, r)
		}
	}
	return out
}

// compatCounts returns the number of records per partition.
func compatCounts(rs []compatRecord) map[int32]int64 {
	m := map[int32]int64{}
	for _, r := range rs {
		m[r.Partition]++
	}
	return m
}

// newKgoClient returns a franz-go client closed when the test ends.
func newKgoClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("new franz-go client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// checkEndOffsets asserts each partition's high watermark (ListOffsets -1,
// asked directly, not from a client cache): no record was lost or stored
// twice.
func checkEndOffsets(t testing.TB, ctx context.Context, addr, topic string, want map[int32]int64) {
	t.Helper()
	cl := newKgoClient(t, addr)
	defer cl.Close()
	for p, w := range want {
		got := listOffsetRaw(t, ctx, cl, topic, p, -1, -1)
		if got.ErrorCode != 0 || got.Offset != w {
			t.Errorf("%s[%d]: end offset %d (error %d), want %d", topic, p, got.Offset, got.ErrorCode, w)
		}
	}
}

// brokerOne returns a handle that sends requests straight to broker 1 (the
// harness's node id), bypassing the client's request routing and its
// metadata cache: a topic the client cached as unknown (or as it was before
// a delete) is still asked about. The metadata request makes sure the client
// knows broker 1.
func brokerOne(t testing.TB, ctx context.Context, cl *kgo.Client) *kgo.Broker {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	return cl.Broker(1)
}

// listOffsetRaw sends one ListOffsets request (the highest version both
// sides support) for one partition to broker 1 and returns the partition's
// answer.
func listOffsetRaw(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, partition int32, timestamp int64, currentLeaderEpoch int32) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, timestamp, currentLeaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := brokerOne(t, ctx, cl).Request(ctx, req)
	if err != nil {
		t.Fatalf("ListOffsets %s[%d] ts %d: %v", topic, partition, timestamp, err)
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %s[%d]: want one topic and partition in the response, got %+v", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// metadataRaw sends a Metadata request for the given topics straight to a
// broker (no client cache), with or without allowing auto-creation.
func metadataRaw(t testing.TB, ctx context.Context, cl *kgo.Client, allowAutoCreate bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = allowAutoCreate
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata %v: %v", topics, err)
	}
	return resp
}

// topicMetadata returns the Metadata answer for one topic.
func topicMetadata(t testing.TB, ctx context.Context, cl *kgo.Client, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	resp := metadataRaw(t, ctx, cl, false, topic)
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == topic {
			return rt
		}
	}
	t.Fatalf("Metadata response does not mention topic %q: %+v", topic, resp.Topics)
	return kmsg.MetadataResponseTopic{}
}

// waitPartitionsLed waits until the broker answers ListOffsets for every
// partition of a topic without error, i.e. the replicas are open and lead.
// Topic creation returns once the metadata is written; the broker opens the
// replicas right after, asynchronously (as Kafka does).
func waitPartitionsLed(t testing.TB, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	ctx := testContext(t, 20*time.Second)
	WaitFor(t, 15*time.Second, func() error {
		for p := range partitions {
			if got := listOffsetRaw(t, ctx, cl, topic, p, -1, -1); got.ErrorCode != 0 {
				return fmt.Errorf("%s[%d]: %v", topic, p, kerr.ErrorForCode(got.ErrorCode))
			}
		}
		return nil
	})
}

// wantKerr fails the test unless err is the Kafka error want.
func wantKerr(t testing.TB, what string, err error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// rawRecord is one record of a hand-built batch.
type rawRecord struct {
	Key, Value []byte
	Headers    []kmsg.Header
	// TimestampDelta is added to the batch's first timestamp.
	TimestampDelta int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildRecordBatch encodes an uncompressed v2 RecordBatch (magic 2,
// CreateTime) with the given producer id, epoch and base sequence (use -1,
// -1, -1 for a non-idempotent batch). The base offset and partition leader
// epoch are left for the broker to assign; the CRC-32C covers the bytes
// from the attributes on.
func buildRecordBatch(producerID int64, producerEpoch int16, baseSequence int32, firstTimestamp int64, recs []rawRecord) []byte {
	var body []byte
	maxTs := firstTimestamp
	for i, r := range recs {
		rec := kmsg.Record{
			TimestampDelta64: r.TimestampDelta,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
			Headers:          r.Headers,
		}
		// Length is everything after the length varint: encode with length
		// 0 (a one-byte varint) to measure, then for real.
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		body = rec.AppendTo(body)
		maxTs = max(maxTs, firstTimestamp+r.TimestampDelta)
	}
	batch := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       firstTimestamp,
		MaxTimestamp:         maxTs,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		FirstSequence:        baseSequence,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	b := batch.AppendTo(nil)
	// Length counts the bytes after the length field (offset 8..12); the
	// CRC (offset 17..21) covers attributes (offset 21) to the end.
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], castagnoli))
	return b
}

// produceRaw sends one hand-built batch to one partition of broker 1 with
// acks=all and returns the partition's answer.
func produceRaw(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := brokerOne(t, ctx, cl).Request(ctx, req)
	if err != nil {
		t.Fatalf("Produce %s[%d]: %v", topic, partition, err)
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce %s[%d]: want one topic and partition in the response, got %+v", topic, partition, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// consumeKgo reads n records from the start of the given partitions of a
// topic with franz-go's direct (group-less) consumer.
func consumeKgo(t testing.TB, ctx context.Context, addr, topic string, partitions []int32, n int) []*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for _, p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgoClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s%v: consumed %d of %d records: %v", topic, partitions, len(out), n, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", tp, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// kgoToCompat converts consumed franz-go records.
func kgoToCompat(rs []*kgo.Record) []compatRecord {
	out := make([]compatRecord, 0, len(rs))
	for _, r := range rs {
		g := compatRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			g.Headers = append(g.Headers, compatHeader{Key: h.Key, Value: h.Value})
		}
		out = append(out, g)
	}
	return out
}

// Compression codecs as they appear in a batch's attributes.
const (
	codecNone   uint8 = 0
	codecGzip   uint8 = 1
	codecSnappy uint8 = 2
	codecLz4    uint8 = 3
	codecZstd   uint8 = 4
)

// checkStoredCompression checks the codec of the stored batches, from the
// records franz-go read back: with codec none, every batch is uncompressed; otherwise
// at least one batch uses the codec and none uses another one (a client
// may send a batch uncompressed when compressing would not shrink it).
// samsa stores batches as the producer sent them, so this shows that the
// client really compressed and the broker kept the bytes.
func checkStoredCompression(t testing.TB, recs []*kgo.Record, codec uint8) {
	t.Helper()
	seen := map[uint8]int{}
	for _, r := range recs {
		seen[r.Attrs.CompressionType()]++
	}
	for c, k := range seen {
		if c != codec && c != codecNone {
			t.Errorf("%d records stored with codec %d, want codec %d", k, c, codec)
		}
	}
	if seen[codec] == 0 {
		t.Errorf("no record stored with codec %d; codecs seen (codec: records): %v", codec, seen)
	}
}
