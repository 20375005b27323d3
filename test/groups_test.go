package test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
)

// groupTestBroker is a single broker with group settings for tests: no
// initial rebalance delay, short session timeouts allowed, few offsets
// partitions.
func groupTestBroker(t testing.TB) *Broker {
	return StartBroker(t, func(cfg *broker.Config) {
		cfg.Groups.InitialRebalanceDelay = 0
		cfg.Groups.MinSessionTimeout = time.Second
		cfg.Groups.Partitions = 5
	})
}

// produceEach writes n records to every partition of topic and returns
// the values written.
func produceEach(t testing.TB, seeds []string, topic string, partitions int32, n int) map[string]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := map[string]bool{}
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			v := fmt.Sprintf("%s-%d-%05d", topic, p, i)
			want[v] = true
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return want
}

// A group of three franz-go consumers on a six-partition topic reads every
// record exactly once between them, commits, and a new member of the group
// starts where the group's commits left off.
func TestGroupFranzGo(t *testing.T) {
	b := groupTestBroker(t)
	seeds := []string{b.Addr}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 6, 1, nil, "g6"); err != nil {
		t.Fatal(err)
	}
	want := produceEach(t, seeds, "g6", 6, 100)

	var mu sync.Mutex
	seen := map[string]int{}
	byMember := map[int]int{}
	var consumers []*kgo.Client
	for i := range 3 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("g6"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		consumers = append(consumers, cl)
		go func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; byMember[i]++ })
				mu.Unlock()
				if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("consumer %d commit: %v", i, err)
				}
			}
		}()
	}
	WaitFor(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < len(want) {
			return fmt.Errorf("%d of %d records consumed; per member %v", len(seen), len(want), byMember)
		}
		return nil
	})
	for _, cl := range consumers {
		cl.Close()
	}
	mu.Lock()
	for v, n := range seen {
		if !want[v] || n != 1 {
			t.Errorf("record %q consumed %d times", v, n)
		}
	}
	t.Logf("records per member: %v", byMember)
	mu.Unlock()

	// Everything was committed: a new member gets nothing old.
	want2 := produceEach(t, seeds, "g6", 6, 10)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("g6"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]bool{}
	for len(got) < len(want2) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d new records", len(got), len(want2))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !want2[string(r.Value)] {
				t.Errorf("resumed consumer read %q, committed before", r.Value)
			}
			got[string(r.Value)] = true
		})
	}
}
