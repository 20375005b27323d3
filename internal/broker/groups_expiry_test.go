package broker

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// countingStore counts the appends of an offsets store.
type countingStore struct {
	offsetsStore
	appends *atomic.Int64
}

func (s countingStore) Append(epoch int32, recs []records.KV) (int64, error) {
	s.appends.Add(1)
	return s.offsetsStore.Append(epoch, recs)
}

// Review finding 3 (issue 16): one Tick expiring, or one DeleteGroups
// deleting, thousands of empty groups on an offsets partition whose
// follower is slow must not append a batch, start a goroutine and park a
// replica waiter per group under the coordinator's lock (which held it for
// seconds and blocked every heartbeat): it appends one batch per
// partition, awaited by one goroutine.
func TestGroupExpiryAndDeleteAppendOncePerPartition(t *testing.T) {
	const n = 8000
	p := newOffsetsReplica(t)
	lead := func(pe int32, isr []int32) {
		if err := p.BecomeLeader(1, pe, isr, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	lead(1, []int32{1})
	var mu sync.Mutex
	now := time.UnixMilli(1_700_000_000_000)
	gcfg := group.DefaultConfig()
	gcfg.Partitions = 1
	gcfg.CommitTimeout = 30 * time.Second
	gcfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := group.New(gcfg)
	defer c.Close()
	var appends atomic.Int64
	c.Elected(0, 1, 1, countingStore{offsetsStore{lp: &localPartition{Partition: p}}, &appends})
	for {
		if _, code := c.List(nil); code == 0 {
			break
		}
		runtime.Gosched()
	}
	commit := func(id string) {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.Generation = 8, id, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		if code := c.StartCommitOffsets(r)(context.Background()).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit: %d", code)
		}
	}
	expired, deleted := make([]string, n), make([]string, n)
	for i := range n {
		expired[i], deleted[i] = fmt.Sprintf("e%d", i), fmt.Sprintf("d%d", i)
		commit(expired[i])
		commit(deleted[i])
	}
	// The follower is in the ISR but slow: nothing commits.
	lead(2, []int32{1, 2})
	goroutines := runtime.NumGoroutine()

	before := appends.Load()
	start := time.Now()
	wait := c.StartDelete(deleted)
	took := time.Since(start)
	if d := appends.Load() - before; d != 1 {
		t.Fatalf("DeleteGroups of %d groups appended %d batches, want 1", n, d)
	}
	t.Logf("DeleteGroups of %d groups held the coordinator for %v", n, took)

	mu.Lock()
	now = now.Add(gcfg.OffsetsRetention + time.Hour)
	mu.Unlock()
	before = appends.Load()
	start = time.Now()
	c.Tick()
	took = time.Since(start)
	if d := appends.Load() - before; d != 1 {
		t.Fatalf("a Tick expiring %d groups appended %d batches, want 1", n, d)
	}
	if d := runtime.NumGoroutine() - goroutines; d > 10 {
		t.Fatalf("%d more goroutines awaiting the writes of one Tick and one DeleteGroups", d)
	}
	t.Logf("a Tick expiring %d groups held the coordinator for %v", n, took)
	if groups, _ := c.List(nil); len(groups) != 0 {
		t.Fatalf("%d groups left", len(groups))
	}
	// The follower catches up: the writes commit and are answered.
	lead(3, []int32{1})
	for _, r := range wait(context.Background()) {
		if r.ErrorCode != 0 {
			t.Fatalf("delete %s: error %d", r.Group, r.ErrorCode)
		}
	}
}
