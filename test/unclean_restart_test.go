package test

// Invariant 10: a replica restarted after an unclean shutdown stays out of
// the ISR and of leadership until it has caught up. A broker killed with
// kill -9 and restarted at once replaces its own registration before its
// session expires, so nobody sees it die; it must still leave the ISRs and
// its leaderships, and come back only through the normal ISR expansion.
//
// What happened is read from etcd's own history (a watch of the cluster's
// keys from a revision on, so every intermediate state is seen: a broker
// may rejoin the ISR within milliseconds of clearing its flag, too fast
// for Metadata polling, and the coord cache folds a watch response's
// events into one snapshot).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/meta"
)

// uncleanSessionTimeout is long enough that a restart always beats the
// dead session's expiry: the test is about a broker nobody saw die.
const uncleanSessionTimeout = 15 * time.Second

// etcdEvent is one change of a key.
type etcdEvent struct {
	rev       int64
	key       string
	deleted   bool
	createRev int64
	value     []byte
}

// etcdHistory records every change of the cluster's keys after a start
// revision, plus the state of the keys at that revision.
type etcdHistory struct {
	prefix string
	start  int64
	// initial holds the keys as of start.
	initial map[string]etcdEvent

	mu     sync.Mutex
	events []etcdEvent
	err    error
}

// watchEtcdHistory starts recording the history of the cluster's keys
// (cluster name "default", the brokers' default) from now on.
func watchEtcdHistory(t *testing.T, c *Cluster) *etcdHistory {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	h := &etcdHistory{prefix: "/samsa/default/", initial: map[string]etcdEvent{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		cli.Close()
	})
	gctx, gcancel := context.WithTimeout(ctx, clusterRequestTimeout)
	resp, err := cli.Get(gctx, h.prefix, clientv3.WithPrefix())
	gcancel()
	if err != nil {
		t.Fatal(err)
	}
	h.start = resp.Header.Revision
	for _, kv := range resp.Kvs {
		h.initial[string(kv.Key)] = etcdEvent{rev: kv.ModRevision, key: string(kv.Key), createRev: kv.CreateRevision, value: kv.Value}
	}
	wch := cli.Watch(ctx, h.prefix, clientv3.WithPrefix(), clientv3.WithRev(h.start+1))
	go func() {
		defer close(done)
		for wr := range wch {
			h.mu.Lock()
			if err := wr.Err(); err != nil && h.err == nil {
				h.err = err
			}
			for _, ev := range wr.Events {
				h.events = append(h.events, etcdEvent{rev: ev.Kv.ModRevision, key: string(ev.Kv.Key),
					deleted: ev.Type == clientv3.EventTypeDelete, createRev: ev.Kv.CreateRevision, value: ev.Kv.Value})
			}
			h.mu.Unlock()
		}
	}()
	return h
}

// of returns the recorded changes of one key (relative to the cluster
// prefix), in revision order, after the key's initial state (rev =
// start, absent if the key did not exist).
func (h *etcdHistory) of(t *testing.T, rel string) []etcdEvent {
	t.Helper()
	key := h.prefix + rel
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Fatalf("etcd history watch: %v", h.err)
	}
	var out []etcdEvent
	if ev, ok := h.initial[key]; ok {
		ev.rev = h.start
		out = append(out, ev)
	}
	for _, ev := range h.events {
		if ev.key == key {
			out = append(out, ev)
		}
	}
	return out
}

// registration is one stored version of a broker's registration.
type registration struct {
	rev       int64
	createRev int64 // the incarnation
	broker    meta.Broker
}

// registrations returns broker id's registration versions (deletions
// left out).
func (h *etcdHistory) registrations(t *testing.T, id int32) []registration {
	t.Helper()
	var out []registration
	for _, ev := range h.of(t, fmt.Sprintf("brokers/%d", id)) {
		if ev.deleted {
			continue
		}
		var b meta.Broker
		if err := meta.Decode(ev.value, &b); err != nil {
			t.Fatal(err)
		}
		out = append(out, registration{ev.rev, ev.createRev, b})
	}
	return out
}

// stateVersion is one stored version of a partition state.
type stateVersion struct {
	rev   int64
	state meta.PartitionState
}

// states returns the versions of a partition's state, the initial one
// first.
func (h *etcdHistory) states(t *testing.T, topic string, partition int32) []stateVersion {
	t.Helper()
	var out []stateVersion
	for _, ev := range h.of(t, fmt.Sprintf("partitions/%s/%d", topic, partition)) {
		if ev.deleted {
			t.Fatalf("partition %s/%d deleted", topic, partition)
		}
		var st meta.PartitionState
		if err := meta.Decode(ev.value, &st); err != nil {
			t.Fatal(err)
		}
		out = append(out, stateVersion{ev.rev, st})
	}
	return out
}

// stateAt returns the version in force at revision rev.
func stateAt(versions []stateVersion, rev int64) stateVersion {
	var cur stateVersion
	for _, v := range versions {
		if v.rev <= rev {
			cur = v
		}
	}
	return cur
}

// recovery is what a restarted broker's registration went through.
type recovery struct {
	// registered is the revision of the new incarnation's first version,
	// cleared the one that cleared its Recovering flag (0: not yet).
	registered, cleared int64
	recovering          bool // the first version had Recovering set
}

// recoveryOf finds the first incarnation of broker id registered after
// incarnation oldCreate, and when it cleared Recovering. ok is false while
// there is none.
func recoveryOf(regs []registration, oldCreate int64) (r recovery, ok bool) {
	var incarnation int64
	for _, reg := range regs {
		switch {
		case reg.createRev <= oldCreate:
		case !ok:
			r, ok, incarnation = recovery{registered: reg.rev, recovering: reg.broker.Recovering}, true, reg.createRev
		case reg.createRev != incarnation:
			return r, ok // a later incarnation
		case r.recovering && !reg.broker.Recovering && r.cleared == 0:
			r.cleared = reg.rev
		}
	}
	return r, ok
}

// uncleanTopic creates a one-partition topic of replication factor 3
// (min.insync.replicas 2), waits for its full ISR, and writes n records
// with acks=all; it returns them by offset.
func uncleanTopic(t *testing.T, ctx context.Context, c *Cluster, topic string, n int) map[int64]string {
	t.Helper()
	minISR := "2"
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, func() error {
		leader, _, isr, err := uncleanPartition(c, topic)
		if err == nil && (leader < 0 || len(isr) != 3) {
			err = fmt.Errorf("leader %d, ISR %v", leader, isr)
		}
		return err
	})
	return uncleanProduce(t, ctx, c, topic, "before", n)
}

// uncleanProduce writes n records with acks=all and returns them by
// offset.
func uncleanProduce(t *testing.T, ctx context.Context, c *Cluster, topic, prefix string, n int) map[int64]string {
	t.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%s-%05d", prefix, i))}
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("acks=all produce: %v", err)
	}
	acked := map[int64]string{}
	for _, r := range res {
		acked[r.Record.Offset] = string(r.Record.Value)
	}
	return acked
}

// uncleanPartition returns partition 0's leader, leader epoch and ISR as
// Metadata reports them.
func uncleanPartition(c *Cluster, topic string) (leader, epoch int32, isr []int32, err error) {
	md, err := c.Metadata()
	if err != nil {
		return -1, -1, nil, err
	}
	tp, ok := metadataTopic(md, topic)
	if !ok || len(tp.Partitions) != 1 {
		return -1, -1, nil, fmt.Errorf("topic %s not in metadata", topic)
	}
	p := tp.Partitions[0]
	return p.Leader, p.LeaderEpoch, p.ISR, nil
}

// uncleanCheckAcked reads the partition from the start and requires every
// acknowledged record at its offset, and all three replicas' logs
// identical.
func uncleanCheckAcked(t *testing.T, ctx context.Context, c *Cluster, topic string, acked map[int64]string) {
	t.Helper()
	ends, err := c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		t.Fatalf("end offset: %+v", end)
	}
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int64]string{}
	for int64(len(got)) < end.Offset {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(got), end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	for off, v := range acked {
		if got[off] != v {
			t.Fatalf("offset %d: acknowledged %q, log has %q", off, v, got[off])
		}
	}
	CheckReplication(t, c, topic)
}

// restartAt kills broker id with SIGKILL and starts it again at once; it
// returns the incarnation (registration create revision) that died.
func restartAt(t *testing.T, c *Cluster, h *etcdHistory, id int32) int64 {
	t.Helper()
	regs := h.registrations(t, id)
	if len(regs) == 0 {
		t.Fatalf("broker %d not registered", id)
	}
	old := regs[len(regs)-1].createRev
	killed := time.Now()
	c.Kill9(id)
	c.Restart(id)
	if d := time.Since(killed); d >= c.SessionTimeout {
		t.Fatalf("restart took %v, not within the session timeout %v: the old session may have expired", d, c.SessionTimeout)
	}
	return old
}

// checkRecovered requires that broker id's new incarnation (after old)
// registered as recovering, left partition 0's ISR and every leadership
// before it cleared the flag, joined no ISR and led nothing while
// recovering, and rejoined the ISR after. It returns an error while that
// has not all happened yet.
func checkRecovered(t *testing.T, h *etcdHistory, id int32, old int64, topic string) error {
	t.Helper()
	r, ok := recoveryOf(h.registrations(t, id), old)
	if !ok {
		return fmt.Errorf("broker %d not registered again", id)
	}
	if !r.recovering {
		t.Fatalf("broker %d restarted after kill -9 registered without Recovering", id)
	}
	if r.cleared == 0 {
		return fmt.Errorf("broker %d still recovering", id)
	}
	versions := h.states(t, topic, 0)
	if !slices.Contains(versions[0].state.ISR, id) {
		t.Fatalf("broker %d not in the ISR before the kill: %+v", id, versions[0].state)
	}
	atClear := stateAt(versions, r.cleared)
	if slices.Contains(atClear.state.ISR, id) || atClear.state.Leader == id {
		t.Fatalf("broker %d cleared its Recovering flag (revision %d) while in the ISR or leading: %+v", id, r.cleared, atClear)
	}
	prev := stateAt(versions, r.registered)
	for _, v := range versions {
		if v.rev <= r.registered || v.rev > r.cleared {
			continue
		}
		if v.state.Leader == id {
			t.Fatalf("broker %d elected leader while recovering: %+v", id, v)
		}
		if slices.Contains(v.state.ISR, id) && !slices.Contains(prev.state.ISR, id) {
			t.Fatalf("broker %d added to the ISR while recovering: %+v after %+v", id, v, prev)
		}
		prev = v
	}
	for _, v := range versions {
		if v.rev > r.cleared && slices.Contains(v.state.ISR, id) {
			var b strings.Builder
			for _, v := range versions {
				fmt.Fprintf(&b, " @%d leader %d epoch %d ISR %v;", v.rev, v.state.Leader, v.state.LeaderEpoch, v.state.ISR)
			}
			t.Logf("broker %d registered recovering @%d, cleared @%d; partition states:%s", id, r.registered, r.cleared, b.String())
			return nil
		}
	}
	return fmt.Errorf("broker %d cleared its flag at revision %d but has not rejoined the ISR", id, r.cleared)
}

// A follower killed with kill -9 and restarted before its session expires
// leaves the ISR and rejoins it only after it cleared its Recovering flag;
// the leadership does not move. Shut down cleanly (SIGTERM) and restarted,
// the same broker registers without the flag.
func TestUncleanRestartFollower(t *testing.T) {
	c := StartCluster(t, 3, WithSessionTimeout(uncleanSessionTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic = "unclean-follower"
	acked := uncleanTopic(t, ctx, c, topic, 200)
	leader, epoch, _, err := uncleanPartition(c, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := int32(1)
	if victim == leader {
		victim = 2
	}
	h := watchEtcdHistory(t, c)
	old := restartAt(t, c, h, victim)
	WaitFor(t, 60*time.Second, func() error { return checkRecovered(t, h, victim, old, topic) })
	for _, v := range h.states(t, topic, 0) {
		if v.state.Leader != leader || v.state.LeaderEpoch != epoch {
			t.Fatalf("the leadership moved when a follower restarted: %+v (was broker %d, epoch %d)", v.state, leader, epoch)
		}
	}
	WaitFor(t, 30*time.Second, func() error {
		l, _, isr, err := uncleanPartition(c, topic)
		if err == nil && (l != leader || len(isr) != 3) {
			err = fmt.Errorf("leader %d, ISR %v", l, isr)
		}
		return err
	})
	for k, v := range uncleanProduce(t, ctx, c, topic, "after", 100) {
		acked[k] = v
	}
	uncleanCheckAcked(t, ctx, c, topic, acked)

	// A clean shutdown leaves the marker: no Recovering on restart.
	regs := h.registrations(t, victim)
	before := regs[len(regs)-1].createRev
	c.Stop(victim)
	c.Restart(victim)
	var clean registration
	WaitFor(t, 30*time.Second, func() error {
		for _, reg := range h.registrations(t, victim) {
			if reg.createRev > before {
				clean = reg
				return nil
			}
		}
		return errors.New("not registered again")
	})
	if clean.broker.Recovering {
		t.Fatalf("broker %d restarted after a clean shutdown registered as recovering: %+v", victim, clean.broker)
	}
	if logs := c.Broker(victim).Proc.Stderr(t); strings.Contains(logs, "did not shut down cleanly") {
		t.Fatalf("broker %d took a clean shutdown for an unclean one", victim)
	}
	WaitFor(t, 30*time.Second, func() error {
		_, _, isr, err := uncleanPartition(c, topic)
		if err == nil && len(isr) != 3 {
			err = fmt.Errorf("ISR %v", isr)
		}
		return err
	})
	for _, reg := range h.registrations(t, victim) {
		if reg.createRev == clean.createRev && reg.broker.Recovering {
			t.Fatalf("broker %d set Recovering after a clean start: %+v", victim, reg)
		}
	}
}

// The leader killed with kill -9 and restarted before its session expires
// gives up the leadership: another replica leads in a higher epoch, the
// restarted broker leads nothing while recovering and then rejoins the
// ISR, and no acknowledged record is lost.
func TestUncleanRestartLeader(t *testing.T) {
	c := StartCluster(t, 3, WithSessionTimeout(uncleanSessionTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic = "unclean-leader"
	acked := uncleanTopic(t, ctx, c, topic, 300)
	leader, epoch, _, err := uncleanPartition(c, topic)
	if err != nil {
		t.Fatal(err)
	}
	h := watchEtcdHistory(t, c)
	old := restartAt(t, c, h, leader)
	WaitFor(t, 60*time.Second, func() error {
		l, e, isr, err := uncleanPartition(c, topic)
		if err == nil && (l == leader || l < 0 || e <= epoch || len(isr) < 2) {
			err = fmt.Errorf("leader %d in epoch %d, ISR %v (was broker %d in epoch %d)", l, e, isr, leader, epoch)
		}
		return err
	})
	WaitFor(t, 60*time.Second, func() error { return checkRecovered(t, h, leader, old, topic) })
	// The first state written after the restart elects another replica
	// in a higher epoch.
	r, _ := recoveryOf(h.registrations(t, leader), old)
	for _, v := range h.states(t, topic, 0) {
		if v.rev > r.registered {
			if v.state.Leader == leader || v.state.Leader < 0 || v.state.LeaderEpoch <= epoch {
				t.Fatalf("first state after the restart: %+v; want another leader in an epoch above %d", v.state, epoch)
			}
			break
		}
	}
	for k, v := range uncleanProduce(t, ctx, c, topic, "after", 300) {
		acked[k] = v
	}
	WaitFor(t, 30*time.Second, func() error {
		_, _, isr, err := uncleanPartition(c, topic)
		if err == nil && len(isr) != 3 {
			err = fmt.Errorf("ISR %v", isr)
		}
		return err
	})
	uncleanCheckAcked(t, ctx, c, topic, acked)
}
