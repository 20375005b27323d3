package test

// Replication fault scenarios on the process harness (cluster_test.go),
// each asserting with real clients and ending with the replication
// checker (checker_test.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// createAssignedTopic creates topic with a manual replica assignment
// (assignment[p] lists partition p's replicas, preferred leader first)
// and topic configs.
func createAssignedTopic(t testing.TB, c *Cluster, topic string, assignment [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.client)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// partitionOf is topic-partition p as the cluster's metadata shows it.
func partitionOf(c *Cluster, topic string, p int32) (kmsg.MetadataResponseTopicPartition, error) {
	md, err := c.Metadata()
	if err != nil {
		return kmsg.MetadataResponseTopicPartition{}, err
	}
	tp, ok := metadataTopic(md, topic)
	if !ok || int(p) >= len(tp.Partitions) {
		return kmsg.MetadataResponseTopicPartition{}, fmt.Errorf("%s-%d not in metadata", topic, p)
	}
	for _, pp := range tp.Partitions {
		if pp.Partition == p {
			return pp, nil
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, fmt.Errorf("%s-%d not in metadata", topic, p)
}

// waitPartition waits until topic-partition p has leader (any live one
// if -2) and exactly the ISR isr (any if nil), and returns it.
func waitPartition(t testing.TB, c *Cluster, topic string, p int32, leader int32, isr []int32, timeout time.Duration) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	var got kmsg.MetadataResponseTopicPartition
	WaitFor(t, timeout, func() error {
		var err error
		if got, err = partitionOf(c, topic, p); err != nil {
			return err
		}
		if leader == -2 && got.Leader < 0 || leader != -2 && got.Leader != leader || isr != nil && !sameSet(got.ISR, isr) {
			return fmt.Errorf("%s-%d: leader %d ISR %v epoch %d; want leader %d ISR %v", topic, p, got.Leader, got.ISR, got.LeaderEpoch, leader, isr)
		}
		return nil
	})
	return got
}

// checkpointedHW reads the high watermark a broker last checkpointed for a
// replica (the logs/high-watermark-checkpoint file of internal/broker:
// "version\ncount\n" then "topic partition topic-id hw" lines); 0 if there
// is none yet, as the replica itself reads it.
func checkpointedHW(t testing.TB, c *Cluster, id int32, topic string, p int32) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dataDir(id), "logs", "high-watermark-checkpoint"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		t.Fatalf("broker %d's high watermark checkpoint: unknown format %q", id, b)
	}
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == topic && f[1] == strconv.Itoa(int(p)) {
			hw, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return hw
		}
	}
	return 0
}

// logEnd is the offset after the last whole batch in a replica's log on
// disk.
func logEnd(t testing.TB, c *Cluster, id int32, topic string, p int32) int64 {
	t.Helper()
	batches, err := ReadReplicaBatches(replicaDir(c, id, topic, p))
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) == 0 {
		return 0
	}
	return batches[len(batches)-1].Last + 1
}

// A follower falls out of the ISR three ways — it cannot reach the leader
// for longer than replica.lag.time.max.ms while its registration stays
// live, it is killed, it is paused past its session — and writes go on
// with the other two replicas; healed, it catches up and rejoins, and no
// acknowledged write is lost.
func TestFollowerLeavesAndRejoinsISR(t *testing.T) {
	faults := []struct {
		name         string
		inject, heal func(c *Cluster, leader, follower int32)
	}{
		{"cut from the leader", func(c *Cluster, l, f int32) { c.CutBetween(l, f) }, func(c *Cluster, l, f int32) { c.HealBetween(l, f) }},
		{"kill -9", func(c *Cluster, _, f int32) { c.Kill9(f) }, func(c *Cluster, _, f int32) { c.Restart(f) }},
		{"paused past its session", func(c *Cluster, _, f int32) { c.Pause(f) }, func(c *Cluster, _, f int32) {
			// Its session is gone: it steps down and registers again in
			// the same process (the ISR wait below times out if it
			// does not).
			c.Resume(f)
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			c := StartCluster(t, 3, WithOverrides("replica.lag.time.max.ms=2000"))
			const topic = "lag"
			createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
			waitPartition(t, c, topic, 0, 1, []int32{1, 2, 3}, 30*time.Second)
			w := startAckedWorkload(t, c, topic, 1, 2)
			w.WaitAcked(t, 300, 30*time.Second)

			f.inject(c, 1, 3)
			injected := time.Now()
			waitPartition(t, c, topic, 0, 1, []int32{1, 2}, 30*time.Second)
			shrunk := time.Since(injected)
			if f.name == "cut from the leader" {
				// The lag rule did it, not the controller: broker 3 is still
				// registered.
				md, err := c.Metadata()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(metadataBrokerIDs(md), 3) {
					t.Fatalf("broker 3 lost its registration; the ISR shrink must come from the leader's lag check")
				}
			}
			atShrink := w.Acked()
			w.WaitAcked(t, atShrink+300, 30*time.Second)

			f.heal(c, 1, 3)
			healed := time.Now()
			waitPartition(t, c, topic, 0, 1, []int32{1, 2, 3}, 60*time.Second)
			t.Logf("ISR shrank %v after the fault, grew back %v after healing", shrunk.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond))
			w.WaitAcked(t, w.Acked()+100, 30*time.Second)
			w.Stop(t)
			n := w.Verify(t, c)
			t.Logf("%d writes acknowledged, %d of them before the ISR shrank", n, atShrink)
			CheckReplication(t, c, topic)
		})
	}
}

// KIP-101's first scenario: a follower's high watermark lags the leader's
// by a fetch round, so a follower that truncated to its own checkpointed
// high watermark on restart would drop acknowledged records, and lose
// them for good if it then became leader. Here the follower is killed
// right after the acknowledgements, with its checkpoint behind (shown),
// and restarted while the leader is paused; its log keeps every record
// (no truncation to the high watermark), the leader then dies, and after
// the cluster heals every acknowledged record is where it was
// acknowledged.
func TestKIP101AckedWriteNotLostToHighWatermarkTruncation(t *testing.T) {
	// Checkpoints of the high watermark only at start-up and shutdown, so
	// the follower's is surely behind when it is killed.
	c := StartCluster(t, 3, WithOverrides("replica.high.watermark.checkpoint.interval.ms=3600000"))
	const topic = "kip101-hw"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, nil)
	waitPartition(t, c, topic, 0, 1, []int32{1, 2}, 30*time.Second)
	w := startAckedWorkload(t, c, topic, 1, 1)
	w.WaitAcked(t, 200, 30*time.Second)
	w.Stop(t)
	acked := w.Acked()

	c.Pause(1)
	c.Kill9(2)
	hw := checkpointedHW(t, c, 2, topic, 0)
	if hw >= int64(acked) {
		t.Fatalf("broker 2's checkpointed high watermark %d already covers the %d acknowledged records: the scenario needs it behind", hw, acked)
	}
	c.Restart(2)
	// Broker 2 has recovered its log once it serves metadata; nothing can
	// have been fetched since (its leader is paused).
	WaitFor(t, 30*time.Second, func() error {
		_, err := c.MetadataFrom(2)
		return err
	})
	if end := logEnd(t, c, 2, topic, 0); end < int64(acked) {
		t.Fatalf("broker 2 restarted with its log ending at %d, below the %d acknowledged records (its checkpointed HW was %d)", end, acked, hw)
	}
	c.Kill9(1)
	// Whoever leads now (broker 2, or nobody until broker 1 returns),
	// nothing acknowledged may be lost.
	c.Restart(1)
	waitPartition(t, c, topic, 0, -2, []int32{1, 2}, 60*time.Second)
	if n := w.Verify(t, c); n != acked {
		t.Fatalf("verified %d acknowledged writes, want %d", n, acked)
	}
	t.Logf("follower killed with checkpointed HW %d of %d acknowledged; restarted with all %d", hw, acked, acked)
	CheckReplication(t, c, topic)
}

// truncateReplicaLog cuts a stopped replica's log at offset end, as a
// power loss would drop what was never fsynced: every batch from end on
// is removed from its segment and later segments are deleted. The
// replica's indexes and checkpoints are left as they were, as after a
// power loss.
func truncateReplicaLog(t testing.TB, c *Cluster, id int32, topic string, p int32, end int64) {
	t.Helper()
	dir := replicaDir(c, id, topic, p)
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if base >= end && base > 0 {
			if err := os.Remove(n); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pos := int64(0)
		for _, batch := range SegmentBatches(b) {
			if batch.Base >= end {
				break
			}
			pos += int64(len(batch.Bytes))
		}
		if err := os.Truncate(n, pos); err != nil {
			t.Fatal(err)
		}
	}
}

// KIP-101's second scenario: replicas diverge after a double failure.
// Leader A and follower B hold the same records; A dies, B leads, then B
// loses power with records it had never fsynced (a page-cache topic, and
// the test cuts B's log tail as the power loss would). B comes back first
// and leads, taking new writes at the offsets it lost; A comes back with
// its old records there, below its own checkpointed high watermark, so
// truncating to the high watermark would keep them and the replicas
// would hold different records at the same offsets. With leader epochs A
// truncates at the divergence point and takes B's records: the replicas
// end byte-identical, and every write acknowledged after B's return is
// there. (Records acknowledged before the power loss and held only by B's
// page cache are lost: page-cache durability promises no more.)
func TestKIP101NoReplicaDivergenceAfterDoubleFailure(t *testing.T) {
	c := StartCluster(t, 3, WithOverrides("replica.high.watermark.checkpoint.interval.ms=100"))
	const topic = "kip101-div"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2}}, map[string]string{"flush.messages": "1000000"})
	waitPartition(t, c, topic, 0, 1, []int32{1, 2}, 30*time.Second)
	w := startAckedWorkload(t, c, topic, 1, 1)
	w.WaitAcked(t, 400, 30*time.Second)
	w.Stop(t)
	acked := int64(w.Acked())
	// A's checkpoint covers everything acknowledged before it dies.
	WaitFor(t, 30*time.Second, func() error {
		if hw := checkpointedHW(t, c, 1, topic, 0); hw < acked {
			return fmt.Errorf("broker 1's checkpointed high watermark %d < %d", hw, acked)
		}
		return nil
	})
	c.Kill9(1)
	waitPartition(t, c, topic, 0, 2, []int32{2}, 30*time.Second)
	c.Kill9(2)
	cut := acked / 2
	truncateReplicaLog(t, c, 2, topic, 0, cut)
	hwA := checkpointedHW(t, c, 1, topic, 0)
	endB := logEnd(t, c, 2, topic, 0)
	if end := endB; end >= acked || hwA <= end {
		t.Fatalf("after the power loss broker 2 ends at %d and broker 1's checkpointed HW is %d: the scenario needs the HW above B's end", end, hwA)
	}

	c.Restart(2)
	waitPartition(t, c, topic, 0, 2, []int32{2}, 60*time.Second)
	w2 := startAckedWorkload(t, c, topic, 1, 1)
	w2.WaitAcked(t, 100, 30*time.Second)
	w2.Stop(t)
	end2 := logEnd(t, c, 2, topic, 0)

	c.Restart(1)
	waitPartition(t, c, topic, 0, -2, []int32{1, 2}, 60*time.Second)
	w2.Verify(t, c)
	CheckReplication(t, c, topic)
	// The truncation audit (docs/metrics.md) counted what broker 1 cut
	// below its high watermark: records acknowledged before B's power
	// loss, lost with page-cache durability.
	fams, err := scrape(t, c.Broker(1).Proc.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	removed := metricSum(fams, "samsa_truncated_records_total", nil)
	committed := metricSum(fams, "samsa_truncated_committed_records_total", nil)
	if committed < 1 || committed > float64(hwA-endB) || removed < committed {
		t.Errorf("broker 1's truncation audit: %v removed, %v below its high watermark; want 1 to %d below it, and removed ≥ that", removed, committed, hwA-endB)
	}
	// The replica's own audit (/v1/replicas, what --explain prints)
	// says the same of this partition.
	var replicas []struct {
		Partition   int32 `json:"partition"`
		Truncations struct {
			Count            int64 `json:"count"`
			Removed          int64 `json:"removed"`
			RemovedCommitted int64 `json:"removed_committed"`
		} `json:"truncations"`
	}
	if err := getJSONBody(c.Broker(1).Proc.MetricsURL+"/v1/replicas?topic="+topic, &replicas); err != nil {
		t.Fatal(err)
	}
	if len(replicas) != 1 || replicas[0].Truncations.Count < 1 ||
		float64(replicas[0].Truncations.RemovedCommitted) != committed || float64(replicas[0].Truncations.Removed) != removed {
		t.Errorf("broker 1's /v1/replicas for %s: %+v; want one replica whose audit matches the metrics (%v removed, %v committed)", topic, replicas, removed, committed)
	}
	t.Logf("broker 1 held offsets [%d, %d) of epoch 0 below its checkpointed HW %d; broker 2 lost them and wrote %d new records up to %d; broker 1 truncated and converged",
		endB, acked, hwA, w2.Acked(), end2)
}

// The controller dies in the middle of failing over the partitions of a
// dead broker: right after its first partition-state write. The next
// controller finishes from etcd alone: every partition gets a live leader,
// no epoch has two leaders and epochs only grow (the checker's etcd
// history), and no acknowledged write is lost.
func TestControllerCrashMidElection(t *testing.T) {
	c := StartCluster(t, 3)
	const topic = "midelect"
	createClusterTopic(t, c, topic, 6, 3)
	for p := range int32(6) {
		waitPartition(t, c, topic, p, -2, []int32{1, 2, 3}, 30*time.Second)
	}
	controller, err := c.Controller()
	if err != nil {
		t.Fatal(err)
	}
	// A broker other than the controller that leads something, and every
	// partition's leader epoch before it dies.
	var victim int32 = -1
	epochs := map[int32]int32{}
	for p := range int32(6) {
		pp, err := partitionOf(c, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if pp.Leader != controller {
			victim = pp.Leader
		}
		epochs[p] = pp.LeaderEpoch
	}
	if victim < 0 {
		t.Fatalf("the controller (%d) leads every partition", controller)
	}
	w := startAckedWorkload(t, c, topic, 6, 3)
	w.WaitAcked(t, 1000, 30*time.Second)

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.EtcdAddr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watch := cli.Watch(ctx, "/samsa/", clientv3.WithPrefix())
	c.Kill9(victim)
	// The controller's first election after the kill: the first partition
	// state with a new leader epoch.
	var first meta.PartitionState
	for found := false; !found; {
		resp, ok := <-watch
		if !ok {
			t.Fatalf("no election after broker %d died: %v", victim, ctx.Err())
		}
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut || !strings.Contains(string(ev.Kv.Key), "/partitions/"+topic+"/") {
				continue
			}
			if err := meta.Decode(ev.Kv.Value, &first); err != nil {
				t.Fatal(err)
			}
			if first.LeaderEpoch > epochs[first.Partition] {
				found = true
				break
			}
		}
	}
	c.Kill9(controller)
	killedAt := time.Now()
	survivor := without(without(c.IDs(), victim), controller)[0]
	for p := range int32(6) {
		waitPartition(t, c, topic, p, survivor, []int32{survivor}, 60*time.Second)
	}
	t.Logf("controller %d killed after electing %d for %s-%d (epoch %d) when broker %d died; broker %d leads all six %v later",
		controller, first.Leader, topic, first.Partition, first.LeaderEpoch, victim, survivor, time.Since(killedAt).Round(time.Millisecond))
	w.WaitAcked(t, w.Acked()+500, 30*time.Second)
	c.Restart(victim)
	c.Restart(controller)
	for p := range int32(6) {
		waitPartition(t, c, topic, p, -2, []int32{1, 2, 3}, 60*time.Second)
	}
	w.Stop(t)
	n := w.Verify(t, c)
	t.Logf("%d writes acknowledged", n)
	CheckReplication(t, c, topic)
}

// Unclean leader election happens only where the topic enables it. Two
// topics on brokers 1 and 2: the follower dies, writes go on to the
// leader alone, the leader dies, and the follower returns. The topic
// without unclean.leader.election.enable stays offline (no data lost,
// none available) until the old leader returns; the one with it elects
// the returned follower at once, losing the writes only the dead leader
// had, and when the old leader returns it truncates to the new leader's
// log, so the replicas converge. A consumer that had read the lost write
// is told of the loss (KIP-320) and reads the new record in its place.
func TestUncleanLeaderElectionOnlyWhenEnabled(t *testing.T) {
	c := StartCluster(t, 3)
	createAssignedTopic(t, c, "clean", [][]int32{{1, 2}}, nil)
	createAssignedTopic(t, c, "unclean", [][]int32{{1, 2}}, map[string]string{"unclean.leader.election.enable": "true"})
	for _, topic := range []string{"clean", "unclean"} {
		waitPartition(t, c, topic, 0, 1, []int32{1, 2}, 30*time.Second)
	}
	produce := func(topic, value string) {
		t.Helper()
		cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce %s to %s: %v", value, topic, err)
		}
	}
	for _, topic := range []string{"clean", "unclean"} {
		produce(topic, "both-have-it")
	}
	c.Kill9(2)
	for _, topic := range []string{"clean", "unclean"} {
		waitPartition(t, c, topic, 0, 1, []int32{1}, 30*time.Second)
		produce(topic, "only-1-has-it")
	}
	// A consumer reads both records of the unclean topic from broker 1 and
	// stays, positioned after them (KIP-320 tracks their leader epoch).
	watcher := c.Client(kgo.ConsumeTopics("unclean"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pollCtx, pollCancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pollCancel()
	for seen := 0; seen < 2; {
		fs := watcher.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			t.Fatalf("consumer read %d records of unclean before the failure", seen)
		}
		seen += fs.NumRecords()
	}
	c.Kill9(1)
	for _, topic := range []string{"clean", "unclean"} {
		waitPartition(t, c, topic, 0, -1, []int32{1}, 30*time.Second)
	}
	c.Restart(2)
	uncl := waitPartition(t, c, "unclean", 0, 2, []int32{2}, 30*time.Second)
	// The controller has seen broker 2 back (it elected it above); the
	// clean topic must still have no leader.
	if cl, err := partitionOf(c, "clean", 0); err != nil || cl.Leader != -1 {
		t.Fatalf("clean topic after broker 2 returned: leader %d ISR %v (%v); want offline", cl.Leader, cl.ISR, err)
	}
	produce("unclean", "written-after-unclean-election")
	// The consumer finds that offset 1 was replaced (KIP-320: its
	// OffsetForLeaderEpoch for the epoch of what it read answers an end
	// offset below its position), is told so, and reads the new record.
	var loss *kgo.ErrDataLoss
	var after []string
	for len(after) == 0 {
		fs := watcher.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			t.Fatalf("consumer saw neither data loss nor the new record after the unclean election")
		}
		for _, fe := range fs.Errors() {
			var dl *kgo.ErrDataLoss
			if errors.As(fe.Err, &dl) {
				loss = dl
			}
		}
		fs.EachRecord(func(r *kgo.Record) { after = append(after, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	if loss == nil || loss.ConsumedTo != 2 || loss.ResetTo != 1 {
		t.Fatalf("consumer's data-loss report: %+v; want consumed to 2, reset to 1", loss)
	}
	if after[0] != "1:written-after-unclean-election" {
		t.Fatalf("consumer read %v after the unclean election, want the new record at offset 1", after)
	}

	c.Restart(1)
	waitPartition(t, c, "clean", 0, 1, nil, 60*time.Second)
	for _, topic := range []string{"clean", "unclean"} {
		waitPartition(t, c, topic, 0, -2, []int32{1, 2}, 60*time.Second)
	}
	read := func(topic string) []string {
		t.Helper()
		cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []string
		for len(got) < 2 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: read %v", topic, got)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	if got := read("clean"); !slices.Equal(got, []string{"both-have-it", "only-1-has-it"}) {
		t.Fatalf("clean topic holds %v, want both acknowledged writes", got)
	}
	if got := read("unclean"); !slices.Equal(got, []string{"both-have-it", "written-after-unclean-election"}) {
		t.Fatalf("unclean topic holds %v, want the first write and the one after the unclean election", got)
	}
	t.Logf("unclean election of broker 2 at epoch %d; the clean topic waited for broker 1", uncl.LeaderEpoch)
	CheckReplication(t, c, "clean", "unclean")
}

// A new leader withholds its high watermark from consumers until it is
// known (its followers have reached the start of its epoch): until then
// it may lag the previous leader's, and a consumer would see the high
// watermark go back. Broker 2 becomes leader holding 10 records that broker
// 3, still in the ISR, cannot fetch (cut from both); consumer fetches get
// REPLICA_NOT_AVAILABLE (retriable) and ListOffsets OFFSET_NOT_AVAILABLE
// while followers keep fetching; healed, consumers read everything with
// the full high watermark.
func TestNewLeaderWithholdsHighWatermark(t *testing.T) {
	// The lag limit keeps broker 3 in the ISR while it is cut off.
	c := StartCluster(t, 3, WithOverrides("replica.lag.time.max.ms=600000"))
	const topic = "hw-known"
	createAssignedTopic(t, c, topic, [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "1"})
	waitPartition(t, c, topic, 0, 1, []int32{1, 2, 3}, 30*time.Second)
	produce := func(acks kgo.Acks, n int) {
		cl := c.Client(kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(kgo.AllISRAcks(), 20)
	c.CutBetween(1, 3)
	produce(kgo.LeaderAck(), 10) // broker 2 copies them; the high watermark stays at 20
	WaitFor(t, 30*time.Second, func() error {
		if end := logEnd(t, c, 2, topic, 0); end != 30 {
			return fmt.Errorf("broker 2's log ends at %d, want 30", end)
		}
		return nil
	})
	c.CutBetween(2, 3)
	c.Stop(1)
	waitPartition(t, c, topic, 0, 2, []int32{2, 3}, 30*time.Second)

	cl := c.Client()
	fetch := func() kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl.Broker(2))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	if p := fetch(); p.ErrorCode != kerr.ReplicaNotAvailable.Code || len(p.RecordBatches) != 0 {
		t.Errorf("consumer fetch from the new leader with its high watermark unknown: error %v, %d bytes, high watermark %d; want REPLICA_NOT_AVAILABLE and nothing",
			kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), p.HighWatermark)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); !errors.Is(o.Err, kerr.OffsetNotAvailable) {
		t.Errorf("ListOffsets latest from the new leader: offset %d, error %v; want OFFSET_NOT_AVAILABLE", o.Offset, o.Err)
	}

	c.HealBetween(2, 3)
	WaitFor(t, 30*time.Second, func() error {
		p := fetch()
		if p.ErrorCode != 0 || p.HighWatermark != 30 {
			return fmt.Errorf("consumer fetch: error %v, high watermark %d; want 30", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
		}
		return nil
	})
	c.HealBetween(1, 3)
	c.Restart(1)
	waitPartition(t, c, topic, 0, -2, []int32{1, 2, 3}, 60*time.Second)
	CheckReplication(t, c, topic)
}
