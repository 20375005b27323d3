package test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/coord"
)

// A rolling restart (each broker shut down cleanly, restarted, caught up in
// turn) under continuous acks=all production: controlled shutdown moves
// leadership first, so no produce fails (the client sees only retriable
// errors, which it retries) and every acknowledged record is read back
// exactly once, in order.
func TestRollingRestart(t *testing.T) {
	c := startInProcessCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	seeds := c.bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("roll"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "roll"); err != nil {
		t.Fatal(err)
	}
	fullISR := func() error {
		md, err := adm.Metadata(ctx, "roll")
		if err != nil {
			return err
		}
		for _, p := range md.Topics["roll"].Partitions {
			if len(p.ISR) != 3 || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	}
	WaitFor(t, 30*time.Second, fullISR)

	var (
		mu    sync.Mutex
		acked = map[int32][]string{}
		errs  []error
	)
	stop := make(chan struct{})
	producing := make(chan struct{})
	go func() {
		defer close(producing)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := int32(i % 3)
			r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("%d-%06d", p, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			mu.Lock()
			acked[p] = append(acked[p], string(r.Value))
			mu.Unlock()
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked[0]) + len(acked[1]) + len(acked[2])
	}
	for _, id := range []int32{1, 2, 3} {
		before := ackedCount()
		WaitFor(t, 30*time.Second, func() error {
			if n := ackedCount(); n < before+200 {
				return fmt.Errorf("%d acknowledged", n)
			}
			return nil
		})
		c.brokers[id] = c.brokers[id].Restart(t)
		WaitFor(t, 30*time.Second, fullISR)
	}
	close(stop)
	<-producing
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("a produce failed during the rolling restart: %v", errs[0])
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("roll"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := map[int32][]string{}
	total := len(acked[0]) + len(acked[1]) + len(acked[2])
	for n := 0; n < total; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", n, total)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for p := int32(0); p < 3; p++ {
		if len(got[p]) != len(acked[p]) {
			t.Fatalf("partition %d: read %d records, %d acknowledged", p, len(got[p]), len(acked[p]))
		}
		for i := range acked[p] {
			if got[p][i] != acked[p][i] {
				t.Fatalf("partition %d record %d: got %s, want %s", p, i, got[p][i], acked[p][i])
			}
		}
	}
	t.Logf("%d records acknowledged across the rolling restart", total)
	CheckReplication(t, c, "roll")
}

// Controlled shutdown moves leadership before the broker leaves: in the
// first metadata snapshot without broker 1's registration, no partition is
// led by broker 1 any more. Without the handover, leadership would move only
// after the registration is gone (the controller reacts to its deletion),
// and that snapshot would still show broker 1 as leader.
func TestControlledShutdownMovesLeadershipFirst(t *testing.T) {
	c := startInProcessCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.adminWithTopic(ctx, t, "handover", 6, 3)
	admin, err := coord.Connect(ctx, c.endpoints, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	cache, err := admin.NewCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	led := func(s *coord.Snapshot, id int32) int {
		n := 0
		for _, vp := range s.Partitions["handover"] {
			if vp.Exists() && vp.Leader == id {
				n++
			}
		}
		return n
	}
	WaitFor(t, 30*time.Second, func() error {
		s := cache.Snapshot()
		if n := led(s, 1); n != 2 {
			return fmt.Errorf("broker 1 leads %d partitions, want its 2 preferred ones", n)
		}
		for _, vp := range s.Partitions["handover"] {
			if len(vp.ISR) != 3 {
				return fmt.Errorf("ISR %v", vp.ISR)
			}
		}
		return nil
	})

	result := make(chan int, 1)
	go func() {
		for {
			changed := cache.Changed()
			s := cache.Snapshot()
			if _, registered := s.Brokers[1]; !registered {
				result <- led(s, 1)
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				result <- -1
				return
			}
		}
	}()
	if err := c.brokers[1].Close(); err != nil {
		t.Fatal(err)
	}
	if n := <-result; n != 0 {
		t.Fatalf("broker 1 still led %d partitions when its registration went (-1: never went)", n)
	}
}
