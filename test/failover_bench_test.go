package test

// BenchmarkFailover measures how long clients stall when one broker of three
// fails (issue 10, "Failover in seconds"). Unlike the fault tests'
// StartCluster (one etcd in the test process), the three `samsa server`
// processes here run the default topology: each embeds an etcd member and
// the three members form the metadata cluster, so killing a broker can also
// kill the etcd leader.
//
//	go test -run '^$' -bench BenchmarkFailover -benchtime 21x -timeout 60m -v ./test
//
// Each iteration kills -9 one broker, rotating over three kinds of victim:
// a partition leader (not the etcd leader), the broker that leads no
// partition (not the etcd leader) and the broker that hosts the etcd leader.
// For each partition it measures the time from the kill until the first
// acknowledgement of a write issued after the kill, and until the consumer
// reads such a write; then it restarts the victim and waits for full ISRs
// and preferred leaders. After the kills come SIGSTOP pauses of a leader and
// whole-cluster restarts (SIGTERM of all three, and kill -9 of all three),
// each timed until acknowledgements resume on every partition.
//
// Environment:
//
//	SAMSA_FAILOVER_OVERRIDES  name=value settings for every broker, space-separated
//	SAMSA_FAILOVER_PAUSES     SIGSTOP rounds (default 3)
//	SAMSA_FAILOVER_PAUSE      how long each pause lasts (default 5s)
//	SAMSA_FAILOVER_PAUSE_MAX  instead, a random length from 1 s to this
//	SAMSA_FAILOVER_SEED       the random lengths' seed (default: the time)
//	SAMSA_FAILOVER_RESTARTS   rounds of each whole-cluster restart (default 1)
//	SAMSA_FAILOVER_LOGS       a directory to keep the brokers' logs in
//	SAMSA_FAILOVER_CLIENT_DEFAULTS=1  franz-go's default retry backoff and
//	                          5 s metadata min age instead of 100 ms
//
// Timings on a shared machine are noisy: compare medians over many samples.
// TestFailoverWithinBounds runs one round of each with default settings and
// fails past twice issue 10's targets.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	failoverTopic      = "failover"
	failoverPartitions = 3
	// failoverWriteEvery is each partition's producer's write interval.
	failoverWriteEvery = 10 * time.Millisecond
	// failoverWait bounds every wait of the benchmark (acks resuming,
	// full ISRs after a restart).
	failoverWait = 120 * time.Second
)

// failoverAssignment makes broker 3 a follower of every partition under
// preferred leadership, so that a follower-only victim exists.
var failoverAssignment = [failoverPartitions][]int32{{1, 2, 3}, {2, 1, 3}, {1, 3, 2}}

// failoverCluster is three `samsa server` processes with embedded etcd
// members forming one etcd cluster.
type failoverCluster struct {
	b     testing.TB
	procs []*Proc // node id i at index i-1
	admin *kgo.Client
	// exits counts brokers that exited on their own: bystanders of a
	// fault, or a paused broker that lost its session and did not register
	// again in the same process.
	exits int
}

func startFailoverCluster(b testing.TB, extra []string) *failoverCluster {
	b.Helper()
	c := &failoverCluster{b: b}
	const n = 3
	var peers []string
	for i := 1; i <= n; i++ {
		p := &Proc{DataDir: b.TempDir(), logDir: b.TempDir(), ports: newProcPorts(b)}
		if dir := os.Getenv("SAMSA_FAILOVER_LOGS"); dir != "" {
			p.logDir = filepath.Join(dir, fmt.Sprintf("broker-%d", i))
			if err := os.MkdirAll(p.logDir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		peers = append(peers, fmt.Sprintf("samsa-%d=http://127.0.0.1:%d", i, p.ports.etcdPeer))
		c.procs = append(c.procs, p)
	}
	for i, p := range c.procs {
		p.Overrides = append([]string{
			"node.id=" + strconv.Itoa(i+1),
			"metadata.etcd.initial.cluster=" + strings.Join(peers, ","),
		}, extra...)
		p.killOnCleanup(b)
	}
	c.startAll()
	var seeds []string
	for _, p := range c.procs {
		seeds = append(seeds, p.Addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(time.Second),
		kgo.RetryTimeout(clusterRequestTimeout), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	c.admin = cl
	WaitFor(b, clusterStartTimeout, func() error {
		md, err := c.metadata()
		if err != nil {
			return err
		}
		if len(md.Brokers) != n || md.ControllerID < 1 {
			return fmt.Errorf("%d brokers registered, controller %d", len(md.Brokers), md.ControllerID)
		}
		return nil
	})
	return c
}

// startAll starts every stopped broker at once: a lone member of the etcd
// cluster does not serve until a quorum runs, so they cannot start one
// after the other.
func (c *failoverCluster) startAll() { c.startExcept(0) }

// startExcept starts every stopped broker but except, at once.
func (c *failoverCluster) startExcept(except int32) {
	c.b.Helper()
	bin := procSamsaBinary(c.b)
	errs := make([]error, len(c.procs))
	var wg sync.WaitGroup
	for i, p := range c.procs {
		if p.running() || int32(i+1) == except {
			continue
		}
		wg.Go(func() { errs[i] = p.startOnce(c.b, bin) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.b.Fatalf("start brokers: %v", err)
	}
}

func (c *failoverCluster) proc(id int32) *Proc { return c.procs[id-1] }

func (c *failoverCluster) metadata() (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	return kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.admin)
}

// partitions returns each partition's leader and ISR size as Metadata
// reports them.
func (c *failoverCluster) partitions() (leaders []int32, isr []int, err error) {
	md, err := c.metadata()
	if err != nil {
		return nil, nil, err
	}
	tp, ok := metadataTopic(md, failoverTopic)
	if !ok || len(tp.Partitions) != failoverPartitions {
		return nil, nil, fmt.Errorf("topic %s not in metadata", failoverTopic)
	}
	leaders, isr = make([]int32, failoverPartitions), make([]int, failoverPartitions)
	for _, p := range tp.Partitions {
		leaders[p.Partition], isr[p.Partition] = p.Leader, len(p.ISR)
	}
	return leaders, isr, nil
}

// revive restarts, as a supervisor would, brokers other than victim that
// exited on their own, and counts them.
func (c *failoverCluster) revive(victim int32) {
	c.b.Helper()
	exited := func() (ids []int32) {
		for i, p := range c.procs {
			if id := int32(i + 1); id != victim && !p.running() {
				ids = append(ids, id)
			}
		}
		return ids
	}
	if len(exited()) == 0 {
		return
	}
	// One exit takes an etcd member along and may cost the others their
	// sessions too: give them time to go, then start all at once (a lone
	// member does not serve).
	time.Sleep(3 * time.Second)
	ids := exited()
	for _, id := range ids {
		c.b.Logf("broker %d exited on its own (%s); restarting it", id, exitStatus(c.proc(id).waitErr))
	}
	c.exits += len(ids)
	c.startExcept(victim)
}

// settle waits until every broker runs, every partition has a full ISR and
// its preferred leader (electing preferred leaders as needed).
func (c *failoverCluster) settle() {
	c.b.Helper()
	c.revive(0)
	WaitFor(c.b, failoverWait, func() error {
		leaders, isr, err := c.partitions()
		if err != nil {
			return err
		}
		for p := range failoverPartitions {
			if isr[p] != 3 {
				return fmt.Errorf("partition %d: ISR of %d", p, isr[p])
			}
		}
		for p := range failoverPartitions {
			if leaders[p] != failoverAssignment[p][0] {
				ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
				kadm.NewClient(c.admin).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{failoverTopic: {int32(p): {}}})
				cancel()
				return fmt.Errorf("partition %d led by %d", p, leaders[p])
			}
		}
		return nil
	})
}

// etcdClient connects to the embedded members of the running brokers.
func (c *failoverCluster) etcdClient() (*clientv3.Client, []string, error) {
	var eps []string
	for _, p := range c.procs {
		if p.running() {
			eps = append(eps, fmt.Sprintf("http://127.0.0.1:%d", p.ports.etcdClient))
		}
	}
	cl, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	return cl, eps, err
}

// etcdLeader returns the node id of the broker whose embedded member leads
// the etcd cluster, and the member ids by node id.
func (c *failoverCluster) etcdLeader() (int32, map[int32]uint64, error) {
	cl, eps, err := c.etcdClient()
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ml, err := cl.MemberList(ctx)
	if err != nil {
		return 0, nil, err
	}
	ids := map[int32]uint64{}
	for _, m := range ml.Members {
		id, err := strconv.Atoi(strings.TrimPrefix(m.Name, "samsa-"))
		if err == nil {
			ids[int32(id)] = m.ID
		}
	}
	for _, ep := range eps {
		st, err := cl.Status(ctx, ep)
		if err != nil {
			continue
		}
		for id, mid := range ids {
			if mid == st.Leader {
				return id, ids, nil
			}
		}
	}
	return 0, nil, errors.New("no etcd leader found")
}

// moveEtcdLeader makes the etcd leader be some broker other than avoid.
// A new etcd leader extends every lease by its election timeout, so after
// a move it waits until the brokers' renewals have brought their leases
// back to their usual expiry: a kill right after would measure the
// extension too.
func (c *failoverCluster) moveEtcdLeader(avoid int32) error {
	leader, ids, err := c.etcdLeader()
	if err != nil || leader != avoid {
		return err
	}
	defer time.Sleep(3 * time.Second)
	to := avoid%3 + 1
	cl, _, err := c.etcdClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	cl.SetEndpoints(fmt.Sprintf("http://127.0.0.1:%d", c.proc(leader).ports.etcdClient))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cl.MoveLeader(ctx, ids[to])
	return err
}

// signal sends sig to broker id.
func (c *failoverCluster) signal(id int32, sig syscall.Signal) {
	c.b.Helper()
	p := c.proc(id)
	if !p.running() {
		c.b.Fatalf("broker %d is not running", id)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		c.b.Fatalf("broker %d: %v: %v", id, sig, err)
	}
}

// stopAll stops every broker at once, with SIGTERM (waiting for clean
// exits) or SIGKILL.
func (c *failoverCluster) stopAll(sig syscall.Signal) {
	c.b.Helper()
	for id := int32(1); id <= 3; id++ {
		c.signal(id, sig)
	}
	for id, p := range c.procs {
		select {
		case <-p.exited:
		case <-time.After(procStopTimeout):
			c.b.Fatalf("broker %d did not exit within %v of %v", id+1, procStopTimeout, sig)
		}
		var ee *exec.ExitError
		if sig == syscall.SIGTERM && p.waitErr != nil {
			// The last members to stop lose the etcd quorum and cannot
			// revoke their sessions.
			c.b.Logf("broker %d exited with %v after SIGTERM", id+1, p.waitErr)
		}
		if sig == syscall.SIGKILL && (!errors.As(p.waitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL) {
			c.b.Fatalf("broker %d: wait = %v after SIGKILL", id+1, p.waitErr)
		}
	}
}

// failoverEvent is one acknowledged or consumed write: when it was issued
// (the record timestamp) and when the ack or the record arrived.
type failoverEvent struct{ sent, at time.Time }

// failoverLoad is one producer per partition (idempotent, acks=all, a
// client of its own so that a stalled partition holds up no other) writing
// every failoverWriteEvery, and one consumer of the whole topic.
type failoverLoad struct {
	mu       sync.Mutex
	acks     [failoverPartitions][]failoverEvent
	reads    [failoverPartitions][]failoverEvent
	failures int
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startFailoverLoad(b testing.TB, c *failoverCluster) *failoverLoad {
	b.Helper()
	var seeds []string
	for _, p := range c.procs {
		seeds = append(seeds, p.Addr)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTimeout(time.Second)}
	if os.Getenv("SAMSA_FAILOVER_CLIENT_DEFAULTS") == "" {
		// Retries and metadata refreshes every 100 ms at most, as the
		// Java client's retry.backoff.ms, rather than franz-go's 5 s
		// minimum metadata age: the numbers measure the cluster.
		opts = append(opts, kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
			kgo.MetadataMinAge(100*time.Millisecond))
	}
	l := &failoverLoad{stop: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	for p := range int32(failoverPartitions) {
		cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.DefaultProduceTopic(failoverTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0))...)
		if err != nil {
			b.Fatal(err)
		}
		l.wg.Go(func() {
			defer cl.Close()
			tick := time.NewTicker(failoverWriteEvery)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				r := &kgo.Record{Partition: p, Timestamp: time.Now(), Value: fmt.Appendf(nil, "p%d-%08d", p, i)}
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					now := time.Now()
					l.mu.Lock()
					defer l.mu.Unlock()
					if err != nil {
						l.failures++
						return
					}
					l.acks[p] = append(l.acks[p], failoverEvent{r.Timestamp, now})
				})
			}
		})
	}
	cons, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(failoverTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		b.Fatal(err)
	}
	l.wg.Go(func() {
		defer cons.Close()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			l.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				l.reads[r.Partition] = append(l.reads[r.Partition], failoverEvent{r.Timestamp, now})
			})
			l.mu.Unlock()
		}
	})
	b.Cleanup(func() {
		close(l.stop)
		cancel()
		l.wg.Wait()
	})
	return l
}

// firstAfter returns how long after t the first event of a write issued
// after t happened.
func firstAfter(evs []failoverEvent, t time.Time) (time.Duration, bool) {
	// Events arrive roughly in order: look from the end back to the first
	// one before t, with a margin for reordering.
	i := len(evs)
	for i > 0 && evs[i-1].at.After(t.Add(-time.Second)) {
		i--
	}
	var first time.Time
	for _, e := range evs[i:] {
		if e.sent.After(t) && (first.IsZero() || e.at.Before(first)) {
			first = e.at
		}
	}
	return first.Sub(t), !first.IsZero()
}

// resumed waits until every partition acknowledged and delivered to the
// consumer a write issued after t, and returns the times per partition.
// Meanwhile brokers other than victim that exit are restarted.
func (l *failoverLoad) resumed(b testing.TB, c *failoverCluster, victim int32, t time.Time) (acks, reads []time.Duration) {
	b.Helper()
	WaitFor(b, failoverWait, func() error {
		c.revive(victim)
		l.mu.Lock()
		defer l.mu.Unlock()
		acks, reads = nil, nil
		for p := range failoverPartitions {
			a, ok := firstAfter(l.acks[p], t)
			if !ok {
				return fmt.Errorf("partition %d: no write issued since %v acknowledged", p, time.Since(t).Round(time.Millisecond))
			}
			r, ok := firstAfter(l.reads[p], t)
			if !ok {
				return fmt.Errorf("partition %d: no write issued since %v consumed", p, time.Since(t).Round(time.Millisecond))
			}
			acks, reads = append(acks, a), append(reads, r)
		}
		return nil
	})
	return acks, reads
}

// failoverSamples collects durations in seconds.
type failoverSamples []float64

func (s *failoverSamples) add(ds ...time.Duration) {
	for _, d := range ds {
		*s = append(*s, d.Seconds())
	}
}

// quantile is the nearest-rank q-quantile.
func (s failoverSamples) quantile(q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	v := slices.Sorted(slices.Values(s))
	return v[max(int(math.Ceil(q*float64(len(v))))-1, 0)]
}

func (s failoverSamples) report(b *testing.B, name string) {
	if len(s) == 0 {
		return
	}
	b.ReportMetric(s.quantile(0.5), name+"-p50-s")
	b.ReportMetric(s.quantile(0.99), name+"-p99-s")
	b.ReportMetric(s.quantile(1), name+"-max-s")
	b.Logf("%s: p50 %.2fs p99 %.2fs max %.2fs over %d samples", name, s.quantile(0.5), s.quantile(0.99), s.quantile(1), len(s))
}

func failoverMax(ds []time.Duration) time.Duration { return slices.Max(ds) }

func failoverEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func fmtDurations(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Round(10*time.Millisecond).String())
	}
	return strings.Join(s, " ")
}

// createFailoverTopic creates failoverTopic (RF 3, min ISR 2) and waits
// until every partition has its full ISR and preferred leader.
func (c *failoverCluster) createFailoverTopic(tb testing.TB) {
	tb.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = failoverTopic, -1, -1
	for p, replicas := range failoverAssignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	minISR := "2"
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", &minISR
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	resp, err := req.RequestWith(ctx, c.admin)
	cancel()
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		tb.Fatalf("create topic: %v %+v", err, resp)
	}
	c.settle()
}

// failoverKinds are the brokers a kill targets, in turn: the leader of
// partition 0, the broker that leads nothing (3), and the etcd leader's
// host; the first two with the etcd leader moved elsewhere beforehand.
var failoverKinds = []string{"leader", "follower", "etcd-leader"}

// kill settles the cluster, kills a broker of the given kind with kill -9,
// waits until every partition acknowledged and delivered a write issued
// after the kill, and restarts the broker. n numbers it in the log.
func (c *failoverCluster) kill(tb testing.TB, load *failoverLoad, kind string, n int) (acks, reads []time.Duration) {
	tb.Helper()
	c.settle()
	leaders, _, err := c.partitions()
	if err != nil {
		tb.Fatal(err)
	}
	var victim int32
	switch kind {
	case "leader":
		victim = leaders[0]
		err = c.moveEtcdLeader(victim)
	case "follower":
		victim = 3
		err = c.moveEtcdLeader(victim)
	case "etcd-leader":
		victim, _, err = c.etcdLeader()
	}
	if err != nil {
		tb.Fatalf("place the etcd leader: %v", err)
	}
	etcdLeader, _, err := c.etcdLeader()
	if err != nil {
		tb.Fatal(err)
	}
	md, err := c.metadata()
	if err != nil {
		tb.Fatal(err)
	}
	roles := []string{}
	for p, l := range leaders {
		if l == victim {
			roles = append(roles, fmt.Sprintf("leader of %d", p))
		}
	}
	if md.ControllerID == victim {
		roles = append(roles, "controller")
	}
	if etcdLeader == victim {
		roles = append(roles, "etcd leader")
	}
	killed := time.Now()
	c.proc(victim).Kill9(tb)
	acks, reads = load.resumed(tb, c, victim, killed)
	tb.Logf("kill -9 #%d at %s of broker %d (%s; %v): acks resumed after %s, reads after %s",
		n, killed.UTC().Format("15:04:05.000"), victim, kind, roles, fmtDurations(acks), fmtDurations(reads))
	c.proc(victim).Restart(tb)
	return acks, reads
}

// pause settles the cluster, stops broker victim (SIGSTOP) for d with the
// etcd leader on it, continues it and waits until every partition
// acknowledged and delivered a write issued after the stop. A broker that
// exits meanwhile (the victim, which registers again in the same process
// after losing its session, or a bystander) is counted in c.exits and
// restarted.
func (c *failoverCluster) pause(tb testing.TB, load *failoverLoad, victim int32, d time.Duration, n int) (acks, reads []time.Duration) {
	tb.Helper()
	c.settle()
	if err := c.moveEtcdLeader(victim); err != nil {
		tb.Fatal(err)
	}
	stopped := time.Now()
	c.signal(victim, syscall.SIGSTOP)
	time.Sleep(d) // the fault's length: nothing to wait for
	c.signal(victim, syscall.SIGCONT)
	acks, reads = load.resumed(tb, c, victim, stopped)
	exited := ""
	select {
	case <-c.proc(victim).exited:
		exited = "; it exited after SIGCONT (" + exitStatus(c.proc(victim).waitErr) + ")"
	case <-time.After(2 * time.Second):
	}
	for id := int32(1); id <= 3; id++ {
		if id != victim && !c.proc(id).running() {
			exited += fmt.Sprintf("; bystander %d exited", id)
		}
	}
	tb.Logf("SIGSTOP #%d of broker %d for %v: acks resumed after %s, reads after %s%s",
		n, victim, d, fmtDurations(acks), fmtDurations(reads), exited)
	if !c.proc(victim).running() {
		// A broker that finds its registration gone registers again in
		// the same process (broker.Run): an exit is a failure, counted
		// in "exits" like a bystander's.
		c.exits++
		c.proc(victim).Restart(tb)
	}
	return acks, reads
}

// restartAll settles the cluster, stops every broker with sig, starts them
// all at once and returns how long after the starts every partition
// acknowledged and delivered a write.
func (c *failoverCluster) restartAll(tb testing.TB, load *failoverLoad, sig syscall.Signal, n int) (acks, reads []time.Duration) {
	tb.Helper()
	c.settle()
	down := time.Now()
	c.stopAll(sig)
	stopped := time.Now()
	c.startAll()
	listening := time.Now()
	acks, reads = load.resumed(tb, c, 0, stopped)
	tb.Logf("whole-cluster restart #%d (%v): stopped in %v, listening %v after the starts, acks resumed after %s, reads after %s",
		n, sig, stopped.Sub(down).Round(time.Millisecond), listening.Sub(stopped).Round(time.Millisecond), fmtDurations(acks), fmtDurations(reads))
	return acks, reads
}

func BenchmarkFailover(b *testing.B) {
	extra := strings.Fields(os.Getenv("SAMSA_FAILOVER_OVERRIDES"))
	c := startFailoverCluster(b, extra)
	b.Logf("overrides: %v", extra)
	c.createFailoverTopic(b)
	load := startFailoverLoad(b, c)
	// Everything flowing before the first fault.
	load.resumed(b, c, 0, time.Now())

	var all, worst, reads failoverSamples
	byKind := map[string]*failoverSamples{}
	for _, k := range failoverKinds {
		byKind[k] = &failoverSamples{}
	}
	i := 0
	for b.Loop() {
		kind := failoverKinds[i%len(failoverKinds)]
		i++
		acks, rd := c.kill(b, load, kind, i)
		all.add(acks...)
		worst.add(failoverMax(acks))
		reads.add(failoverMax(rd))
		byKind[kind].add(failoverMax(acks))
	}
	b.StopTimer()

	var pauses failoverSamples
	pause := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SAMSA_FAILOVER_PAUSE")); err == nil {
		pause = d
	}
	// SAMSA_FAILOVER_PAUSE_MAX: each pause lasts a random time from 1 s
	// to that (seeded with SAMSA_FAILOVER_SEED, else the time).
	var rnd *rand.Rand
	maxPause, _ := time.ParseDuration(os.Getenv("SAMSA_FAILOVER_PAUSE_MAX"))
	if maxPause > time.Second {
		seed := uint64(failoverEnvInt("SAMSA_FAILOVER_SEED", int(time.Now().UnixNano()%1e9)))
		b.Logf("pauses of 1 s to %v, seed %d", maxPause, seed)
		rnd = rand.New(rand.NewPCG(seed, seed))
	}
	for j := range failoverEnvInt("SAMSA_FAILOVER_PAUSES", 3) {
		d := pause
		if rnd != nil {
			d = time.Second + time.Duration(rnd.Int64N(int64(maxPause-time.Second)))
		}
		acks, _ := c.pause(b, load, int32(j%3+1), d, j+1)
		pauses.add(failoverMax(acks))
	}

	restarts := map[string]*failoverSamples{"restart-sigterm": {}, "restart-kill9": {}}
	for j := range failoverEnvInt("SAMSA_FAILOVER_RESTARTS", 1) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			name := "restart-sigterm"
			if sig == syscall.SIGKILL {
				name = "restart-kill9"
			}
			acks, _ := c.restartAll(b, load, sig, j+1)
			restarts[name].add(failoverMax(acks))
		}
	}

	all.report(b, "ack")
	worst.report(b, "ack-all-partitions")
	reads.report(b, "read-all-partitions")
	for _, k := range failoverKinds {
		byKind[k].report(b, "ack-"+k)
	}
	pauses.report(b, "pause")
	restarts["restart-sigterm"].report(b, "restart-sigterm")
	restarts["restart-kill9"].report(b, "restart-kill9")
	b.ReportMetric(float64(c.exits), "exits")
	load.mu.Lock()
	b.Logf("producer failures (retried by nobody; an idempotent producer retries until delivery): %d", load.failures)
	load.mu.Unlock()
}

// Issue 10's failover targets, with default settings: after kill -9 of
// any one broker of three, acks=all writes to every partition are
// acknowledged again within failoverTarget; a whole-cluster restart serves
// again within restartTarget of the starts; a paused broker makes no
// broker exit. TestFailoverWithinBounds fails past twice those targets (a
// shared, noisy machine); BenchmarkFailover measures the distribution.
const (
	failoverTarget = 3 * time.Second
	restartTarget  = 10 * time.Second
)

// TestFailoverWithinBounds: three `samsa server` processes with embedded
// etcd members and default settings, under idempotent acks=all load: one
// kill -9 of each kind (a partition leader, the broker that leads
// nothing, the etcd leader's host), a pause past the session timeout, and
// a whole-cluster kill -9 and restart, each timed until every partition
// acknowledges and delivers writes again.
func TestFailoverWithinBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("three brokers, three kills, a pause and a restart: about a minute")
	}
	c := startFailoverCluster(t, nil)
	c.createFailoverTopic(t)
	load := startFailoverLoad(t, c)
	load.resumed(t, c, 0, time.Now())
	for i, kind := range failoverKinds {
		acks, _ := c.kill(t, load, kind, i+1)
		if worst := failoverMax(acks); worst > 2*failoverTarget {
			t.Errorf("kill -9 of a broker (%s): acks resumed on every partition after %v, want at most %v (twice the %v target)",
				kind, worst.Round(time.Millisecond), 2*failoverTarget, failoverTarget)
		}
	}
	// Paused for twice its session timeout (2 s), on the etcd leader's
	// host: it loses its session and registers again; nobody exits.
	c.pause(t, load, 1, 4*time.Second, 1)
	if c.exits > 0 {
		t.Errorf("%d brokers exited after a pause of one", c.exits)
	}
	acks, _ := c.restartAll(t, load, syscall.SIGKILL, 1)
	if worst := failoverMax(acks); worst > 2*restartTarget {
		t.Errorf("whole-cluster restart after kill -9: acks resumed on every partition %v after the starts, want at most %v (twice the %v target)",
			worst.Round(time.Millisecond), 2*restartTarget, restartTarget)
	}
}
