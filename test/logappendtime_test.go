package test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLogAppendTimeTopic: a topic with message.timestamp.type
// LogAppendTime takes a record whose own timestamp is years old (the skew
// limits do not apply), answers the produce with the append time, and
// consumers read that time with the LogAppendTime type, also after the
// broker restarts (the stamped batch is what the log keeps); ListOffsets
// by timestamp finds the record by it.
func TestLogAppendTimeTopic(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic = "stamped"
	typ := "LogAppendTime"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &typ}, topic); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	before := time.Now().UnixMilli()
	rp := produceRaw(t, ctx, cl, topic, 0, buildRecordBatch(-1, -1, -1, old, []rawRecord{{Value: []byte("a")}, {Value: []byte("b"), TimestampDelta: 5}}))
	after := time.Now().UnixMilli()
	if rp.ErrorCode != 0 || rp.LogAppendTime < before || rp.LogAppendTime > after {
		t.Fatalf("produce answer %+v; want no error and a LogAppendTime in [%d, %d]", rp, before, after)
	}
	check := func(addr string) {
		t.Helper()
		recs := consumeKgo(t, ctx, addr, topic, []int32{0}, 2)
		for _, r := range recs {
			if r.Attrs.TimestampType() != 1 || r.Timestamp.UnixMilli() != rp.LogAppendTime {
				t.Errorf("record %d: timestamp %v type %d, want %d type 1 (LogAppendTime)", r.Offset, r.Timestamp.UnixMilli(), r.Attrs.TimestampType(), rp.LogAppendTime)
			}
		}
	}
	check(b.Addr)
	listed, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, rp.LogAppendTime, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := listed.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Errorf("ListOffsets at the append time: %+v, want offset 0", o)
	}
	cl.Close()
	b = b.Restart(t)
	check(b.Addr)
}
