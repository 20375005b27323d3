package test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Admin requests answer only once this broker has applied them, so a
// produce sent right after CreateTopics or CreatePartitions returns finds
// the partitions open and led here, rather than NOT_LEADER_OR_FOLLOWER
// (after which franz-go would wait out its metadata min age).
func TestProduceRightAfterCreate(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)
	batch := func() []byte {
		return buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte("v")}})
	}
	for i := range 5 {
		topic := "fresh-" + string(rune('a'+i))
		if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		for p := range int32(4) {
			if got := produceRaw(t, ctx, cl, topic, p, batch()); got.ErrorCode != 0 || got.BaseOffset != 0 {
				t.Fatalf("%s[%d] right after CreateTopics: error %d, base offset %d; want 0, 0", topic, p, got.ErrorCode, got.BaseOffset)
			}
		}
		if _, err := adm.CreatePartitions(ctx, 2, topic); err != nil {
			t.Fatal(err)
		}
		for _, p := range []int32{4, 5} {
			if got := produceRaw(t, ctx, cl, topic, p, batch()); got.ErrorCode != 0 {
				t.Fatalf("%s[%d] right after CreatePartitions: error %d, want 0", topic, p, got.ErrorCode)
			}
		}
	}
}
