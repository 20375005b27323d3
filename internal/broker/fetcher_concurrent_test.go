package broker

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/replica"
)

// fetchedBatch is testBatch stamped with a partition leader epoch and a base
// offset (neither is covered by the CRC).
func fetchedBatch(t *testing.T, base int64, epoch int32, n int) []byte {
	b := testBatch(t, n, 10)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

// A follower applies the record answers of one fetch response
// concurrently (handleAll), each under its own partition's followMu, so a role
// change of one partition waits for its in-flight append (and fsync) and
// the other partitions are not held up by it. Forced interleaving: the
// fsync of partition 0's segment waits until partition 1's fsync has begun
// (which deadlocks if the answers were applied one after the other), then
// until partition 0 has been told to become leader.
func TestFollowerAppliesPartitionsConcurrentlyAndFenced(t *testing.T) {
	fs := klog.NewMemFS(1)
	cfg := klog.DefaultConfig()
	cfg.FS = fs
	cfg.Logger = slog.New(slog.DiscardHandler)
	open := func(i int32) *localPartition {
		l, err := klog.Open("/t-"+string(rune('0'+i)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		lp := &localPartition{Partition: replica.New("t", i, 1, l, 0)}
		if err := lp.BecomeFollower(1, 2); err != nil {
			t.Fatal(err)
		}
		return lp
	}
	lp0, lp1 := open(0), open(1)
	defer lp0.Close(false)
	defer lp1.Close(false)

	p0In, p1In, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once0, once1 sync.Once
	fs.SetSyncHook(func(name string) {
		if !strings.HasSuffix(name, ".log") {
			return
		}
		switch {
		case strings.HasPrefix(name, "/t-0/"):
			once0.Do(func() {
				close(p0In)
				select {
				case <-p1In:
					<-release
				case <-time.After(20 * time.Second):
					// Applied one after the other: go on, so that the
					// test fails instead of hanging.
					t.Error("partition 1 was not applied while partition 0's fsync was in progress")
				}
			})
		case strings.HasPrefix(name, "/t-1/"):
			once1.Do(func() { close(p1In) })
		}
	})

	f := &fetcher{b: &Broker{logger: slog.New(slog.DiscardHandler)}}
	answer := func(tp topicPartition, lp *localPartition, batch []byte) fetchAnswer {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = tp.partition
		rp.HighWatermark = 0
		rp.RecordBatches = batch
		return fetchAnswer{tp, lp, 1, &rp}
	}
	answers := []fetchAnswer{
		answer(topicPartition{"t", 0}, lp0, fetchedBatch(t, 0, 1, 3)),
		answer(topicPartition{"t", 1}, lp1, fetchedBatch(t, 0, 1, 3)),
	}
	errsCh := make(chan []error, 1)
	go func() { errsCh <- f.handleAll(answers) }()

	<-p0In
	// Partition 0 is mid-append (followMu held, in its fsync): a role
	// change now must wait for it and start epoch 2 after its records.
	leaderDone := make(chan error, 1)
	go func() {
		leaderDone <- lp0.BecomeLeader(2, 1, []int32{1}, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: 1})
	}()
	<-p1In
	close(release)
	errs := <-errsCh
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("handleAll: %v", errs)
	}
	if err := <-leaderDone; err != nil {
		t.Fatal(err)
	}
	if e := lp0.Log().Epochs(); len(e) == 0 || e[len(e)-1].Epoch != 2 || e[len(e)-1].StartOffset != 3 {
		t.Fatalf("epoch cache of partition 0: %+v, want epoch 2 starting at 3 (after the in-flight append)", e)
	}
	if lp0.Log().FlushedOffset() != 3 || lp1.Log().FlushedOffset() != 3 {
		t.Fatalf("flushed offsets %d, %d; want 3, 3", lp0.Log().FlushedOffset(), lp1.Log().FlushedOffset())
	}

	// A later answer fetched in epoch 1 is refused for the partition that
	// now leads, and still applied for the other.
	errs = f.handleAll([]fetchAnswer{
		answer(topicPartition{"t", 0}, lp0, fetchedBatch(t, 3, 1, 2)),
		answer(topicPartition{"t", 1}, lp1, fetchedBatch(t, 3, 1, 2)),
	})
	if !errors.Is(errs[0], replica.ErrRoleChanged) || errs[1] != nil {
		t.Fatalf("after the role change: %v; want ErrRoleChanged, nil", errs)
	}
	if lp0.Log().EndOffset() != 3 || lp1.Log().EndOffset() != 5 {
		t.Fatalf("LEOs %d, %d; want 3, 5", lp0.Log().EndOffset(), lp1.Log().EndOffset())
	}
}
