package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCoordinator asks the cluster which broker coordinates transactional
// id id.
func txnCoordinator(c *Cluster, id string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType = id, 1
	ctx := testContext(c.t, clusterRequestTimeout)
	resp, err := req.RequestWith(ctx, c.client)
	if err != nil {
		return -1, err
	}
	if resp.ErrorCode != 0 {
		return -1, fmt.Errorf("FindCoordinator: error %d", resp.ErrorCode)
	}
	return resp.NodeID, nil
}

// TestTransactionsETLFailover: GroupTransactSession consume-transform-
// produce on three brokers at RF 3 (min ISR 2) while the coordinator of
// one member's transactional id is killed with SIGKILL and later
// restarted, and then the leader of an output partition: every input
// record is in the output exactly once (read_committed), and no
// transaction is left open (the last stable offset of every output
// partition reaches its high watermark).
func TestTransactionsETLFailover(t *testing.T) {
	c := StartCluster(t, 3)
	ctx := testContext(t, 240*time.Second)
	const in, out, n = "etlf-in", "etlf-out", 4000
	minISR := "2"
	for _, topic := range []string{in, out} {
		if _, err := c.Admin().CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
			t.Fatal(err)
		}
	}
	prod := c.Client(kgo.DefaultProduceTopic(in))
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, "v%05d", i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	seeds := c.bootstrapList()
	fast := []kgo.Opt{kgo.FetchMaxBytes(8192), kgo.FetchMaxPartitionBytes(4096),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }), kgo.MetadataMinAge(100 * time.Millisecond)}
	errs := make(chan error, 3)
	stop := make(chan struct{})
	logs := newClientLogs(t)
	for i := range 3 {
		id := fmt.Sprintf("etlf-%d", i)
		go func() {
			errs <- etlWorker(t, ctx, seeds, "etlf", in, out, id, stop, nil, append(slices.Clone(fast), logs.opt(id))...)
		}()
	}
	progress := func(min int64) func() error {
		return func() error {
			// A fresh client each time: a cached coordinator on a dead
			// broker says nothing of the cluster.
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrapList()...))
			if err != nil {
				return err
			}
			defer cl.Close()
			offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "etlf")
			if err != nil {
				return err
			}
			var sum int64
			offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
			if sum < min {
				return fmt.Errorf("group committed %d input records, want %d", sum, min)
			}
			return nil
		}
	}
	WaitFor(t, 60*time.Second, progress(500))
	victim, err := txnCoordinator(c, "etlf-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing broker %d, coordinator of etlf-1", victim)
	c.Kill9(victim)
	WaitFor(t, 90*time.Second, progress(1500))
	c.Restart(victim)
	md, err := c.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if tp, ok := metadataTopic(md, out); ok {
		leader := tp.Partitions[0].Leader
		t.Logf("killing broker %d, leader of %s-0", leader, out)
		c.Kill9(leader)
		WaitFor(t, 90*time.Second, progress(2500))
		c.Restart(leader)
	}
	// Bounded apart from ctx, so that a shortfall leaves time for the
	// last stable offsets' check below, which says where it is.
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	got := consumeAll(t, cctx, seeds[0], out, n, kgo.ReadCommitted(), kgo.SeedBrokers(seeds...))
	cancel()
	if len(got) < n {
		logGoroutines(t, "etlSession")
	}
	close(stop)
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	checkExactlyOnce(t, got, n)
	// No transaction left open once the workers stopped.
	ctx = testContext(t, 90*time.Second)
	WaitFor(t, 60*time.Second, func() error {
		hw, err := c.Admin().ListEndOffsets(ctx, out)
		if err != nil {
			return err
		}
		lso, err := c.Admin().ListCommittedOffsets(ctx, out)
		if err != nil {
			return err
		}
		var bad error
		hw.Each(func(o kadm.ListedOffset) {
			if l, ok := lso.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
				bad = fmt.Errorf("%s-%d: last stable offset %d, high watermark %d", o.Topic, o.Partition, l.Offset, o.Offset)
			}
		})
		return bad
	})
}
