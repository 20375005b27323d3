package test

// More of the hostile-input catalogue (badinput_test.go has the framing
// and record-validation cases): oversized requests of other APIs, records
// built to blow up (a million headers, a decompression bomb), thousands of
// idle connections, and malformed group and transaction requests. Each
// case is followed by the health check: a well-behaved client still
// produces and consumes.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// rebatch returns a v2 batch (as records.Build makes them) whose records
// section is body, claiming count records, with the CRC recomputed; attrs
// sets the attributes (compression codec).
func rebatch(body []byte, count int32, attrs int16) []byte {
	b := records.Build([]records.KV{{Value: []byte("x")}}, time.Now().UnixMilli())[:61]
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	binary.BigEndian.PutUint32(b[23:], uint32(count-1))
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawRecordBytes encodes one record: no key, the value, and a header
// count that need not match the headers present (none are).
func rawRecordBytes(value []byte, headerCount int64) []byte {
	var body []byte
	body = append(body, 0)               // attributes
	body = binary.AppendVarint(body, 0)  // timestamp delta
	body = binary.AppendVarint(body, 0)  // offset delta
	body = binary.AppendVarint(body, -1) // no key
	body = binary.AppendVarint(body, int64(len(value)))
	body = append(body, value...)
	body = binary.AppendVarint(body, headerCount)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// gzipBombFile is the gzip (best compression) of one record as
// rawRecordBytes encodes it: no key, a 200 MiB value of 'a', no headers.
// Kept in testdata because compressing 200 MiB takes tens of seconds
// under the race detector; `go test ./test -run TestBadInputMore/gzip
// -update-bomb` writes it again (byte for byte the same).
const gzipBombFile = "testdata/gzip-bomb-200MB.bin"

var updateBomb = flag.Bool("update-bomb", false, "rewrite "+gzipBombFile)

// gzipBomb returns the bomb, checking that it starts as the record it
// claims to be.
func gzipBomb(t *testing.T) []byte {
	t.Helper()
	const size = 200 << 20
	if *updateBomb {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(rawRecordBytes(bytes.Repeat([]byte("a"), size), 0))
		zw.Close()
		if err := os.WriteFile(gzipBombFile, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(gzipBombFile)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// The record's start: its length, attributes, timestamp and offset
	// deltas, no key, the value's length, then the value.
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, 0)
	body = binary.AppendVarint(body, 0)
	body = binary.AppendVarint(body, -1)
	body = binary.AppendVarint(body, size)
	want := binary.AppendVarint(nil, int64(len(body)+size+1))
	want = append(append(want, body...), bytes.Repeat([]byte("a"), 4096)...)
	head := make([]byte, len(want))
	if _, err := io.ReadFull(zr, head); err != nil || !bytes.Equal(head, want) {
		t.Fatalf("%s does not start with the expected record (%v)", gzipBombFile, err)
	}
	return b
}

func TestBadInputMore(t *testing.T) {
	e := startBadInputEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	compacted := "compact"
	e2eCreateTopic(ctx, t, e.b.Addr, "bad-input-compacted", 1, map[string]*string{"cleanup.policy": &compacted})

	// The group cases need the coordinator up: FindCoordinator creates
	// __consumer_offsets; wait until it answers.
	coordinatorUp := func(t *testing.T, rc *badConn) {
		WaitFor(t, 30*time.Second, func() error {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = "bad-group"
			r := rc.roundTrip(req).(*kmsg.FindCoordinatorResponse)
			return kerr.ErrorForCode(r.ErrorCode)
		})
	}
	groupCode := func(build func() kmsg.Request, code func(kmsg.Response) int16, want int16) func(*testing.T, *badConn) {
		return func(t *testing.T, rc *badConn) {
			coordinatorUp(t, rc)
			var got int16
			WaitFor(t, 30*time.Second, func() error {
				got = code(rc.roundTrip(build()))
				if got == kerr.CoordinatorLoadInProgress.Code {
					return kerr.ErrorForCode(got)
				}
				return nil
			})
			if got != want {
				t.Fatalf("error code %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(want))
			}
		}
	}
	join := func(mod func(r *kmsg.JoinGroupRequest)) func() kmsg.Request {
		return func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.SetVersion(5)
			r.Group, r.ProtocolType = "bad-group", "consumer"
			r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
			r.Protocols = append(r.Protocols, p)
			mod(r)
			return r
		}
	}
	joinCode := func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }

	tests := []struct {
		name string
		run  func(*testing.T, *badConn)
	}{
		{"Metadata frame over the non-Produce cap closes before its body", func(t *testing.T, rc *badConn) {
			rc.write([]byte{0x01, 0x00, 0x00, 0x01, 0, 3, 0, 1}) // 16 MiB + 1, Metadata v1
			rc.expectClosed()
		}},
		{"a record claiming a million headers", func(t *testing.T, rc *badConn) {
			batch := rebatch(rawRecordBytes([]byte("v"), 1_000_000), 1, 0)
			got := badProduceCodes(rc.roundTrip(badProduceRequest(-1, badPart{badTopic, 0, batch})))
			if !slices.Equal(got, []int16{kerr.InvalidRecord.Code}) {
				t.Fatalf("produce error codes %v, want INVALID_RECORD", got)
			}
		}},
		{"a record claiming a negative header count", func(t *testing.T, rc *badConn) {
			batch := rebatch(rawRecordBytes([]byte("v"), -5), 1, 0)
			got := badProduceCodes(rc.roundTrip(badProduceRequest(-1, badPart{badTopic, 0, batch})))
			if !slices.Equal(got, []int16{kerr.InvalidRecord.Code}) {
				t.Fatalf("produce error codes %v, want INVALID_RECORD", got)
			}
		}},
		{"a gzip bomb: 200 MB of records in a 200 KB batch", func(t *testing.T, rc *badConn) {
			bomb := gzipBomb(t)
			batch := rebatch(bomb, 1, 1) // codec 1: gzip
			if len(batch) > 1<<20 {
				t.Fatalf("the bomb is %d bytes, above max.message.bytes", len(batch))
			}
			// The broker runs in this process: what it allocates shows in
			// the process's total, which must stay within a few times the
			// 64 MiB decompression cap (a growing buffer), well below the
			// 400 MB or so that inflating all 200 MB would take.
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rc.slow = time.Minute
			got := badProduceCodes(rc.roundTrip(badProduceRequest(-1, badPart{badTopic, 0, batch})))
			runtime.ReadMemStats(&after)
			if !slices.Equal(got, []int16{kerr.MessageTooLarge.Code}) {
				t.Fatalf("produce error codes %v, want MESSAGE_TOO_LARGE", got)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
				t.Fatalf("the bomb cost %d MiB of allocations", n>>20)
			}
		}},
		{"a keyless record on a compacted topic", func(t *testing.T, rc *badConn) {
			batch := records.Build([]records.KV{{Value: []byte("no key")}}, time.Now().UnixMilli())
			got := badProduceCodes(rc.roundTrip(badProduceRequest(-1, badPart{"bad-input-compacted", 0, batch})))
			if !slices.Equal(got, []int16{kerr.InvalidRecord.Code}) {
				t.Fatalf("produce error codes %v, want INVALID_RECORD", got)
			}
		}},
		// A transactional id on a request whose batches are not
		// transactional changes nothing, as in Kafka: the batch is
		// written as a plain one (txn_hostile_test.go sends the
		// transactional cases).
		{"a plain batch under a transactional id", func(t *testing.T, rc *badConn) {
			req := badProduceRequest(-1, badPart{badTopic, 0, badBatch(1, 10)})
			req.TransactionID = kmsg.StringPtr("txn")
			got := badProduceCodes(rc.roundTrip(req))
			if !slices.Equal(got, []int16{0}) {
				t.Fatalf("produce error codes %v, want [0]", got)
			}
		}},
		{"two thousand idle connections", func(t *testing.T, rc *badConn) {
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range 2000 {
				c, err := net.DialTimeout("tcp", e.b.Addr, badTimeout)
				if err != nil {
					t.Fatalf("connection %d: %v", len(conns), err)
				}
				conns = append(conns, c)
			}
			e.checkHealthy(t) // served beside them
			if r := rc.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Fatalf("ApiVersions beside idle connections: %d", r.ErrorCode)
			}
		}},
		// As Kafka's: the empty group id is a group (errorcodes_test.go).
		{"FindCoordinator with an empty key", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.SetVersion(3)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }, 0)},
		{"FindCoordinator with an unknown key type", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.SetVersion(3)
			r.CoordinatorKey, r.CoordinatorType = "txn", 7
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }, kerr.InvalidRequest.Code)},
		{"JoinGroup with a session timeout above the maximum", groupCode(join(func(r *kmsg.JoinGroupRequest) {
			r.SessionTimeoutMillis = 1 << 30
		}), joinCode, kerr.InvalidSessionTimeout.Code)},
		{"JoinGroup with no protocols", groupCode(join(func(r *kmsg.JoinGroupRequest) {
			r.Protocols = nil
		}), joinCode, kerr.InconsistentGroupProtocol.Code)},
		{"JoinGroup with an empty group id", groupCode(join(func(r *kmsg.JoinGroupRequest) {
			r.Group = ""
		}), joinCode, kerr.InvalidGroupID.Code)},
		{"JoinGroup with a made-up member id", groupCode(join(func(r *kmsg.JoinGroupRequest) {
			r.MemberID = "nobody"
		}), joinCode, kerr.UnknownMemberID.Code)},
		{"SyncGroup of a member that never joined", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = "bad-group", "nobody", 3
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }, kerr.UnknownMemberID.Code)},
		{"Heartbeat with a made-up generation", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "bad-group", "nobody", 99
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, kerr.UnknownMemberID.Code)},
		{"OffsetCommit with metadata above offset.metadata.max.bytes", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.SetVersion(7)
			r.Group, r.Generation = "bad-simple-group", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = badTopic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset, rp.Metadata = 1, kmsg.StringPtr(strings.Repeat("m", 5000))
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.OffsetMetadataTooLarge.Code)},
		// Kafka's OffsetMetadataManager.validateOffsetCommit: a generation
		// of a group that does not exist (errorcodes_test.go).
		{"OffsetCommit from a member of no group", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.SetVersion(7)
			r.Group, r.Generation, r.MemberID = "bad-group-2", 4, "nobody"
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = badTopic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.IllegalGeneration.Code)},
		{"DeleteGroups of a group that does not exist", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"never-was"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, kerr.GroupIDNotFound.Code)},
		{"OffsetDelete of a group that does not exist", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "never-was"
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }, kerr.GroupIDNotFound.Code)},
		// The group coordinator's topic is the broker's own (found by
		// FuzzHandlers: all three were accepted, and the last two lose
		// every group's committed offsets).
		{"a client's produce to __consumer_offsets", func(t *testing.T, rc *badConn) {
			coordinatorUp(t, rc)
			batch := records.Build([]records.KV{{Key: []byte("k"), Value: []byte("v")}}, time.Now().UnixMilli())
			got := badProduceCodes(rc.roundTrip(badProduceRequest(-1, badPart{"__consumer_offsets", 0, batch})))
			if !slices.Equal(got, []int16{kerr.InvalidTopicException.Code}) {
				t.Fatalf("produce error codes %v, want INVALID_TOPIC_EXCEPTION", got)
			}
		}},
		{"CreatePartitions on __consumer_offsets", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.TimeoutMillis = 5000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "__consumer_offsets", 60
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, kerr.InvalidTopicException.Code)},
		{"DeleteTopics of __consumer_offsets", groupCode(func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.SetVersion(5)
			r.TimeoutMillis = 5000
			r.TopicNames = []string{"__consumer_offsets"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, kerr.InvalidTopicException.Code)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, dialBad(t, e.b.Addr))
			e.checkHealthy(t)
		})
	}
}
