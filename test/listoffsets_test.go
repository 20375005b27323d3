package test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsets checks ListOffsets and OffsetForLeaderEpoch against a
// topic whose records have explicit timestamps:
//
//	partition 0: ten records, timestamps base+0s .. base+9s, offsets 0..9;
//	             records 0-4 in one batch, 5-9 one batch each
//	partition 1: one batch of three records with timestamps base+5s,
//	             base+9s, base+1s (the maximum in the middle)
//	partition 2: empty
//
// through kadm (ListStartOffsets, ListEndOffsets, ListOffsetsAfterMilli,
// ListMaxTimestampOffsets) and raw requests (timestamp -3 at v7, a
// timestamp after the last record, CurrentLeaderEpoch checks).
func TestListOffsets(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	const topic = "listoffsets"

	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitionsLed(t, cl, topic, 3)

	base := time.Now().Add(-time.Hour).UnixMilli() / 1000 * 1000
	sec := int64(1000)
	rec := func(key string, delta int64) rawRecord {
		return rawRecord{Key: []byte(key), Value: []byte("v-" + key), TimestampDelta: delta}
	}
	produce := func(p int32, batch []byte, wantBase int64) {
		t.Helper()
		got := produceRaw(t, ctx, cl, topic, p, batch)
		if got.ErrorCode != 0 || got.BaseOffset != wantBase {
			t.Fatalf("produce to partition %d: error %v, base offset %d; want base offset %d",
				p, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, wantBase)
		}
	}
	produce(0, buildRecordBatch(-1, -1, -1, base, []rawRecord{
		rec("r0", 0), rec("r1", sec), rec("r2", 2*sec), rec("r3", 3*sec), rec("r4", 4*sec),
	}), 0)
	for i := int64(5); i < 10; i++ {
		produce(0, buildRecordBatch(-1, -1, -1, base+i*sec, []rawRecord{rec("r", 0)}), i)
	}
	produce(1, buildRecordBatch(-1, -1, -1, base+5*sec, []rawRecord{
		rec("s0", 0), rec("s1", 4*sec), rec("s2", -4*sec),
	}), 0)

	type want struct {
		offset, timestamp int64
	}
	check := func(what string, got kadm.ListedOffsets, wants map[int32]want) {
		t.Helper()
		for p, w := range wants {
			o, ok := got.Lookup(topic, p)
			switch {
			case !ok:
				t.Errorf("%s: no answer for partition %d", what, p)
			case o.Err != nil:
				t.Errorf("%s: partition %d: %v", what, p, o.Err)
			case o.Offset != w.offset || o.Timestamp != w.timestamp:
				t.Errorf("%s: partition %d: offset %d timestamp %d, want offset %d timestamp %d",
					what, p, o.Offset, o.Timestamp, w.offset, w.timestamp)
			case o.Offset >= 0 && o.LeaderEpoch != 0:
				t.Errorf("%s: partition %d: leader epoch %d, want 0", what, p, o.LeaderEpoch)
			}
		}
		if n := len(got[topic]); n != len(wants) {
			t.Errorf("%s: answers for %d partitions, want %d", what, n, len(wants))
		}
	}
	list := func(what string, f func() (kadm.ListedOffsets, error), wants map[int32]want) {
		t.Helper()
		got, err := f()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(what, got, wants)
	}

	list("earliest", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topic) },
		map[int32]want{0: {0, -1}, 1: {0, -1}, 2: {0, -1}})
	list("latest", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) },
		map[int32]want{0: {10, -1}, 1: {3, -1}, 2: {0, -1}})
	list("max timestamp", func() (kadm.ListedOffsets, error) { return adm.ListMaxTimestampOffsets(ctx, topic) },
		map[int32]want{0: {9, base + 9*sec}, 1: {1, base + 9*sec}, 2: {-1, -1}})

	// By timestamp: the first offset whose timestamp is at least the one
	// asked for. kadm answers the end offset (timestamp -1) where the
	// broker found none.
	after := func(ts int64, wants map[int32]want) {
		t.Helper()
		list("after "+time.Duration((ts-base)*int64(time.Millisecond)).String(),
			func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, ts, topic) }, wants)
	}
	after(base-1, map[int32]want{0: {0, base}, 1: {0, base + 5*sec}, 2: {0, -1}})
	after(base, map[int32]want{0: {0, base}, 1: {0, base + 5*sec}, 2: {0, -1}})
	after(base+2500, map[int32]want{0: {3, base + 3*sec}, 1: {0, base + 5*sec}, 2: {0, -1}})
	after(base+4*sec, map[int32]want{0: {4, base + 4*sec}, 1: {0, base + 5*sec}, 2: {0, -1}})
	after(base+4500, map[int32]want{0: {5, base + 5*sec}, 1: {0, base + 5*sec}, 2: {0, -1}})
	after(base+6*sec, map[int32]want{0: {6, base + 6*sec}, 1: {1, base + 9*sec}, 2: {0, -1}})
	after(base+9*sec, map[int32]want{0: {9, base + 9*sec}, 1: {1, base + 9*sec}, 2: {0, -1}})
	after(base+9*sec+1, map[int32]want{0: {10, -1}, 1: {3, -1}, 2: {0, -1}})

	// Raw requests, at the highest version (7).
	raw := func(what string, p int32, ts int64, currentEpoch int32, wantErr *kerr.Error, w want) {
		t.Helper()
		got := listOffsetRaw(t, ctx, cl, topic, p, ts, currentEpoch)
		code := int16(0)
		if wantErr != nil {
			code = wantErr.Code
		}
		if got.ErrorCode != code || got.Offset != w.offset || got.Timestamp != w.timestamp {
			t.Errorf("%s: partition %d: error %v offset %d timestamp %d; want error %v offset %d timestamp %d",
				what, p, kerr.ErrorForCode(got.ErrorCode), got.Offset, got.Timestamp, wantErr, w.offset, w.timestamp)
		}
	}
	raw("after the last record", 0, base+9*sec+1, -1, nil, want{-1, -1})
	raw("after the last record", 1, base+9*sec+1, -1, nil, want{-1, -1})
	raw("timestamp on an empty partition", 2, base, -1, nil, want{-1, -1})
	raw("max timestamp (-3)", 0, -3, -1, nil, want{9, base + 9*sec})
	raw("max timestamp (-3)", 1, -3, -1, nil, want{1, base + 9*sec})
	raw("max timestamp (-3)", 2, -3, -1, nil, want{-1, -1})

	// CurrentLeaderEpoch (v4+): the current epoch passes, a newer one is
	// unknown to this leader, an older one is fenced.
	md := topicMetadata(t, ctx, cl, topic)
	if len(md.Partitions) != 3 {
		t.Fatalf("metadata: %d partitions, want 3", len(md.Partitions))
	}
	epoch := md.Partitions[0].LeaderEpoch
	if epoch != 0 {
		t.Errorf("leader epoch of a new topic's partition on a single broker: %d, want 0", epoch)
	}
	raw("current leader epoch", 0, -1, epoch, nil, want{10, -1})
	raw("newer leader epoch", 0, -1, epoch+1, kerr.UnknownLeaderEpoch, want{-1, -1})
	if epoch > 0 {
		raw("older leader epoch", 0, -1, epoch-1, kerr.FencedLeaderEpoch, want{-1, -1})
	} else {
		t.Log("leader epoch is 0: FENCED_LEADER_EPOCH cannot be provoked on a single broker")
	}

	// OffsetForLeaderEpoch for the current epoch answers the LEO.
	ofle := func(p, leaderEpoch, currentEpoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.CurrentLeaderEpoch = p, leaderEpoch, currentEpoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetForLeaderEpoch: %v", err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetForLeaderEpoch: want one topic and partition, got %+v", resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	for p, leo := range map[int32]int64{0: 10, 1: 3, 2: 0} {
		got := ofle(p, epoch, epoch)
		if got.ErrorCode != 0 || got.LeaderEpoch != epoch || got.EndOffset != leo {
			t.Errorf("OffsetForLeaderEpoch partition %d epoch %d: error %v, epoch %d, end offset %d; want epoch %d, end offset %d",
				p, epoch, kerr.ErrorForCode(got.ErrorCode), got.LeaderEpoch, got.EndOffset, epoch, leo)
		}
	}
	if got := ofle(0, epoch, epoch+1); got.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("OffsetForLeaderEpoch with current leader epoch %d: error %v, want %v",
			epoch+1, kerr.ErrorForCode(got.ErrorCode), kerr.UnknownLeaderEpoch)
	}
	// kadm's wrapper agrees.
	var req kadm.OffsetForLeaderEpochRequest
	req.Add(topic, 0, epoch)
	res, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatalf("kadm OffsetForLeaderEpoch: %v", err)
	}
	if o, ok := res[topic][0]; !ok || o.Err != nil || o.EndOffset != 10 || o.LeaderEpoch != epoch {
		t.Errorf("kadm OffsetForLeaderEpoch: %+v (present %v), want end offset 10 in epoch %d", o, ok, epoch)
	}
}
