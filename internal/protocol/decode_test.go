package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordBatch returns a v2 record batch of about size bytes. The protocol
// layer never looks inside it, so the records are filler.
func recordBatch(size int) []byte {
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = 0
	b.NumRecords = 1
	b.ProducerID = -1
	b.ProducerEpoch = -1
	b.FirstSequence = -1
	b.Records = bytes.Repeat([]byte{0x5a}, size-61)
	b.Length = int32(size - 12)
	return b.AppendTo(nil)
}

func produceRequest(version int16, batchSize int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 30000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "orders"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = 3
	p.Records = recordBatch(batchSize)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func fetchRequest(version int16, partitions int) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = "orders"
	for i := range partitions {
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = int32(i)
		p.FetchOffset = 1 << 20
		p.CurrentLeaderEpoch = 7
		p.LastFetchedEpoch = 7
		p.PartitionMaxBytes = 1 << 20
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// seedRequests are valid requests for several keys, old and flexible
// versions.
func seedRequests() []kmsg.Request {
	apiVersions := func(v int16) kmsg.Request {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version = v
		r.ClientSoftwareName, r.ClientSoftwareVersion = "samsa", "1.0"
		return r
	}
	findCoordinator := func(v int16) kmsg.Request {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorKey = "group"
		r.CoordinatorKeys = []string{"group", "other"}
		return r
	}
	joinGroup := func(v int16) kmsg.Request {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version = v
		r.Group, r.ProtocolType = "group", "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 1, 0, 1, 't'}
		r.Protocols = append(r.Protocols, p)
		return r
	}
	offsetCommit := func(v int16) kmsg.Request {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = v
		r.Group = "group"
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = 1, 42
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	return []kmsg.Request{
		apiVersions(0), apiVersions(3),
		metadataRequest(1, "a", "b"), metadataRequest(12, "a"),
		produceRequest(3, 300), produceRequest(9, 300),
		fetchRequest(4, 2), fetchRequest(12, 2),
		findCoordinator(0), findCoordinator(4),
		joinGroup(5), joinGroup(7),
		offsetCommit(2), offsetCommit(8),
		kmsg.NewPtrSASLHandshakeRequest(),
	}
}

func TestDecodeSeedRequests(t *testing.T) {
	d := decoder{versions: kmsgVersions}
	for _, req := range seedRequests() {
		frame := AppendRequest(nil, req, 5, &testClientID)[4:]
		got, err := d.decode(frame)
		if err != nil {
			t.Fatalf("key %d v%d: %v", req.Key(), req.GetVersion(), err)
		}
		if !bytes.Equal(got.Body.AppendTo(nil), req.AppendTo(nil)) {
			t.Fatalf("key %d v%d: decoded body encodes differently", req.Key(), req.GetVersion())
		}
		if got.CorrelationID != 5 || got.ClientID == nil || *got.ClientID != testClientID {
			t.Fatalf("key %d v%d: header %d %v", req.Key(), req.GetVersion(), got.CorrelationID, got.ClientID)
		}
	}
}

// TestDecodeEveryKeyAndVersion: every request kmsg knows decodes from its
// own encoding, at every version.
func TestDecodeEveryKeyAndVersion(t *testing.T) {
	d := decoder{versions: kmsgVersions}
	n := 0
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			frame := AppendRequest(nil, req, 1, nil)[4:]
			if _, err := d.decode(frame); err != nil {
				t.Errorf("key %d v%d: %v", key, v, err)
			}
			n++
		}
	}
	t.Logf("%d key/version pairs decoded", n)
}

// Bytes after the last field are ignored, as Kafka ignores them: the
// request decodes as without them (Produce records intact). librdkafka
// 2.1+ sends Metadata v12 for all topics as four zero bytes where the null
// topic array is one (librdkafka#5049): three bytes too many, read as
// Kafka reads them.
func TestDecodeTrailingBytes(t *testing.T) {
	d := decoder{versions: kmsgVersions}
	for _, req := range []kmsg.Request{produceRequest(3, 300), produceRequest(9, 300), metadataRequest(12, "a")} {
		frame := append(AppendRequest(nil, req, 1, nil)[4:], 0, 1, 2)
		got, err := d.decode(frame)
		if err != nil {
			t.Fatalf("key %d v%d with trailing bytes: %v", req.Key(), req.GetVersion(), err)
		}
		if p, ok := got.Body.(*kmsg.ProduceRequest); ok && len(p.Topics[0].Partitions[0].Records) != 300 {
			t.Fatalf("produce v%d: %d record bytes, want 300", p.Version, len(p.Topics[0].Partitions[0].Records))
		}
		if m, ok := got.Body.(*kmsg.MetadataRequest); ok && (len(m.Topics) != 1 || *m.Topics[0].Topic != "a") {
			t.Fatalf("metadata topics %+v", m.Topics)
		}
	}
	// librdkafka's Metadata v12 body: 00 00 00 00, then its own
	// allow_auto_topic_creation, include_topic_authorized_operations and
	// tag count.
	all := kmsg.NewPtrMetadataRequest()
	all.Version = 12
	hdr := AppendRequest(nil, all, 7, nil)[4:]
	hdr = hdr[:len(hdr)-4] // the header alone: drop kmsg's 4-byte v12 body
	frame := append(append([]byte(nil), hdr...), 0, 0, 0, 0, 1, 0, 0)
	got, err := d.decode(frame)
	if err != nil {
		t.Fatalf("librdkafka's Metadata v12: %v", err)
	}
	if m := got.Body.(*kmsg.MetadataRequest); m.Version != 12 || m.Topics != nil {
		t.Fatalf("librdkafka's Metadata v12 decoded as v%d, topics %v; want v12, all topics (null)", m.Version, m.Topics)
	}
}

// heapAllocs returns the bytes allocated so far (runtime/metrics, which
// does not stop the world, unlike ReadMemStats).
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzDecodeRequest decodes arbitrary frames. Decoding must not panic (the
// decoder recovers from panics, so a recovered one is reported here too),
// must allocate in proportion to the frame, and whatever decodes must
// re-encode to a frame that decodes to the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	for i, req := range seedRequests() {
		f.Add(AppendRequest(nil, req, int32(i), &testClientID)[4:])
	}
	// Hostile seeds: huge counts and lengths, an unsupported ApiVersions.
	f.Add(rawFrame(3, 4, kbin.AppendInt32(nil, 1<<31-1), make([]byte, 16))[4:])
	f.Add(rawFrame(3, 12, []byte{0}, kbin.AppendUvarint(nil, 1<<31-1))[4:])
	f.Add(rawFrame(18, 99, []byte{0, 1, 2})[4:])
	f.Add(rawFrame(0, 9, []byte{0, 0, 0xff, 0xff, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})[4:])
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0x7f})

	d := decoder{versions: kmsgVersions}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1<<20 {
			return
		}
		// A decode that never ends would only stall the fuzzer; a panic
		// on another goroutine crashes the worker, which the fuzzer
		// reports together with the input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("decoding %x takes more than 10s", frame)) })
		before := heapAllocs()
		req, err := d.decode(frame)
		allocated := heapAllocs() - before
		watchdog.Stop()
		// 64x covers the worst amplification measured in
		// TestDecodeAllocationBounded. The runtime counts a small
		// allocation that refills a size class's span as the whole
		// span, so a few hundred KiB of slack are noise, not decoding.
		if limit := 64*uint64(len(frame)) + 1<<20; allocated > limit {
			t.Fatalf("%d-byte frame allocated %d bytes (limit %d)", len(frame), allocated, limit)
		}
		if err != nil {
			if errors.Is(err, ErrMalformed) && bytes.Contains([]byte(err.Error()), []byte("decoder panic")) {
				t.Fatalf("decoder panicked: %v", err)
			}
			return
		}
		if req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version {
			t.Fatalf("body key %d v%d, header key %d v%d", req.Body.Key(), req.Body.GetVersion(), req.Key, req.Version)
		}
		if req.UnsupportedVersion != 0 && (req.Key != apiVersionsKey || req.Version != 0) {
			t.Fatalf("unsupported version %d flagged on key %d v%d", req.UnsupportedVersion, req.Key, req.Version)
		}
		again := AppendRequest(nil, req.Body, req.CorrelationID, req.ClientID)[4:]
		req2, err := d.decode(again)
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if third := AppendRequest(nil, req2.Body, req2.CorrelationID, req2.ClientID)[4:]; !bytes.Equal(third, again) {
			t.Fatalf("encoding is not stable:\n%x\n%x", again, third)
		}
	})
}

func BenchmarkFrameDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		req  kmsg.Request
	}{
		{"produce-v9-16KiB", produceRequest(9, 16<<10)},
		{"produce-v3-16KiB", produceRequest(3, 16<<10)},
		{"produce-v9-1MiB", produceRequest(9, 1<<20)},
		{"fetch-v12-1partition", fetchRequest(12, 1)},
		{"fetch-v12-100partitions", fetchRequest(12, 100)},
		{"metadata-v12-10topics", metadataRequest(12, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")},
	} {
		frame := AppendRequest(nil, bc.req, 1, &testClientID)[4:]
		b.Run(bc.name, func(b *testing.B) {
			d := decoder{versions: kmsgVersions}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoundTrip measures a request/response over loopback TCP: one
// client, depth requests pipelined at a time.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name  string
		req   kmsg.Request
		depth int
	}{
		{"apiversions-depth1", kmsg.NewPtrApiVersionsRequest(), 1},
		{"apiversions-depth16", kmsg.NewPtrApiVersionsRequest(), 16},
		{"produce-16KiB-depth1", produceRequest(9, 16<<10), 1},
		{"produce-16KiB-depth16", produceRequest(9, 16<<10), 16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := HandlerFunc(func(_ context.Context, req *Request) Response {
				switch body := req.Body.(type) {
				case *kmsg.ApiVersionsRequest:
					return Response{Body: apiVersionsResponse(req)}
				case *kmsg.ProduceRequest:
					resp := body.ResponseKind().(*kmsg.ProduceResponse)
					for _, t := range body.Topics {
						rt := kmsg.NewProduceResponseTopic()
						rt.Topic = t.Topic
						for _, p := range t.Partitions {
							rp := kmsg.NewProduceResponseTopicPartition()
							rp.Partition = p.Partition
							rt.Partitions = append(rt.Partitions, rp)
						}
						resp.Topics = append(resp.Topics, rt)
					}
					return Response{Body: resp}
				}
				return Response{Close: true, NoResponse: true}
			})
			_, addr := startServer(b, Config{}, h)
			c := dialRaw(b, addr)
			frame := AppendRequest(nil, bc.req, 1, &testClientID)
			var batch []byte
			for range bc.depth {
				batch = append(batch, frame...)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			iterations := 0
			for b.Loop() {
				iterations++
				c.write(batch)
				for range bc.depth {
					if _, err := ReadResponse(c.br, 1<<20); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iterations*bc.depth), "ns/request")
		})
	}
}
