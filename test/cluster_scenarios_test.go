package test

// Cluster scenarios on the harness of cluster_test.go that need only the
// control plane (controller, registrations, partition states) and
// single-replica data: followers do not fetch yet, so nothing here
// produces to a partition with more than one replica or expects the ISR
// to grow back.
//
// Expected partition states follow DESIGN.md §4 and the controller's rules
// (internal/controller/plan.go): when a broker's registration goes, each
// partition it led gets the first replica in assignment order that is alive
// and in the ISR as leader, with the leader epoch + 1 and the dead broker
// out of the ISR; a partition with no live ISR member goes offline (leader
// -1, leader epoch + 1, ISR kept); a partition led by a live broker keeps
// its leader and leader epoch and loses the dead broker from its ISR.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// failoverMargin is how long past the session timeout a lost broker's
// partitions may take to get their new states everywhere: etcd checks
// lease expiry every 500 ms, then the controller writes and every broker's
// watch applies the states.
const failoverMargin = 10 * time.Second

// createClusterTopic creates a topic and fails the test on any error.
func createClusterTopic(t testing.TB, c *Cluster, name string, partitions int32, rf int16) {
	t.Helper()
	ctx := testContext(t, 20*time.Second)
	if _, err := c.Admin().CreateTopic(ctx, partitions, rf, nil, name); err != nil {
		t.Fatalf("create topic %s (%d partitions, replication factor %d): %v", name, partitions, rf, err)
	}
}

// waitCluster polls until every broker in ids answers Metadata and check
// accepts each answer, and returns the last answer of ids[0].
func waitCluster(t testing.TB, c *Cluster, ids []int32, timeout time.Duration, check func(*kmsg.MetadataResponse) error) *kmsg.MetadataResponse {
	t.Helper()
	var first *kmsg.MetadataResponse
	WaitFor(t, timeout, func() error {
		for i, id := range ids {
			md, err := c.MetadataFrom(id)
			if err != nil {
				return err
			}
			if err := check(md); err != nil {
				return fmt.Errorf("broker %d: %w", id, err)
			}
			if i == 0 {
				first = md
			}
		}
		return nil
	})
	return first
}

// topicPartitions returns a topic's partitions from a Metadata answer,
// sorted, requiring exactly n.
func topicPartitions(md *kmsg.MetadataResponse, topic string, n int) ([]kmsg.MetadataResponseTopicPartition, error) {
	mt, ok := metadataTopic(md, topic)
	if !ok {
		return nil, fmt.Errorf("topic %s not in metadata", topic)
	}
	if mt.ErrorCode != 0 {
		return nil, fmt.Errorf("topic %s: %v", topic, kerr.ErrorForCode(mt.ErrorCode))
	}
	ps := slices.Clone(mt.Partitions)
	slices.SortFunc(ps, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
	if len(ps) != n {
		return nil, fmt.Errorf("topic %s has %d partitions, want %d", topic, len(ps), n)
	}
	for i, p := range ps {
		if p.Partition != int32(i) {
			return nil, fmt.Errorf("topic %s: partitions %v", topic, ps)
		}
	}
	return ps, nil
}

// allLed accepts metadata in which every partition of each topic (name →
// partition count) has a leader.
func allLed(topics map[string]int) func(*kmsg.MetadataResponse) error {
	return func(md *kmsg.MetadataResponse) error {
		for name, n := range topics {
			ps, err := topicPartitions(md, name, n)
			if err != nil {
				return err
			}
			for _, p := range ps {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return fmt.Errorf("%s[%d]: leader %d, %v", name, p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		return nil
	}
}

// brokersAre accepts metadata listing exactly the brokers ids.
func brokersAre(md *kmsg.MetadataResponse, ids []int32) error {
	if got := metadataBrokerIDs(md); !slices.Equal(got, ids) {
		return fmt.Errorf("brokers %v, want %v", got, ids)
	}
	return nil
}

func without(ids []int32, x int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(id int32) bool { return id == x })
}

// sameSet reports whether a and b hold the same ids.
func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// partitionState is what the scenarios compare of a partition.
type partitionState struct {
	Leader, LeaderEpoch int32
	ISR, Offline        []int32
}

func (s partitionState) String() string {
	return fmt.Sprintf("leader %d epoch %d isr %v offline %v", s.Leader, s.LeaderEpoch, s.ISR, s.Offline)
}

func stateOf(p kmsg.MetadataResponseTopicPartition) partitionState {
	return partitionState{p.Leader, p.LeaderEpoch, p.ISR, p.OfflineReplicas}
}

func (s partitionState) equal(o partitionState) bool {
	return s.Leader == o.Leader && s.LeaderEpoch == o.LeaderEpoch && sameSet(s.ISR, o.ISR) && sameSet(s.Offline, o.Offline)
}

// afterLoss is the state the controller gives partition p (as it was
// before) once broker dead is gone.
func afterLoss(p kmsg.MetadataResponseTopicPartition, dead int32) partitionState {
	if !slices.Contains(p.Replicas, dead) {
		return stateOf(p)
	}
	isr := without(p.ISR, dead)
	offline := []int32{dead}
	if p.Leader != dead {
		return partitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: isr, Offline: offline}
	}
	for _, r := range p.Replicas {
		if r != dead && slices.Contains(isr, r) {
			return partitionState{Leader: r, LeaderEpoch: p.LeaderEpoch + 1, ISR: isr, Offline: offline}
		}
	}
	// Offline: the ISR is kept so that its members can be elected cleanly.
	return partitionState{Leader: -1, LeaderEpoch: p.LeaderEpoch + 1, ISR: p.ISR, Offline: offline}
}

// statesAre accepts metadata in which every partition of topic has the
// state want returns for it.
func statesAre(md *kmsg.MetadataResponse, topic string, n int, want func(p int32) partitionState) error {
	ps, err := topicPartitions(md, topic, n)
	if err != nil {
		return err
	}
	for _, p := range ps {
		got, w := stateOf(p), want(p.Partition)
		if !got.equal(w) {
			return fmt.Errorf("%s[%d]: %v, want %v", topic, p.Partition, got, w)
		}
		if w.Leader < 0 && p.ErrorCode != kerr.LeaderNotAvailable.Code {
			return fmt.Errorf("%s[%d] has no leader but error %v, want LEADER_NOT_AVAILABLE", topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
		if w.Leader >= 0 && p.ErrorCode != 0 {
			return fmt.Errorf("%s[%d]: error %v", topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	return nil
}

// TestClusterHealthy: a fresh three-broker cluster describes itself
// consistently, spreads leaders and replicas evenly, serves produce and
// fetch through the bridges, rejects a replication factor it cannot meet,
// and CutKafka isolates exactly one broker from clients.
func TestClusterHealthy(t *testing.T) {
	t.Parallel() // its own etcd and brokers; mostly waits
	c := StartCluster(t, 3)
	ctx := testContext(t, 90*time.Second)
	all := c.IDs()

	// Every broker lists all three at their bridge addresses and names the
	// same controller, which kadm reports too.
	controllers := map[int32]bool{}
	for _, id := range all {
		md, err := c.MetadataFrom(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := brokersAre(md, all); err != nil {
			t.Fatalf("broker %d: %v", id, err)
		}
		for _, b := range md.Brokers {
			if got, want := brokerAddr(b), c.Broker(b.NodeID).Addr(); got != want {
				t.Errorf("broker %d says broker %d is at %s, want its bridge %s", id, b.NodeID, got, want)
			}
		}
		controllers[md.ControllerID] = true
	}
	ctrl, err := c.Controller()
	if err != nil {
		t.Fatal(err)
	}
	if len(controllers) != 1 || !controllers[ctrl] {
		t.Errorf("brokers name controllers %v, kadm says %d; want one, the same", controllers, ctrl)
	}

	// Replication factor 1, six partitions: each broker leads two, as the
	// only replica and ISR, at leader epoch 0.
	createClusterTopic(t, c, "spread", 6, 1)
	md := waitCluster(t, c, all, 15*time.Second, allLed(map[string]int{"spread": 6}))
	ps, _ := topicPartitions(md, "spread", 6)
	leaders := map[int32][]int32{}
	for _, p := range ps {
		leaders[p.Leader] = append(leaders[p.Leader], p.Partition)
		if !slices.Equal(p.Replicas, []int32{p.Leader}) || !slices.Equal(p.ISR, []int32{p.Leader}) || p.LeaderEpoch != 0 {
			t.Errorf("spread[%d]: leader %d epoch %d replicas %v isr %v; want its leader as only replica and ISR, epoch 0",
				p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR)
		}
	}
	for _, id := range all {
		if len(leaders[id]) != 2 {
			t.Errorf("broker %d leads partitions %v of spread; want two per broker (%v)", id, leaders[id], leaders)
		}
	}

	// Produce to every partition and read everything back, each client
	// seeded with one bridge and finding the others from Metadata: the
	// brokers' own listeners are never given to a client.
	const n = 600
	want := makeCompatRecords(n, 6)
	p := newKgoClient(t, c.Broker(1).Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	recs := make([]*kgo.Record, len(want))
	for i, w := range want {
		r := &kgo.Record{Topic: "spread", Partition: w.Partition, Key: w.Key, Value: w.Value}
		for _, h := range w.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		recs[i] = r
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for i, r := range recs {
		if r.Offset != want[i].Offset {
			t.Fatalf("record %d acknowledged at %d@%d, want offset %d", i, r.Partition, r.Offset, want[i].Offset)
		}
	}
	got := consumeKgo(t, ctx, c.Broker(2).Addr(), "spread", []int32{0, 1, 2, 3, 4, 5}, n)
	checkCompatRecords(t, want, kgoToCompat(got))

	// CutKafka isolates one broker from clients: its partitions time out,
	// the others still take writes; after HealKafka its partitions do too.
	isolated := without(all, ctrl)[0]
	other := without(all, isolated)[0]
	produceOne := func(partition int32, timeout time.Duration) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrapList()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(timeout), kgo.DialTimeout(time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: "spread", Partition: partition, Value: []byte("x")}).FirstErr()
	}
	c.CutKafka(isolated)
	if err := produceOne(leaders[isolated][0], 2*time.Second); err == nil {
		t.Errorf("produced to spread[%d] on broker %d through a cut bridge", leaders[isolated][0], isolated)
	} else {
		t.Logf("produce to broker %d behind a cut bridge: %v", isolated, err)
	}
	if err := produceOne(leaders[other][0], 10*time.Second); err != nil {
		t.Errorf("produce to spread[%d] on broker %d while broker %d is cut: %v", leaders[other][0], other, isolated, err)
	}
	c.HealKafka(isolated)
	if err := produceOne(leaders[isolated][0], 10*time.Second); err != nil {
		t.Errorf("produce to spread[%d] on broker %d after HealKafka: %v", leaders[isolated][0], isolated, err)
	}

	// Replication factor 3: every broker holds a replica of every
	// partition, all in sync, and the preferred (first) replica, which
	// leads, is spread evenly.
	createClusterTopic(t, c, "rf3", 6, 3)
	md = waitCluster(t, c, all, 15*time.Second, allLed(map[string]int{"rf3": 6}))
	ps, _ = topicPartitions(md, "rf3", 6)
	preferred := map[int32]int{}
	for _, p := range ps {
		if !sameSet(p.Replicas, all) || !sameSet(p.ISR, all) || len(p.OfflineReplicas) != 0 {
			t.Errorf("rf3[%d]: replicas %v isr %v offline %v; want every broker a replica, all in sync", p.Partition, p.Replicas, p.ISR, p.OfflineReplicas)
		}
		if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] {
			t.Errorf("rf3[%d]: leader %d, want the preferred replica %d", p.Partition, p.Leader, p.Replicas[0])
		}
		if p.LeaderEpoch != 0 {
			t.Errorf("rf3[%d]: leader epoch %d, want 0", p.Partition, p.LeaderEpoch)
		}
		if len(p.Replicas) > 0 {
			preferred[p.Replicas[0]]++
		}
	}
	for _, id := range all {
		if preferred[id] != 2 {
			t.Errorf("broker %d is the preferred replica of %d partitions of rf3, want 2 (%v)", id, preferred[id], preferred)
		}
	}

	// Replication factor 4 with three brokers.
	_, err = c.Admin().CreateTopic(ctx, 6, 4, nil, "rf4")
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Errorf("create topic with replication factor 4 on 3 brokers: %v, want INVALID_REPLICATION_FACTOR", err)
	}
	md, err = c.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := metadataTopic(md, "rf4"); ok {
		t.Errorf("rf4 exists after its creation failed")
	}
}

// TestClusterControllerFailover kills the controller with SIGKILL: another
// broker takes over once the dead one's session expires and re-elects the
// leaders of its partitions; restarted, the broker registers again at once
// and leads its single-replica partitions again.
func TestClusterControllerFailover(t *testing.T) {
	t.Parallel() // its own etcd and brokers; mostly waits
	// No automatic preferred-leader election: the test checks that leaders
	// stay put when the broker returns.
	c := StartCluster(t, 3, WithOverrides("auto.leader.rebalance.enable=false"))
	all := c.IDs()
	createClusterTopic(t, c, "fo1", 6, 1)
	createClusterTopic(t, c, "fo3", 6, 3)
	before := waitCluster(t, c, all, 15*time.Second, allLed(map[string]int{"fo1": 6, "fo3": 6}))
	fo1, _ := topicPartitions(before, "fo1", 6)
	fo3, _ := topicPartitions(before, "fo3", 6)

	dead := before.ControllerID
	survivors := without(all, dead)
	killed := time.Now()
	c.Kill9(dead)

	// Every survivor: a new controller, the dead broker gone, the
	// partitions it led re-elected or offline, its replicas offline.
	after := waitCluster(t, c, survivors, c.SessionTimeout+failoverMargin, func(md *kmsg.MetadataResponse) error {
		if md.ControllerID == dead || md.ControllerID < 0 {
			return fmt.Errorf("controller %d", md.ControllerID)
		}
		if err := brokersAre(md, survivors); err != nil {
			return err
		}
		if err := statesAre(md, "fo3", 6, func(p int32) partitionState { return afterLoss(fo3[p], dead) }); err != nil {
			return err
		}
		return statesAre(md, "fo1", 6, func(p int32) partitionState { return afterLoss(fo1[p], dead) })
	})
	t.Logf("controller %d killed: controller %d and new partition states everywhere after %v",
		dead, after.ControllerID, time.Since(killed).Round(time.Millisecond))
	if ctrl, err := c.Controller(); err != nil || ctrl == dead || ctrl < 0 {
		t.Errorf("kadm reports controller %d (%v), want a live one", ctrl, err)
	}
	moved := 0
	for _, p := range fo3 {
		if p.Leader == dead {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("the dead broker led no partition of fo3: %v", fo3)
	}

	// Restarted, it registers again without waiting for anything (its old
	// lease is gone) and is elected again for the single-replica
	// partitions, whose ISR it never left.
	restarted := time.Now()
	c.Restart(dead)
	fo1After, _ := topicPartitions(after, "fo1", 6)
	fo3After, _ := topicPartitions(after, "fo3", 6)
	waitCluster(t, c, all, 10*time.Second, func(md *kmsg.MetadataResponse) error {
		if err := brokersAre(md, all); err != nil {
			return err
		}
		err := statesAre(md, "fo1", 6, func(p int32) partitionState {
			s := stateOf(fo1After[p])
			if fo1[p].Leader == dead {
				s.Leader, s.LeaderEpoch = dead, s.LeaderEpoch+1
			}
			s.Offline = nil
			return s
		})
		if err != nil {
			return err
		}
		// Replicated partitions keep their leaders and leader epochs (no
		// preferred-leader election yet). Whether the returned broker is
		// back in the ISR is the leader's business, once it has caught up;
		// not checked here.
		ps, err := topicPartitions(md, "fo3", 6)
		if err != nil {
			return err
		}
		for i, p := range ps {
			a := fo3After[i]
			if p.Leader != a.Leader || p.LeaderEpoch != a.LeaderEpoch || len(p.OfflineReplicas) != 0 {
				return fmt.Errorf("fo3[%d]: %v, want leader %d epoch %d and no offline replica", i, stateOf(p), a.Leader, a.LeaderEpoch)
			}
		}
		return nil
	})
	t.Logf("broker %d restarted and back in every broker's metadata after %v", dead, time.Since(restarted).Round(time.Millisecond))
	CheckReplication(t, c, "fo1", "fo3")
}

// TestClusterBrokerPartitionedFromEtcd partitions one broker (not the
// controller) from etcd alone, once by resetting its connections (cut) and
// once by letting them hang (blackhole). Its session expires: the
// controller moves leadership away, and the broker itself, finding its
// session lost, shuts down (broker.Run returns). Healed and restarted, it
// returns to the cluster.
func TestClusterBrokerPartitionedFromEtcd(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name  string
		apply func(*Cluster, int32)
	}{
		{"cut", (*Cluster).CutEtcd},
		{"blackhole", (*Cluster).BlackholeEtcd},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel() // its own etcd and brokers; mostly waits
			testBrokerPartitionedFromEtcd(t, f.apply)
		})
	}
}

func testBrokerPartitionedFromEtcd(t *testing.T, fault func(*Cluster, int32)) {
	c := StartCluster(t, 3)
	all := c.IDs()
	createClusterTopic(t, c, "cut1", 6, 1)
	createClusterTopic(t, c, "cut3", 6, 3)
	before := waitCluster(t, c, all, 15*time.Second, allLed(map[string]int{"cut1": 6, "cut3": 6}))
	cut1, _ := topicPartitions(before, "cut1", 6)
	cut3, _ := topicPartitions(before, "cut3", 6)
	ctrl := before.ControllerID
	victim := without(all, ctrl)[0]
	survivors := without(all, victim)

	cutAt := time.Now()
	fault(c, victim)
	after := waitCluster(t, c, survivors, c.SessionTimeout+failoverMargin, func(md *kmsg.MetadataResponse) error {
		if md.ControllerID != ctrl {
			return fmt.Errorf("controller %d, want %d still", md.ControllerID, ctrl)
		}
		if err := brokersAre(md, survivors); err != nil {
			return err
		}
		if err := statesAre(md, "cut3", 6, func(p int32) partitionState { return afterLoss(cut3[p], victim) }); err != nil {
			return err
		}
		return statesAre(md, "cut1", 6, func(p int32) partitionState { return afterLoss(cut1[p], victim) })
	})
	t.Logf("broker %d partitioned from etcd: deregistered and its partitions re-elected after %v", victim, time.Since(cutAt).Round(time.Millisecond))

	// The broker's own view: its session ends (it can renew nothing), so
	// broker.Run closes that incarnation (its listeners with it: nobody is
	// told it leads anything) and tries every second to register again,
	// without exiting: with embedded etcd an exit would take its member
	// out of the quorum. TestClusterSessionLossStopsLeading checks what
	// the broker does before its session ends.
	WaitFor(t, c.SessionTimeout+30*time.Second, func() error {
		if !c.Running(victim) {
			return nil // reported below
		}
		if !strings.Contains(c.Broker(victim).Proc.Stderr(t), "broker registration lost: stopping this incarnation and registering again") {
			return fmt.Errorf("broker %d's log does not say it lost its registration", victim)
		}
		if err := procPing(c.Broker(victim).Proc.Addr, time.Second); err == nil {
			return fmt.Errorf("broker %d still answers on its listener", victim)
		}
		return nil
	})
	if !c.Running(victim) {
		t.Fatalf("broker %d exited (%v) instead of trying to register again:\n%s", victim,
			exitStatus(c.WaitExit(victim, time.Second)), procTailFile(c.Broker(victim).Proc.stderrPath, 4096))
	}
	t.Logf("broker %d closed its incarnation %v after the partition began", victim, time.Since(cutAt).Round(time.Millisecond))

	// Healed, it registers again by itself.
	c.HealEtcd(victim)
	cut1After, _ := topicPartitions(after, "cut1", 6)
	waitCluster(t, c, all, 10*time.Second, func(md *kmsg.MetadataResponse) error {
		if err := brokersAre(md, all); err != nil {
			return err
		}
		return statesAre(md, "cut1", 6, func(p int32) partitionState {
			s := stateOf(cut1After[p])
			if cut1[p].Leader == victim {
				s.Leader, s.LeaderEpoch = victim, s.LeaderEpoch+1
			}
			s.Offline = nil
			return s
		})
	})
	CheckReplication(t, c, "cut1")
}

// TestClusterSessionLossStopsLeading: DESIGN.md §4, "a broker that loses
// its etcd session stops acting as leader". A broker cut from etcd declares
// its session lost before etcd expires it (coord's lostMargin), so by the
// time the other brokers report a new leader for a partition it led, it
// must neither acknowledge a write to that partition (acks=1: the new
// leader never sees it, so it would be lost) nor tell clients that it
// leads it.
func TestClusterSessionLossStopsLeading(t *testing.T) {
	t.Parallel() // its own etcd and brokers; mostly waits
	c := StartCluster(t, 3)
	all := c.IDs()
	createClusterTopic(t, c, "zombie", 6, 3)
	before := waitCluster(t, c, all, 15*time.Second, allLed(map[string]int{"zombie": 6}))
	ps, _ := topicPartitions(before, "zombie", 6)
	victim := without(all, before.ControllerID)[0]
	survivors := without(all, victim)
	var led kmsg.MetadataResponseTopicPartition
	for _, p := range ps {
		if p.Leader == victim {
			led = p
			break
		}
	}
	if led.Leader != victim {
		t.Fatalf("broker %d leads no partition of zombie: %v", victim, ps)
	}

	c.CutEtcd(victim)
	waitCluster(t, c, survivors, c.SessionTimeout+failoverMargin, func(md *kmsg.MetadataResponse) error {
		return statesAre(md, "zombie", 6, func(p int32) partitionState { return afterLoss(ps[p], victim) })
	})

	// Straight to the cut broker, through its Kafka bridge, which is open.
	// Neither acks=1 nor acks=all may be acknowledged.
	for _, acks := range []int16{1, -1} {
		code, offset, err := produceDirect(c, victim, "zombie", led.Partition, acks)
		if err == nil && code == 0 {
			t.Errorf("broker %d, cut from etcd and replaced as leader of zombie[%d], acknowledged an acks=%d write at offset %d",
				victim, led.Partition, acks, offset)
		}
	}
	if md, err := c.MetadataFrom(victim); err == nil {
		if mt, ok := metadataTopic(md, "zombie"); ok {
			for _, p := range mt.Partitions {
				if p.Partition == led.Partition && p.Leader == victim {
					t.Errorf("broker %d, cut from etcd and replaced as leader of zombie[%d], still answers Metadata naming itself leader (epoch %d)",
						victim, p.Partition, p.LeaderEpoch)
				}
			}
		}
	}

	// Healed, the deposed broker registers again by itself and catches up.
	c.HealEtcd(victim)
	CheckReplication(t, c, "zombie")
}

// produceDirect sends one record straight to broker id (no routing by
// leader, no retries) with the given acks, and returns the partition's
// error code and base offset, or the request's error.
func produceDirect(c *Cluster, id int32, topic string, partition int32, acks int16) (int16, int64, error) {
	// kgo rewrites a raw Produce request's acks to the client's setting.
	ack := kgo.AllISRAcks()
	if acks == 1 {
		ack = kgo.LeaderAck()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(id).Addr()), kgo.RequiredAcks(ack),
		kgo.DisableIdempotentWrite(), kgo.DialTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 2000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte("direct")}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	pr := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return pr.ErrorCode, pr.BaseOffset, nil
}

// runSamsa runs the samsa binary as a client command against the cluster
// and returns its stdout; a failure or any stderr output fails the test.
func runSamsa(t testing.TB, c *Cluster, args ...string) string {
	t.Helper()
	ctx := testContext(t, 40*time.Second)
	args = append([]string{"--bootstrap-server", c.Bootstrap()}, args...)
	cmd := exec.CommandContext(ctx, procSamsaBinary(t), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("samsa %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestClusterDescribeDuringFailure runs `samsa cluster describe` and
// `samsa topic describe` while a broker is down: the broker is listed as
// not alive, without leaders, and as the offline replica of every
// partition, none of which it leads. The brokers have racks, which only
// live brokers report.
func TestClusterDescribeDuringFailure(t *testing.T) {
	t.Parallel() // its own etcd and brokers; mostly waits
	c := StartCluster(t, 3,
		WithBrokerOverrides(1, "broker.rack=rack-1"),
		WithBrokerOverrides(2, "broker.rack=rack-2"),
		WithBrokerOverrides(3, "broker.rack=rack-3"))
	all := c.IDs()
	createClusterTopic(t, c, "desc", 3, 3)
	before := waitCluster(t, c, all, 15*time.Second, allLed(map[string]int{"desc": 3}))
	desc, _ := topicPartitions(before, "desc", 3)
	ctrl := before.ControllerID
	dead := without(all, ctrl)[1]
	survivors := without(all, dead)
	c.Kill9(dead)
	md := waitCluster(t, c, survivors, c.SessionTimeout+failoverMargin, func(md *kmsg.MetadataResponse) error {
		if err := brokersAre(md, survivors); err != nil {
			return err
		}
		return statesAre(md, "desc", 3, func(p int32) partitionState { return afterLoss(desc[p], dead) })
	})
	ps, _ := topicPartitions(md, "desc", 3)

	// cluster describe, exactly.
	leaders := map[int32]int{}
	for _, p := range ps {
		leaders[p.Leader]++
	}
	w := len("ADDRESS")
	for _, id := range survivors {
		w = max(w, len(c.Broker(id).Addr()))
	}
	var want strings.Builder
	fmt.Fprintf(&want, "Cluster: %s  Controller: %d  Brokers: 3 (1 not alive)\n", *md.ClusterID, ctrl)
	fmt.Fprintf(&want, "ID  %-*s  RACK    ALIVE  LEADERS  REPLICAS\n", w, "ADDRESS")
	for _, id := range all {
		addr, rack, alive := c.Broker(id).Addr(), fmt.Sprintf("rack-%d", id), "yes"
		if id == dead {
			addr, rack, alive = "-", "-", "no"
		}
		fmt.Fprintf(&want, "%-2d  %-*s  %-6s  %-5s  %-7d  3\n", id, w, addr, rack, alive, leaders[id])
	}
	want.WriteString("Partitions: 3  Offline: 0  Under-replicated: 3\n")
	got := runSamsa(t, c, "cluster", "describe")
	if got != want.String() {
		t.Errorf("samsa cluster describe:\n%s\nwant:\n%s", got, want.String())
	}
	t.Logf("samsa cluster describe, broker %d down:\n%s", dead, got)

	// topic describe: every partition led by a survivor, the dead broker
	// out of the ISR and offline; the partition it preferred is led by
	// another replica.
	out := runSamsa(t, c, "topic", "describe", "desc")
	t.Logf("samsa topic describe desc, broker %d down:\n%s", dead, out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Topic: desc\t") {
		t.Fatalf("samsa topic describe desc: want a header, 3 partitions and a summary:\n%s", out)
	}
	join := func(ids []int32) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(int(id))
		}
		return strings.Join(s, ",")
	}
	for i, p := range ps {
		wantLine := fmt.Sprintf("\tTopic: desc\tPartition: %d\tLeader: %d\tReplicas: %s\tIsr: %s\tOffline: %d",
			p.Partition, p.Leader, join(p.Replicas), join(p.ISR), dead)
		if lines[1+i] != wantLine {
			t.Errorf("partition line %d:\n got %q\nwant %q", i, lines[1+i], wantLine)
		}
		if p.Leader == dead || slices.Contains(p.ISR, dead) {
			t.Errorf("desc[%d]: leader %d isr %v with broker %d dead", p.Partition, p.Leader, p.ISR, dead)
		}
	}
	if want := "Partitions: 0 healthy, 3 under-replicated, 0 offline, 1 led by a non-preferred replica"; lines[4] != want {
		t.Errorf("summary %q, want %q", lines[4], want)
	}
}
