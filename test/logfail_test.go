package test

// Issue 10, hole 5: a replica whose log failed (an fsync or write error)
// must leave every ISR and never be elected. The broker stops on a failed
// log (Broker.logFailed): it revokes its registration, so the controller
// moves its leaderships and drops it from every ISR at once, and
// broker.Run exits with an error.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/testutil"
)

// logFailCluster is the checked cluster of TestFailedLogLeavesISRs: three
// in-process brokers on one etcd, the victim's replicas not expected back
// in any ISR once its log failed.
type logFailCluster struct {
	etcd     string
	dataDirs map[int32]string
	// survivors are the other brokers' addresses; victim is the broker
	// whose log fails.
	survivors []string
	victim    int32
}

func (c *logFailCluster) checkClient(t testing.TB) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.survivors...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
func (c *logFailCluster) dataDir(id int32) string { return c.dataDirs[id] }
func (c *logFailCluster) serving(id int32) bool   { return id != c.victim }
func (c *logFailCluster) etcdEndpoint() string    { return c.etcd }

// TestFailedLogLeavesISRs (issue 10, hole 5): three brokers, a topic with
// replication factor 3 and min.insync.replicas 2 under an acks=all
// producer. Broker 2, which leads one partition and follows the others,
// gets fsync errors on one partition's log (the one it leads, or one it
// follows). Within a bound far below the session timeout (so the
// registration was revoked, not left to expire): broker 2's registration is
// gone, every partition is led by another broker, broker 2 is in no ISR,
// broker.Run returned an error, and acks=all writes to every partition
// succeed again. Then every acknowledged record is read back at its offset
// and the replication checker passes on the other two brokers. Were
// Broker.logFailed to do nothing, broker 2 would stay registered, leading
// and in the ISRs, and the test would fail within the bound.
func TestFailedLogLeavesISRs(t *testing.T) {
	for _, role := range []string{"leader", "follower"} {
		t.Run("failed-as-"+role, func(t *testing.T) { testFailedLogLeavesISRs(t, role == "leader") })
	}
}

func testFailedLogLeavesISRs(t *testing.T, failLed bool) {
	const (
		victim     = int32(2)
		topic      = "logfail"
		partitions = int32(3)
		// sessionTimeout is long, so a registration gone within bound
		// was revoked: it cannot have expired.
		sessionTimeout = 30 * time.Second
		bound          = 15 * time.Second
	)
	e, err := coord.StartEmbedded(context.Background(), coord.EmbeddedConfig{
		Dir: t.TempDir(), Name: "etcd", ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	configure := func(id int32) func(*broker.Config) {
		return func(cfg *broker.Config) {
			cfg.NodeID = id
			cfg.MetadataEndpoints = e.Endpoints()
			cfg.SessionTimeout = sessionTimeout
		}
	}
	c := &logFailCluster{
		etcd:     strings.TrimPrefix(e.Endpoints()[0], "http://"),
		dataDirs: map[int32]string{},
		victim:   victim,
	}
	for _, id := range []int32{1, 3} {
		b := StartBroker(t, configure(id))
		c.dataDirs[id] = b.Config.DataDir
		c.survivors = append(c.survivors, b.Addr)
	}

	// The victim runs under broker.Run, as the samsa binary does, with a
	// log file system that fails fsyncs on demand.
	faults := &testutil.SyncFailFS{}
	vcfg := broker.DefaultConfig()
	vcfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	vcfg.DataDir = t.TempDir()
	vcfg.Logger = testLogger()
	configure(victim)(&vcfg)
	vcfg.LogFS = faults
	c.dataDirs[victim] = vcfg.DataDir
	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	var runErr error
	go func() {
		defer close(runDone)
		runErr = broker.Run(runCtx, vcfg)
	}()
	t.Cleanup(func() {
		stopRun()
		select {
		case <-runDone:
		case <-time.After(60 * time.Second):
			t.Errorf("broker %d's Run did not return", victim)
		}
	})

	etcdc, err := coord.Connect(context.Background(), e.Endpoints(), vcfg.ClusterName, coord.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcdc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	registered := func() ([]int32, error) {
		bs, err := etcdc.Brokers(ctx)
		if err != nil {
			return nil, err
		}
		var ids []int32
		for _, b := range bs {
			ids = append(ids, b.ID)
		}
		return ids, nil
	}
	WaitFor(t, 60*time.Second, func() error {
		if ids, err := registered(); err != nil || len(ids) != 3 {
			return fmt.Errorf("registered brokers %v (%v), want 3", ids, err)
		}
		return nil
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.survivors...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	minISR := "2"
	resp, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	// Every partition led, with the whole ISR.
	WaitFor(t, 30*time.Second, func() error {
		states, err := etcdc.PartitionStates(ctx, topic)
		if err != nil {
			return err
		}
		if len(states) != int(partitions) {
			return fmt.Errorf("%d partition states", len(states))
		}
		for p, s := range states {
			if s.Leader < 0 || len(s.ISR) != 3 {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p, s.Leader, s.ISR)
			}
		}
		return nil
	})

	w := startLogFailWorkload(t, c.survivors, topic, partitions)
	w.waitAckedEach(t, partitions, 20, 30*time.Second)

	// The victim's roles: it must lead one partition and follow another.
	states, err := etcdc.PartitionStates(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	failing := int32(-1)
	var led, followed []int32
	for p, s := range states {
		// Replication factor 3 on three brokers: the victim holds a
		// replica of every partition.
		if s.Leader == victim {
			led = append(led, int32(p))
		} else {
			followed = append(followed, int32(p))
		}
	}
	if len(led) == 0 || len(followed) == 0 {
		t.Fatalf("broker %d leads %v and follows %v; the scenario needs both", victim, led, followed)
	}
	if failLed {
		failing = led[0]
	} else {
		failing = followed[0]
	}
	t.Logf("broker %d leads %v and follows %v; failing the fsyncs of partition %d", victim, led, followed, failing)

	faults.FailSyncsUnder(filepath.Join(vcfg.DataDir, "logs", fmt.Sprintf("%s-%d", topic, failing)))
	failedAt := time.Now()

	// Within the bound: no registration, no leadership and no ISR
	// membership left, and broker.Run returned an error.
	WaitFor(t, bound, func() error {
		var problems []string
		ids, err := registered()
		if err != nil {
			return err
		}
		if slices.Contains(ids, victim) {
			problems = append(problems, fmt.Sprintf("broker %d still registered (%v)", victim, ids))
		}
		states, err := etcdc.PartitionStates(ctx, topic)
		if err != nil {
			return err
		}
		for p, s := range states {
			if s.Leader < 0 || s.Leader == victim {
				problems = append(problems, fmt.Sprintf("partition %d led by %d", p, s.Leader))
			}
			if slices.Contains(s.ISR, victim) {
				problems = append(problems, fmt.Sprintf("partition %d: broker %d in ISR %v", p, victim, s.ISR))
			}
		}
		select {
		case <-runDone:
		default:
			problems = append(problems, fmt.Sprintf("broker %d's Run has not returned", victim))
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s (%d fsyncs failed)", strings.Join(problems, "; "), faults.Failed())
		}
		return nil
	})
	t.Logf("broker %d deregistered, out of every ISR and leadership, stopped %v after its fsyncs began to fail (%d failed)",
		victim, time.Since(failedAt).Round(time.Millisecond), faults.Failed())
	if faults.Failed() == 0 {
		t.Fatalf("no fsync failed, yet broker %d stopped", victim)
	}
	if !errors.Is(runErr, coord.ErrSessionLost) {
		t.Fatalf("broker %d's Run returned %v, want an error wrapping %v", victim, runErr, coord.ErrSessionLost)
	}

	// acks=all writes to every partition succeed again.
	again := time.Now()
	WaitFor(t, bound, func() error {
		for p := range partitions {
			if !w.ackedSince(p, again) {
				return fmt.Errorf("no write to %s-%d sent after the failover acknowledged", topic, p)
			}
		}
		return nil
	})
	t.Logf("every partition acknowledged writes again %v after the fsyncs began to fail", time.Since(failedAt).Round(time.Millisecond))
	w.stop(t, bound)
	n := w.verify(t, c.survivors)
	t.Logf("%d acknowledged writes read back (%d before the fsyncs failed)", n, w.ackedBefore(failedAt))

	CheckReplication(t, c, topic)
}

// logFailWorkload writes to every partition of a topic with acks=all, one
// goroutine and one record at a time per partition, recording each
// acknowledgement. A write that fails is not recorded: it may or may not
// be in the log.
type logFailWorkload struct {
	topic string
	cl    *kgo.Client
	ctx   context.Context
	halt  context.CancelFunc
	wg    sync.WaitGroup
	// done is closed (once, by end) to stop the writers.
	done    chan struct{}
	endOnce sync.Once

	mu    sync.Mutex
	acked map[int32][]ackedRecord
}

func startLogFailWorkload(t testing.TB, seeds []string, topic string, partitions int32) *logFailWorkload {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	w := &logFailWorkload{topic: topic, cl: cl, acked: map[int32][]ackedRecord{}, done: make(chan struct{})}
	w.ctx, w.halt = context.WithCancel(context.Background())
	for p := range partitions {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-w.done:
					return
				default:
				}
				sent := time.Now()
				r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%07d", topic, p, i)}
				if err := cl.ProduceSync(w.ctx, r).FirstErr(); err != nil {
					// Not retriable by the client (it retries the
					// others itself): pace the next attempt.
					time.Sleep(50 * time.Millisecond)
					continue
				}
				w.mu.Lock()
				w.acked[p] = append(w.acked[p], ackedRecord{r.Offset, string(r.Value), sent, time.Now()})
				w.mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() { w.halt(); w.end(); w.wg.Wait() })
	return w
}

func (w *logFailWorkload) end() { w.endOnce.Do(func() { close(w.done) }) }

// waitAckedEach waits until each of the partitions has more than n
// writes acknowledged.
func (w *logFailWorkload) waitAckedEach(t testing.TB, partitions int32, n int, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for p := range partitions {
			if got := len(w.acked[p]); got <= n {
				return fmt.Errorf("%d writes to partition %d acknowledged, waiting for more than %d", got, p, n)
			}
		}
		return nil
	})
}

// ackedSince reports whether a write to partition p sent after since was
// acknowledged.
func (w *logFailWorkload) ackedSince(p int32, since time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range slices.Backward(w.acked[p]) {
		if a.sent.After(since) {
			return true
		}
	}
	return false
}

// ackedBefore counts the writes acknowledged before t.
func (w *logFailWorkload) ackedBefore(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, recs := range w.acked {
		for _, a := range recs {
			if a.ackedAt.Before(t) {
				n++
			}
		}
	}
	return n
}

// stop ends the writers, letting the writes in flight finish within
// timeout.
func (w *logFailWorkload) stop(t testing.TB, timeout time.Duration) {
	t.Helper()
	w.end()
	finished := make(chan struct{})
	go func() { w.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(timeout):
		w.halt()
		t.Fatalf("writes in flight did not end within %v", timeout)
	}
}

// verify reads each partition up to its end offset and checks that every
// acknowledged value is at the offset it was acknowledged with, exactly
// once in the topic. It returns the number of acknowledged writes.
func (w *logFailWorkload) verify(t testing.TB, seeds []string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var ends kadm.ListedOffsets
	WaitFor(t, 30*time.Second, func() error {
		var err error
		ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, w.topic)
		if err == nil {
			err = ends.Error()
		}
		return err
	})
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(w.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	return verifyAcked(ctx, t, consumer, w.topic, ends, w.acked)
}
