package test

// Hostile and malformed input against a real in-process broker over raw
// TCP (INVARIANTS.md, "Bad input"): a request that cannot be parsed closes
// the connection without a response; a well-formed request carrying bad
// records is answered with the Kafka error code for that partition alone.
// After each case a well-behaved franz-go client must still produce and
// consume.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

const (
	// badTimeout bounds every read or write of a raw connection; a
	// connection the broker should close must be closed within it.
	badTimeout = 10 * time.Second
	// badTopic has two partitions for the record validation cases.
	badTopic = "bad-input"
	// badSmallTopic has max.message.bytes=1024.
	badSmallTopic = "bad-input-small"
	// badHealthTopic is where the well-behaved client checks the broker.
	badHealthTopic = "bad-input-health"
)

// badConn is a client connection that writes arbitrary bytes.
type badConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
	// slow, if longer than badTimeout, is how long a response may take:
	// work the broker must do in full before refusing (a gzip bomb
	// inflated to its cap takes seconds under the race detector, and
	// several times that on a loaded CI machine).
	slow time.Duration
}

func dialBad(t *testing.T, addr string) *badConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, badTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &badConn{t: t, c: c}
}

func (rc *badConn) write(b []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(badTimeout))
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// frame encodes req as a request frame with the next correlation id.
func (rc *badConn) frame(req kmsg.Request) []byte {
	rc.corr++
	id := "bad-input-test"
	return protocol.AppendRequest(nil, req, rc.corr, &id)
}

// roundTrip sends req and decodes its response.
func (rc *badConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	rc.write(rc.frame(req))
	return rc.readResponse(req, rc.corr)
}

// readResponse reads one response to req, sent with correlation id corr,
// within badTimeout or rc.slow.
func (rc *badConn) readResponse(req kmsg.Request, corr int32) kmsg.Response {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(max(badTimeout, rc.slow)))
	frame, err := protocol.ReadResponse(rc.c, 64<<20)
	if err != nil {
		rc.t.Fatalf("read response to key %d v%d: %v", req.Key(), req.GetVersion(), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	got, err := protocol.DecodeResponse(frame, resp)
	if err != nil {
		rc.t.Fatalf("decode response: %v", err)
	}
	if got != corr {
		rc.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	return resp
}

// expectClosed requires the broker to close the connection without sending
// a byte.
func (rc *badConn) expectClosed() {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(badTimeout))
	buf := make([]byte, 512)
	n, err := rc.c.Read(buf)
	var ne net.Error
	switch {
	case n > 0:
		rc.t.Fatalf("got %d bytes (% x...), want the connection closed without a response", n, buf[:min(n, 16)])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		// Closed (a reset when our unread bytes were still queued).
	case errors.As(err, &ne) && ne.Timeout():
		rc.t.Fatalf("connection still open after %v, want it closed", badTimeout)
	default:
		rc.t.Fatalf("read: %v, want EOF or a reset", err)
	}
}

// badApiVersionsV3 is a well-formed ApiVersions v3 request.
func badApiVersionsV3() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "0"
	return req
}

// badCRCTable is the CRC-32C table of record batches.
var badCRCTable = crc32.MakeTable(crc32.Castagnoli)

// Offsets of v2 record batch header fields.
const (
	badBatchLengthAt     = 8
	badBatchMagicAt      = 16
	badBatchCRCAt        = 17
	badBatchAttributesAt = 21
	badBatchLastDeltaAt  = 23
	badBatchCountAt      = 57
	badBatchHeaderSize   = 61
)

// badBatch encodes an uncompressed v2 record batch of n records with
// values of valueSize bytes, timestamped now, without a producer id.
func badBatch(n, valueSize int) []byte {
	now := time.Now().UnixMilli()
	b := make([]byte, badBatchHeaderSize)
	binary.BigEndian.PutUint32(b[12:], 0)                   // partition leader epoch
	b[badBatchMagicAt] = 2                                  // magic
	binary.BigEndian.PutUint16(b[badBatchAttributesAt:], 0) // attributes
	binary.BigEndian.PutUint32(b[badBatchLastDeltaAt:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(now))            // base timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(now))            // max timestamp
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))             // producer id -1
	binary.BigEndian.PutUint16(b[51:], ^uint16(0))             // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], ^uint32(0))             // base sequence -1
	binary.BigEndian.PutUint32(b[badBatchCountAt:], uint32(n)) // record count
	for i := range n {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(valueSize))
		for j := range valueSize {
			body = append(body, byte('a'+(i+j)%26))
		}
		body = binary.AppendVarint(body, 0) // no headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[badBatchLengthAt:], uint32(len(b)-12))
	badFixCRC(b)
	return b
}

// badFixCRC recomputes a batch's CRC-32C after its fields were changed.
func badFixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[badBatchCRCAt:], crc32.Checksum(b[badBatchAttributesAt:], badCRCTable))
}

// badPart is one partition's records in a Produce request.
type badPart struct {
	topic     string
	partition int32
	records   []byte
}

// badProduceRequest builds a Produce v9 request, one topic entry per
// badPart.
func badProduceRequest(acks int16, parts ...badPart) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = 10000
	for _, p := range parts {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = p.topic
		tp := kmsg.NewProduceRequestTopicPartition()
		tp.Partition, tp.Records = p.partition, p.records
		t.Partitions = append(t.Partitions, tp)
		req.Topics = append(req.Topics, t)
	}
	return req
}

// badProduceCodes returns the per-partition error codes of a Produce
// response, in request order.
func badProduceCodes(resp kmsg.Response) []int16 {
	var codes []int16
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// badInputEnv is the broker the bad input cases run against.
type badInputEnv struct {
	b   *Broker
	adm *kadm.Client
	// healthy counts the health checks, to give each a unique value.
	healthy atomic.Int64
}

// endOffsets returns the end offset of each partition of topic.
func (e *badInputEnv) endOffsets(t *testing.T, topic string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), badTimeout)
	defer cancel()
	lo, err := e.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	var out []int64
	for p := int32(0); ; p++ {
		o, ok := lo.Lookup(topic, p)
		if !ok {
			return out
		}
		out = append(out, o.Offset)
	}
}

// checkHealthy produces one record with a fresh franz-go client and reads
// it back with another.
func (e *badInputEnv) checkHealthy(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := fmt.Appendf(nil, "healthy-%d", e.healthy.Add(1))
	pcl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	r, err := pcl.ProduceSync(ctx, &kgo.Record{Topic: badHealthTopic, Value: value}).First()
	if err != nil {
		t.Fatalf("health check: produce: %v", err)
	}
	ccl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{badHealthTopic: {r.Partition: kgo.NewOffset().At(r.Offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer ccl.Close()
	for {
		fs := ccl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("health check: record at offset %d not consumed: %v", r.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("health check: fetch: %v", err) })
		var got []byte
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset == r.Offset {
				got = rec.Value
			}
		})
		if got != nil {
			if string(got) != string(value) {
				t.Fatalf("health check: offset %d holds %q, want %q", r.Offset, got, value)
			}
			return
		}
	}
}

func startBadInputEnv(t *testing.T) *badInputEnv {
	return newBadInputEnv(t, StartBroker(t))
}

// newBadInputEnv creates the bad-input topics on b.
func newBadInputEnv(t *testing.T, b *Broker) *badInputEnv {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	small := "1024"
	e2eCreateTopic(ctx, t, b.Addr, badTopic, 2, nil)
	e2eCreateTopic(ctx, t, b.Addr, badSmallTopic, 1, map[string]*string{"max.message.bytes": &small})
	e2eCreateTopic(ctx, t, b.Addr, badHealthTopic, 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &badInputEnv{b: b, adm: kadm.NewClient(cl)}
}

// TestBadInput sends one kind of bad input per subtest over a raw
// connection and checks the broker's answer: a closed connection, or the
// Kafka error code. Each subtest ends with a health check.
func TestBadInput(t *testing.T) {
	e := startBadInputEnv(t)
	rng := rand.New(rand.NewPCG(1, 2))

	// closes: the bytes must make the broker close the connection
	// without answering.
	closes := func(frame func(rc *badConn) []byte) func(*testing.T, *badConn) {
		return func(t *testing.T, rc *badConn) {
			rc.write(frame(rc))
			rc.expectClosed()
		}
	}
	// patched encodes req and overwrites two bytes of its frame (offset
	// counted from the start of the frame, size prefix included).
	patched := func(req kmsg.Request, at int, v uint16) func(rc *badConn) []byte {
		return func(rc *badConn) []byte {
			b := rc.frame(req)
			binary.BigEndian.PutUint16(b[at:], v)
			return b
		}
	}
	const keyAt, versionAt = 4, 6
	// producesCodes sends a Produce (acks=-1) and checks the error code
	// of each partition and that failed partitions did not grow while
	// successful ones grew by their record count.
	producesCodes := func(acks int16, want []int16, parts ...badPart) func(*testing.T, *badConn) {
		return func(t *testing.T, rc *badConn) {
			before := map[string][]int64{}
			for _, p := range parts {
				before[p.topic] = e.endOffsets(t, p.topic)
			}
			got := badProduceCodes(rc.roundTrip(badProduceRequest(acks, parts...)))
			if !slices.Equal(got, want) {
				t.Fatalf("produce error codes = %v, want %v", got, want)
			}
			grew := map[string][]int64{}
			for _, p := range parts {
				if _, ok := grew[p.topic]; !ok {
					grew[p.topic] = slices.Clone(before[p.topic])
				}
			}
			for i, p := range parts {
				if want[i] == 0 {
					grew[p.topic][p.partition] += int64(binary.BigEndian.Uint32(p.records[badBatchCountAt:]))
				}
			}
			for topic, wantEnds := range grew {
				if ends := e.endOffsets(t, topic); !slices.Equal(ends, wantEnds) {
					t.Errorf("%s end offsets after the produce = %v, want %v (before: %v)", topic, ends, wantEnds, before[topic])
				}
			}
		}
	}
	mutated := func(n int, f func(b []byte)) []byte {
		b := badBatch(n, 10)
		f(b)
		return b
	}
	produceV9 := badProduceRequest(-1, badPart{badTopic, 0, badBatch(1, 10)})

	tests := []struct {
		name string
		run  func(*testing.T, *badConn)
	}{
		{"garbage/http", closes(func(*badConn) []byte {
			// "GET " is a size prefix of 1.2 GB.
			return []byte("GET / HTTP/1.1\r\nHost: samsa\r\n\r\n")
		})},
		{"garbage/random frame", closes(func(*badConn) []byte {
			b := binary.BigEndian.AppendUint32(nil, 64)
			b = binary.BigEndian.AppendUint16(b, 0x7abc) // no such API key
			for len(b) < 4+64 {
				b = append(b, byte(rng.Uint32()))
			}
			return b
		})},
		{"negative frame length", closes(func(*badConn) []byte {
			return []byte{0xff, 0xff, 0xff, 0xfe, 0, 18, 0, 0}
		})},
		{"frame length above socket.request.max.bytes", closes(func(*badConn) []byte {
			return binary.BigEndian.AppendUint32(nil, 104857600+1)
		})},
		{"2 GiB frame length", func(t *testing.T, rc *badConn) {
			// The broker runs in this process: its allocations show in
			// our MemStats. Nothing near 2 GiB may be allocated.
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b := binary.BigEndian.AppendUint32(nil, 1<<31-1)
			rc.write(append(b, make([]byte, 4096)...))
			rc.expectClosed()
			runtime.ReadMemStats(&after)
			const limit = 64 << 20
			if d := after.TotalAlloc - before.TotalAlloc; d > limit {
				t.Errorf("%d MiB allocated while rejecting a 2 GiB frame, want < %d MiB", d>>20, limit>>20)
			}
			if after.HeapAlloc > before.HeapAlloc && after.HeapAlloc-before.HeapAlloc > limit {
				t.Errorf("heap grew by %d MiB while rejecting a 2 GiB frame", (after.HeapAlloc-before.HeapAlloc)>>20)
			}
		}},
		{"empty frame", closes(func(*badConn) []byte {
			return []byte{0, 0, 0, 0}
		})},
		{"frame shorter than a request header", closes(func(*badConn) []byte {
			// key 18, version 3, then half a correlation id.
			return []byte{0, 0, 0, 6, 0, 18, 0, 3, 0, 0}
		})},
		{"unknown API key 9999", closes(patched(kmsg.NewPtrApiVersionsRequest(), keyAt, 9999))},
		{"API key a Kafka broker serves only to controllers (BrokerHeartbeat)", func(t *testing.T, rc *badConn) {
			// The APIs a Kafka broker serves to clients and samsa does
			// not are answered with an error (TestUnservedAPIs).
			req := kmsg.NewPtrBrokerHeartbeatRequest()
			req.SetVersion(1)
			if _, _, ok := badAPIVersionRange(t, e.b.Addr, req.Key()); ok {
				t.Fatal("BrokerHeartbeat is served now: pick another API key samsa does not serve for this case")
			}
			rc.write(rc.frame(req))
			rc.expectClosed()
		}},
		{"Produce v99", closes(patched(produceV9, versionAt, 99))},
		{"Produce v2 (below the supported range)", closes(patched(produceV9, versionAt, 2))},
		{"ApiVersions v99 is answered in v0 with UNSUPPORTED_VERSION", func(t *testing.T, rc *badConn) {
			want := rc.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse)
			b := rc.frame(badApiVersionsV3())
			binary.BigEndian.PutUint16(b[versionAt:], 99)
			rc.write(b)
			v0 := kmsg.NewPtrApiVersionsRequest() // decodes the answer as v0
			got := rc.readResponse(v0, rc.corr).(*kmsg.ApiVersionsResponse)
			if got.ErrorCode != kerr.UnsupportedVersion.Code {
				t.Errorf("error code %d, want UNSUPPORTED_VERSION (35)", got.ErrorCode)
			}
			if !slices.Equal(badAPIKeyRanges(got), badAPIKeyRanges(want)) {
				t.Errorf("v0 answer lists %v, want the v3 list %v", badAPIKeyRanges(got), badAPIKeyRanges(want))
			}
			for _, k := range [][3]int16{{0, 3, 12}, {18, 0, 3}} {
				if !slices.Contains(badAPIKeyRanges(got), k) {
					t.Errorf("v0 answer lacks key %d versions %d..%d: %v", k[0], k[1], k[2], badAPIKeyRanges(got))
				}
			}
			// As in Kafka, the connection stays usable.
			if r := rc.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Errorf("ApiVersions v3 after v99: error code %d", r.ErrorCode)
			}
		}},
		{"Metadata topic count beyond the frame", closes(func(rc *badConn) []byte {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(1)
			b := rc.frame(req) // v1 with no topics ends with int32 topic count 0
			binary.BigEndian.PutUint32(b[len(b)-4:], 1_000_000)
			return b
		})},
		{"Metadata v9 compact topic count beyond the frame", closes(func(rc *badConn) []byte {
			// Header v2 (size, key, version, correlation id, client id,
			// empty tags), then a body claiming 2^28-1 topics (compact
			// array: uvarint n+1) followed by one byte.
			id := "bad-input-test"
			b := binary.BigEndian.AppendUint32(nil, 0)
			b = binary.BigEndian.AppendUint16(b, 3)
			b = binary.BigEndian.AppendUint16(b, 9)
			b = binary.BigEndian.AppendUint32(b, 1)
			b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
			b = append(b, id...)
			b = append(b, 0)
			b = binary.AppendUvarint(b, 1<<28)
			b = append(b, 0)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		})},
		{"trailing bytes after a request body are ignored, as by Kafka", func(t *testing.T, rc *badConn) {
			// librdkafka 2.1+ sends its Metadata for all topics with
			// three bytes more (librdkafka#5049); kafka-go its
			// DescribeAcls v2+ with one.
			req := badApiVersionsV3()
			b := append(rc.frame(req), 0xde, 0xad)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			rc.write(b)
			if resp := rc.readResponse(req, rc.corr).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
				t.Fatalf("ApiVersions with trailing bytes: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
			}
		}},
		{"CRC mismatch fails that partition only", producesCodes(-1, []int16{kerr.CorruptMessage.Code, 0},
			badPart{badTopic, 0, mutated(3, func(b []byte) { b[len(b)-1] ^= 0xff })},
			badPart{badTopic, 1, badBatch(3, 10)},
		)},
		{"batch above max.message.bytes", producesCodes(-1, []int16{kerr.MessageTooLarge.Code},
			badPart{badSmallTopic, 0, badBatch(4, 400)},
		)},
		{"batch within max.message.bytes", producesCodes(-1, []int16{0},
			badPart{badSmallTopic, 0, badBatch(2, 400)},
		)},
		{"magic 1 batch", producesCodes(-1, []int16{kerr.InvalidRecord.Code},
			badPart{badTopic, 0, mutated(2, func(b []byte) { b[badBatchMagicAt] = 1 })},
		)},
		{"magic 3 batch", producesCodes(-1, []int16{kerr.CorruptMessage.Code},
			badPart{badTopic, 0, mutated(2, func(b []byte) { b[badBatchMagicAt] = 3 })},
		)},
		{"record count disagrees with last offset delta", producesCodes(-1, []int16{kerr.InvalidRecord.Code},
			badPart{badTopic, 0, mutated(3, func(b []byte) {
				binary.BigEndian.PutUint32(b[badBatchCountAt:], 4)
				badFixCRC(b)
			})},
		)},
		{"record count above the records present", producesCodes(-1, []int16{kerr.InvalidRecord.Code},
			badPart{badTopic, 0, mutated(3, func(b []byte) {
				binary.BigEndian.PutUint32(b[badBatchCountAt:], 4)
				binary.BigEndian.PutUint32(b[badBatchLastDeltaAt:], 3)
				badFixCRC(b)
			})},
		)},
		{"control batch from a client", producesCodes(-1, []int16{kerr.InvalidRecord.Code},
			badPart{badTopic, 0, mutated(1, func(b []byte) {
				binary.BigEndian.PutUint16(b[badBatchAttributesAt:], 0x20)
				badFixCRC(b)
			})},
		)},
		{"acks=5", producesCodes(5, []int16{kerr.InvalidRequiredAcks.Code, kerr.InvalidRequiredAcks.Code},
			badPart{badTopic, 0, badBatch(1, 10)},
			badPart{badTopic, 1, badBatch(1, 10)},
		)},
		{"acks=0 with a bad batch closes the connection", func(t *testing.T, rc *badConn) {
			before := e.endOffsets(t, badTopic)
			bad := mutated(2, func(b []byte) { b[len(b)-1] ^= 0xff })
			// An ApiVersions request pipelined behind the produce must
			// not be answered: nothing after the failed produce is.
			b := rc.frame(badProduceRequest(0, badPart{badTopic, 0, bad}))
			b = append(b, rc.frame(badApiVersionsV3())...)
			rc.write(b)
			rc.expectClosed()
			if ends := e.endOffsets(t, badTopic); !slices.Equal(ends, before) {
				t.Errorf("end offsets %v, want %v unchanged", ends, before)
			}
		}},
		{"acks=0 with a good batch answers nothing and keeps the connection", func(t *testing.T, rc *badConn) {
			before := e.endOffsets(t, badTopic)
			rc.write(rc.frame(badProduceRequest(0, badPart{badTopic, 1, badBatch(2, 10)})))
			// The next response must be the ApiVersions one (readResponse
			// checks its correlation id).
			if r := rc.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Errorf("ApiVersions after acks=0 produce: error code %d", r.ErrorCode)
			}
			want := []int64{before[0], before[1] + 2}
			WaitFor(t, badTimeout, func() error {
				if ends := e.endOffsets(t, badTopic); !slices.Equal(ends, want) {
					return fmt.Errorf("end offsets %v, want %v", ends, want)
				}
				return nil
			})
		}},
		{"slowloris connections do not block others", func(t *testing.T, rc *badConn) {
			// Half a frame on rc and on more connections, then silence
			// while the broker serves others.
			half := func(c *badConn) (rest []byte) {
				b := c.frame(badApiVersionsV3())
				c.write(b[:len(b)/2])
				return b[len(b)/2:]
			}
			rest := half(rc)
			for range 20 {
				half(dialBad(t, e.b.Addr))
			}
			other := dialBad(t, e.b.Addr)
			if r := other.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Errorf("ApiVersions beside slowloris connections: error code %d", r.ErrorCode)
			}
			e.checkHealthy(t)
			// The slow client finishing its frame gets its answer.
			rc.write(rest)
			if r := rc.readResponse(badApiVersionsV3(), rc.corr).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Errorf("the slow client's ApiVersions: error code %d", r.ErrorCode)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, dialBad(t, e.b.Addr))
			e.checkHealthy(t)
		})
	}
}

// badAPIKeyRanges lists an ApiVersions answer as (key, min, max) triples.
func badAPIKeyRanges(r *kmsg.ApiVersionsResponse) [][3]int16 {
	out := make([][3]int16, len(r.ApiKeys))
	for i, k := range r.ApiKeys {
		out[i] = [3]int16{k.ApiKey, k.MinVersion, k.MaxVersion}
	}
	return out
}

// badAPIVersionRange asks the broker for one key's supported versions.
func badAPIVersionRange(t *testing.T, addr string, key int16) (minV, maxV int16, ok bool) {
	t.Helper()
	rc := dialBad(t, addr)
	r := rc.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse)
	for _, k := range r.ApiKeys {
		if k.ApiKey == key {
			return k.MinVersion, k.MaxVersion, true
		}
	}
	return 0, 0, false
}
