package test

// Consumer groups end to end, on the process cluster harness: franz-go
// members that share a topic, leave, die (their connections blackholed, so
// they stop heartbeating), rebalance cooperatively, restart statically, and
// keep their committed offsets across a coordinator failover.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupClusterOverrides are the group settings of the group tests: no
// initial rebalance delay, short sessions allowed, few offsets partitions.
var groupClusterOverrides = WithOverrides(
	"group.initial.rebalance.delay.ms=0",
	"group.min.session.timeout.ms=1000",
	"offsets.topic.num.partitions=6",
)

// groupRun is what the members of one test consumed, shared by them.
type groupRun struct {
	t     testing.TB
	c     *Cluster
	group string
	topic string

	mu   sync.Mutex
	seen map[string]int // value -> times consumed
	// firstAt records, once markTime is set, when a record of each
	// partition was first consumed after it.
	markTime time.Time
	firstAt  map[int32]time.Time
}

// groupMember is one franz-go member of a groupRun.
type groupMember struct {
	name string
	cl   *kgo.Client
	run  *groupRun

	mu       sync.Mutex
	assigned map[int32]bool
	revoked  []int32
	count    int
	done     chan struct{}
}

// join starts a member that consumes from the group's committed offsets
// (or the start) and commits after every poll.
func (r *groupRun) join(name string, opts ...kgo.Opt) *groupMember {
	r.t.Helper()
	m := &groupMember{name: name, run: r, assigned: map[int32]bool{}, done: make(chan struct{})}
	base := []kgo.Opt{
		kgo.ClientID(name),
		kgo.ConsumerGroup(r.group),
		kgo.ConsumeTopics(r.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(3 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[r.topic] {
				m.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, rv map[string][]int32) {
			// Commit what was consumed before giving the partitions up.
			_ = cl.CommitUncommittedOffsets(ctx)
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range rv[r.topic] {
				delete(m.assigned, p)
				m.revoked = append(m.revoked, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range l[r.topic] {
				delete(m.assigned, p)
			}
		}),
	}
	m.cl = r.c.Client(append(base, opts...)...)
	go func() {
		defer close(m.done)
		ctx := context.Background()
		for {
			fs := m.cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			n := 0
			r.mu.Lock()
			now := time.Now()
			fs.EachRecord(func(rec *kgo.Record) {
				r.seen[string(rec.Value)]++
				n++
				if _, ok := r.firstAt[rec.Partition]; !ok && !r.markTime.IsZero() {
					r.firstAt[rec.Partition] = now
				}
			})
			r.mu.Unlock()
			m.mu.Lock()
			m.count += n
			m.mu.Unlock()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = m.cl.CommitUncommittedOffsets(cctx)
			cancel()
		}
	}()
	return m
}

// partitions returns the member's assigned partitions.
func (m *groupMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.assigned))
}

// leave closes the member (franz-go leaves the group on Close).
func (m *groupMember) leave() {
	m.cl.Close()
	<-m.done
}

// waitAssignment waits until the members hold the given numbers of
// partitions, disjoint and covering all n.
func (r *groupRun) waitAssignment(n int, members []*groupMember, counts ...int) {
	r.t.Helper()
	WaitFor(r.t, 60*time.Second, func() error {
		all := map[int32]string{}
		for i, m := range members {
			ps := m.partitions()
			if len(ps) != counts[i] {
				return fmt.Errorf("%s holds %v, want %d partitions", m.name, ps, counts[i])
			}
			for _, p := range ps {
				if other, dup := all[p]; dup {
					return fmt.Errorf("partition %d held by %s and %s", p, other, m.name)
				}
				all[p] = m.name
			}
		}
		if len(all) != n {
			return fmt.Errorf("%d of %d partitions assigned", len(all), n)
		}
		return nil
	})
}

// waitSeen waits until every value in want was consumed, and returns how
// many were consumed more than once.
func (r *groupRun) waitSeen(want map[string]bool) (dups int) {
	r.t.Helper()
	WaitFor(r.t, 60*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		missing := 0
		for v := range want {
			if r.seen[v] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d records not consumed yet", missing, len(want))
		}
		return nil
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for v := range want {
		if r.seen[v] > 1 {
			dups++
		}
	}
	return dups
}

// committed returns the group's committed offsets of the topic.
func (r *groupRun) committed() map[int32]int64 {
	r.t.Helper()
	var out map[int32]int64
	WaitFor(r.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A fresh client each time: a cached coordinator behind a bridge
		// whose broker died answers with resets, which franz-go retries
		// on the same broker (a dead host's refused dial would make it
		// look the coordinator up again).
		cl := r.c.Client()
		defer cl.Close()
		resp, err := kadm.NewClient(cl).FetchOffsets(ctx, r.group)
		if err != nil {
			return err
		}
		out = map[int32]int64{}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic == r.topic && o.Err == nil {
				out[o.Partition] = o.At
			}
		})
		return nil
	})
	return out
}

// The group's life on a three-broker cluster: three members share six
// partitions and consume everything exactly once; one leaves and its
// partitions move; one dies and its partitions move after its session
// timeout (measured); the coordinator is killed and the group carries on
// with its committed offsets intact.
func TestGroupLifecycle(t *testing.T) {
	c := StartCluster(t, 3, groupClusterOverrides)
	const topic = "shared"
	createClusterTopic(t, c, topic, 6, 3)
	r := &groupRun{t: t, c: c, group: "lifecycle", topic: topic, seen: map[string]int{}, firstAt: map[int32]time.Time{}}
	a, b, d := r.join("member-a"), r.join("member-b"), r.join("member-c")
	r.waitAssignment(6, []*groupMember{a, b, d}, 2, 2, 2)

	want := produceEach(t, c, topic, 6, 200)
	if dups := r.waitSeen(want); dups != 0 {
		t.Fatalf("%d records consumed more than once with a stable group", dups)
	}
	for _, m := range []*groupMember{a, b, d} {
		m.mu.Lock()
		n := m.count
		m.mu.Unlock()
		if n == 0 {
			t.Errorf("%s consumed nothing", m.name)
		}
	}

	// A member leaves: its partitions move to the other two.
	d.leave()
	r.waitAssignment(6, []*groupMember{a, b}, 3, 3)
	want = produceEach(t, c, topic, 6, 100)
	if dups := r.waitSeen(want); dups != 0 {
		t.Fatalf("%d records consumed more than once after a member left", dups)
	}

	// A member dies: cut from every broker, it stops heartbeating; after
	// its session timeout the survivor takes all six partitions.
	orphaned := b.partitions()
	for _, id := range c.IDs() {
		c.Broker(id).Kafka.BlackholePeer(b.name)
	}
	r.mu.Lock()
	r.markTime, r.firstAt = time.Now(), map[int32]time.Time{}
	r.mu.Unlock()
	want = produceEach(t, c, topic, 6, 50)
	r.waitAssignment(6, []*groupMember{a}, 6)
	r.waitSeen(want)
	r.mu.Lock()
	var death time.Duration
	for _, p := range orphaned {
		death = max(death, r.firstAt[p].Sub(r.markTime))
	}
	r.mu.Unlock()
	t.Logf("member died (session.timeout.ms 3000): its partitions %v were all consumed again %v later", orphaned, death.Round(time.Millisecond))
	for _, id := range c.IDs() {
		c.Broker(id).Kafka.HealPeer(b.name)
	}
	b.leave()

	// The coordinator dies: the group finds the new one, its offsets are
	// there, and consumption goes on from them.
	before := r.committed()
	coord := c.Admin().FindGroupCoordinators(context.Background(), r.group)[r.group]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	victim := coord.NodeID
	c.Kill9(victim)
	want = produceEach(t, c, topic, 6, 50)
	r.waitSeen(want)
	after := r.committed()
	for p, o := range before {
		if after[p] < o {
			t.Fatalf("partition %d: committed offset went back from %d to %d across the coordinator failover", p, o, after[p])
		}
	}
	c.Restart(victim)
	a.leave()
	t.Logf("coordinator %d killed; committed offsets %v before, %v after", victim, before, after)

	// The last member is gone; a new one resumes exactly at the committed
	// offsets: it reads the new records and none of the old.
	newest := produceEach(t, c, topic, 6, 20)
	r.mu.Lock()
	counts := maps.Clone(r.seen)
	r.mu.Unlock()
	e := r.join("member-e")
	if dups := r.waitSeen(newest); dups != 0 {
		t.Errorf("%d new records consumed twice", dups)
	}
	e.leave()
	r.mu.Lock()
	defer r.mu.Unlock()
	for v, n := range r.seen {
		if !newest[v] && n != counts[v] {
			t.Errorf("%s consumed again by the restarted group", v)
		}
	}
}

// produceEach writes n records to every partition of topic and returns the
// values written.
func produceEach(t testing.TB, c *Cluster, topic string, partitions int32, n int) map[string]bool {
	t.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string]bool{}
	var recs []*kgo.Record
	for p := range partitions {
		for range n {
			v := fmt.Sprintf("%s-%d-%s", topic, p, randomSuffix())
			want[v] = true
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return want
}

var (
	suffixMu  sync.Mutex
	suffixSeq int
)

// randomSuffix returns a value unique within the test binary.
func randomSuffix() string {
	suffixMu.Lock()
	defer suffixMu.Unlock()
	suffixSeq++
	return fmt.Sprintf("%08d", suffixSeq)
}

// revokedSince returns the partitions m revoked since the count mark.
func (m *groupMember) revokedSince(mark int) []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.revoked[mark:])
}

func (m *groupMember) revokedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.revoked)
}

// With the cooperative-sticky balancer a member joining takes partitions
// from the others without them giving up the partitions they keep: each
// revokes exactly what moved.
func TestGroupCooperativeSticky(t *testing.T) {
	c := StartCluster(t, 3, groupClusterOverrides)
	const topic = "coop"
	createClusterTopic(t, c, topic, 6, 1)
	r := &groupRun{t: t, c: c, group: "coop", topic: topic, seen: map[string]int{}, firstAt: map[int32]time.Time{}}
	coop := kgo.Balancers(kgo.CooperativeStickyBalancer())
	a, b := r.join("coop-a", coop), r.join("coop-b", coop)
	r.waitAssignment(6, []*groupMember{a, b}, 3, 3)
	beforeA, beforeB := a.partitions(), b.partitions()
	markA, markB := a.revokedCount(), b.revokedCount()

	d := r.join("coop-c", coop)
	r.waitAssignment(6, []*groupMember{a, b, d}, 2, 2, 2)
	for _, x := range []struct {
		m      *groupMember
		before []int32
		mark   int
	}{{a, beforeA, markA}, {b, beforeB, markB}} {
		now := x.m.partitions()
		var moved []int32
		for _, p := range x.before {
			if !slices.Contains(now, p) {
				moved = append(moved, p)
			}
		}
		for _, p := range now {
			if !slices.Contains(x.before, p) {
				t.Errorf("%s gained partition %d when a member joined", x.m.name, p)
			}
		}
		revoked := x.m.revokedSince(x.mark)
		slices.Sort(revoked)
		if !slices.Equal(revoked, moved) {
			t.Errorf("%s revoked %v, but only %v moved away (kept %v)", x.m.name, revoked, moved, now)
		}
	}
	want := produceEach(t, c, topic, 6, 50)
	if dups := r.waitSeen(want); dups != 0 {
		t.Fatalf("%d records consumed twice", dups)
	}
	for _, m := range []*groupMember{a, b, d} {
		m.leave()
	}
}

// A static member (group.instance.id) that restarts within its session
// timeout gets its partitions back without a rebalance: the other member
// keeps its partitions and revokes nothing, and the group's generation
// does not change.
func TestGroupStaticMembership(t *testing.T) {
	c := StartCluster(t, 3, groupClusterOverrides)
	const topic = "static"
	createClusterTopic(t, c, topic, 6, 1)
	r := &groupRun{t: t, c: c, group: "static", topic: topic, seen: map[string]int{}, firstAt: map[int32]time.Time{}}
	a := r.join("static-a", kgo.InstanceID("instance-a"))
	b := r.join("static-b", kgo.InstanceID("instance-b"))
	r.waitAssignment(6, []*groupMember{a, b}, 3, 3)
	want := produceEach(t, c, topic, 6, 20)
	r.waitSeen(want)
	beforeA, beforeB := a.partitions(), b.partitions()
	markB := b.revokedCount()
	_, genBefore := b.cl.GroupMetadata()

	// franz-go does not leave the group on Close with an instance id.
	a.leave()
	a2 := r.join("static-a", kgo.InstanceID("instance-a"))
	r.waitAssignment(6, []*groupMember{a2, b}, 3, 3)
	if got := a2.partitions(); !slices.Equal(got, beforeA) {
		t.Errorf("restarted static member got %v, had %v", got, beforeA)
	}
	want = produceEach(t, c, topic, 6, 20)
	if dups := r.waitSeen(want); dups != 0 {
		t.Fatalf("%d records consumed twice", dups)
	}
	if got := b.partitions(); !slices.Equal(got, beforeB) || len(b.revokedSince(markB)) != 0 {
		t.Errorf("the other member went from %v to %v, revoking %v: a rebalance happened", beforeB, got, b.revokedSince(markB))
	}
	if _, gen := b.cl.GroupMetadata(); gen != genBefore {
		t.Errorf("generation went from %d to %d across a static member's restart", genBefore, gen)
	}
	a2.leave()
	b.leave()
}
