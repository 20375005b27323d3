package test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSmokeFranzGo produces and consumes through one in-process broker, and
// again after a restart.
func TestSmokeFranzGo(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "smoke"); err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		r := &kgo.Record{Topic: "smoke", Value: []byte{byte(i)}, Partition: int32(i % 2)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	consumeAll := func(addr string) map[byte]bool {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("smoke"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		seen := map[byte]bool{}
		for len(seen) < n {
			fs := c.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d: %v", len(seen), n, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
			fs.EachRecord(func(r *kgo.Record) {
				if seen[r.Value[0]] {
					t.Fatalf("value %d seen twice", r.Value[0])
				}
				seen[r.Value[0]] = true
			})
		}
		return seen
	}
	consumeAll(b.Addr)
	cl.Close()
	b = b.Restart(t)
	consumeAll(b.Addr)
}
