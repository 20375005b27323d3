package coord

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// newTopic returns a topic of n partitions over brokers 1..3 and the
// initial state of each (leader = preferred replica, ISR = replicas).
func newTopic(name string, n int) (meta.Topic, []meta.PartitionState) {
	t := meta.Topic{Name: name, ID: meta.NewTopicID(), Configs: map[string]string{"retention.ms": "1000"}}
	var states []meta.PartitionState
	for p := range n {
		replicas := []int32{int32(p%3 + 1), int32((p+1)%3 + 1)}
		t.Partitions = append(t.Partitions, replicas)
		states = append(states, meta.PartitionState{
			Topic: name, Partition: int32(p), Leader: replicas[0], LeaderEpoch: 0,
			ISR: slices.Clone(replicas), PartitionEpoch: 0, ControllerEpoch: 1,
		})
	}
	return t, states
}

func createTopic(t *testing.T, c *Client, name string, n int) (meta.Topic, []meta.PartitionState) {
	t.Helper()
	topic, states := newTopic(name, n)
	if err := c.CreateTopic(testCtx(t), topic, states); err != nil {
		t.Fatalf("CreateTopic(%s): %v", name, err)
	}
	return topic, states
}

func statesOf(t *testing.T, c *Client, topic string) []VersionedPartition {
	t.Helper()
	ps, err := c.PartitionStates(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestCreateTopic(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	topic, states := createTopic(t, c, "orders", 3)

	got, err := c.Topic(testCtx(t), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Topic, topic) {
		t.Fatalf("topic %+v, want %+v", got.Topic, topic)
	}
	ps := statesOf(t, c, "orders")
	if len(ps) != 3 {
		t.Fatalf("%d partition states, want 3", len(ps))
	}
	for i, p := range ps {
		if !reflect.DeepEqual(p.PartitionState, states[i]) {
			t.Errorf("partition %d: %+v, want %+v", i, p.PartitionState, states[i])
		}
		// One transaction: the topic and every state share its revision.
		if p.ModRevision != got.ModRevision {
			t.Errorf("partition %d written at revision %d, topic at %d", i, p.ModRevision, got.ModRevision)
		}
	}
	if c.LastRevision() != got.ModRevision {
		t.Errorf("LastRevision %d, want the create revision %d", c.LastRevision(), got.ModRevision)
	}

	again, againStates := newTopic("orders", 1)
	mustIs(t, c.CreateTopic(testCtx(t), again, againStates), ErrTopicExists)
	if got2, _ := c.Topic(testCtx(t), "orders"); got2.ID != topic.ID {
		t.Fatal("a failed CreateTopic replaced the topic")
	}
}

// Leftover partition states under a name make CreateTopic fail as a whole.
func TestCreateTopicIsAtomic(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	if _, err := c.etcd.Put(testCtx(t), c.keys.partition("ghost", 5), `{"topic":"ghost","partition":5}`); err != nil {
		t.Fatal(err)
	}
	topic, states := newTopic("ghost", 2)
	mustIs(t, c.CreateTopic(testCtx(t), topic, states), ErrTopicExists)
	_, err := c.Topic(testCtx(t), "ghost")
	mustIs(t, err, ErrTopicNotFound)
	if ps := statesOf(t, c, "ghost"); len(ps) != 6 || ps[0].Exists() || ps[1].Exists() {
		t.Fatalf("states %+v: the failed create wrote some", ps)
	}
}

func TestCreateTopicValidates(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	good, goodStates := newTopic("ok", 2)
	for _, tt := range []struct {
		name   string
		mutate func(*meta.Topic, *[]meta.PartitionState)
	}{
		{"empty name", func(t *meta.Topic, _ *[]meta.PartitionState) { t.Name = "" }},
		{"slash in name", func(t *meta.Topic, _ *[]meta.PartitionState) { t.Name = "a/b" }},
		{"dot name", func(t *meta.Topic, _ *[]meta.PartitionState) { t.Name = ".." }},
		{"long name", func(t *meta.Topic, _ *[]meta.PartitionState) { t.Name = string(make([]byte, 250)) }},
		{"zero id", func(t *meta.Topic, _ *[]meta.PartitionState) { t.ID = meta.TopicID{} }},
		{"no partitions", func(t *meta.Topic, s *[]meta.PartitionState) { t.Partitions = nil; *s = nil }},
		{"no replicas", func(t *meta.Topic, _ *[]meta.PartitionState) { t.Partitions[1] = nil }},
		{"repeated replica", func(t *meta.Topic, _ *[]meta.PartitionState) { t.Partitions[1] = []int32{2, 2} }},
		{"state of other topic", func(_ *meta.Topic, s *[]meta.PartitionState) { (*s)[0].Topic = "other" }},
		{"state out of range", func(_ *meta.Topic, s *[]meta.PartitionState) { (*s)[1].Partition = 2 }},
		{"duplicate state", func(_ *meta.Topic, s *[]meta.PartitionState) { (*s)[1].Partition = 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			topic := good.Clone()
			states := slices.Clone(goodStates)
			tt.mutate(&topic, &states)
			mustIs(t, c.CreateTopic(testCtx(t), topic, states), ErrInvalid)
		})
	}
	// A subset of states is fine; the rest stay missing.
	if err := c.CreateTopic(testCtx(t), good, goodStates[1:]); err != nil {
		t.Fatal(err)
	}
	if ps := statesOf(t, c, "ok"); len(ps) != 2 || ps[0].Exists() || !ps[1].Exists() {
		t.Fatalf("states %+v, want only partition 1", ps)
	}
}

func TestDeleteTopic(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	createTopic(t, c, "foo", 3)
	// Names sharing a prefix must survive.
	createTopic(t, c, "foo-1", 2)
	createTopic(t, c, "foo.bar", 1)

	if err := c.DeleteTopic(testCtx(t), "foo"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Topic(testCtx(t), "foo")
	mustIs(t, err, ErrTopicNotFound)
	if ps := statesOf(t, c, "foo"); len(ps) != 0 {
		t.Fatalf("states left after delete: %+v", ps)
	}
	for name, n := range map[string]int{"foo-1": 2, "foo.bar": 1} {
		if _, err := c.Topic(testCtx(t), name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ps := statesOf(t, c, name); len(ps) != n {
			t.Fatalf("%s has %d states, want %d", name, len(ps), n)
		}
	}
	mustIs(t, c.DeleteTopic(testCtx(t), "foo"), ErrTopicNotFound)
	mustIs(t, c.DeleteTopic(testCtx(t), "a/b"), ErrInvalid)

	// The name can be used again, with a new id.
	createTopic(t, c, "foo", 1)
}

// DeleteTopicID deletes only the incarnation it names: a request for a
// deleted topic's id must not delete the topic re-created under its name.
func TestDeleteTopicID(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	createTopic(t, c, "foo", 2)
	old, err := c.Topic(testCtx(t), "foo")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.DeleteTopicID(testCtx(t), "foo", old.ID); err != nil || got != old.ID {
		t.Fatalf("delete by id: %v, %v; want %v", got, err, old.ID)
	}
	createTopic(t, c, "foo", 1)
	_, err = c.DeleteTopicID(testCtx(t), "foo", old.ID)
	mustIs(t, err, ErrTopicNotFound)
	cur, err := c.Topic(testCtx(t), "foo")
	if err != nil || cur.ID == old.ID {
		t.Fatalf("re-created topic after a delete of the old id: %+v, %v", cur.Topic, err)
	}
	if ps := statesOf(t, c, "foo"); len(ps) != 1 {
		t.Fatalf("re-created topic has %d states, want 1", len(ps))
	}
	// Without an id, the current incarnation goes, and its id is returned.
	if got, err := c.DeleteTopicID(testCtx(t), "foo", meta.TopicID{}); err != nil || got != cur.ID {
		t.Fatalf("delete by name: %v, %v; want %v", got, err, cur.ID)
	}
}

// Concurrent updates from several clients each apply: none is lost.
func TestUpdateTopicConcurrent(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	clients := []*Client{connect(t, eps, cluster), connect(t, eps, cluster), connect(t, eps, cluster)}
	createTopic(t, clients[0], "cfg", 1)

	const perClient = 8
	var calls sync.Map // fn invocations per key, to see that retries happened
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*perClient)
	for ci, c := range clients {
		for i := range perClient {
			key := fmt.Sprintf("k%d.%d", ci, i)
			wg.Go(func() {
				_, err := c.UpdateTopic(testCtx(t), "cfg", func(tp *meta.Topic) ([]meta.PartitionState, error) {
					n, _ := calls.LoadOrStore(key, new(int))
					*n.(*int)++
					tp.Configs[key] = "v"
					return nil, nil
				})
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := clients[1].Topic(testCtx(t), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Configs) != 1+len(clients)*perClient {
		t.Fatalf("%d configs after %d concurrent updates, want %d: %v", len(got.Configs), len(clients)*perClient, 1+len(clients)*perClient, got.Configs)
	}
	retries := 0
	calls.Range(func(_, v any) bool { retries += *v.(*int) - 1; return true })
	t.Logf("%d updates needed %d retries", len(clients)*perClient, retries)
}

func TestUpdateTopic(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	topic, _ := createTopic(t, c, "grow", 2)

	// CreatePartitions: the assignment grows and the new states are
	// created in the same transaction.
	added := meta.PartitionState{Topic: "grow", Partition: 2, Leader: 3, ISR: []int32{3, 1}}
	updated, err := c.UpdateTopic(testCtx(t), "grow", func(tp *meta.Topic) ([]meta.PartitionState, error) {
		tp.Partitions = append(tp.Partitions, []int32{3, 1})
		return []meta.PartitionState{added}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Partitions) != 3 || updated.ID != topic.ID {
		t.Fatalf("updated topic %+v", updated)
	}
	vt, _ := c.Topic(testCtx(t), "grow")
	ps := statesOf(t, c, "grow")
	if len(ps) != 3 || !reflect.DeepEqual(ps[2].PartitionState, added) || ps[2].ModRevision != vt.ModRevision {
		t.Fatalf("states %+v after adding partition 2 at revision %d", ps, vt.ModRevision)
	}

	// A new state that exists already: conflict, nothing written.
	_, err = c.UpdateTopic(testCtx(t), "grow", func(tp *meta.Topic) ([]meta.PartitionState, error) {
		tp.Configs["x"] = "y"
		return []meta.PartitionState{added}, nil
	})
	mustIs(t, err, ErrConflict)
	if vt2, _ := c.Topic(testCtx(t), "grow"); vt2.ModRevision != vt.ModRevision {
		t.Fatal("a conflicting update was written")
	}

	// fn aborts with its own error, returned as is.
	errAbort := errors.New("abort")
	_, err = c.UpdateTopic(testCtx(t), "grow", func(*meta.Topic) ([]meta.PartitionState, error) { return nil, errAbort })
	mustIs(t, err, errAbort)

	// A no-op writes nothing.
	before := c.LastRevision()
	if _, err := c.UpdateTopic(testCtx(t), "grow", func(*meta.Topic) ([]meta.PartitionState, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if vt2, _ := c.Topic(testCtx(t), "grow"); vt2.ModRevision != vt.ModRevision || c.LastRevision() != before {
		t.Fatal("a no-op update was written")
	}

	for _, tt := range []struct {
		name string
		fn   func(*meta.Topic) ([]meta.PartitionState, error)
	}{
		{"rename", func(tp *meta.Topic) ([]meta.PartitionState, error) { tp.Name = "other"; return nil, nil }},
		{"new id", func(tp *meta.Topic) ([]meta.PartitionState, error) { tp.ID = meta.NewTopicID(); return nil, nil }},
		{"shrink", func(tp *meta.Topic) ([]meta.PartitionState, error) {
			tp.Partitions = tp.Partitions[:1]
			return nil, nil
		}},
		{"state out of range", func(tp *meta.Topic) ([]meta.PartitionState, error) {
			return []meta.PartitionState{{Topic: "grow", Partition: 7}}, nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.UpdateTopic(testCtx(t), "grow", tt.fn)
			mustIs(t, err, ErrInvalid)
		})
	}
	// A topic stored without overrides still hands fn a map.
	bare := meta.Topic{Name: "bare", ID: meta.NewTopicID(), Partitions: [][]int32{{1}}}
	if err := c.CreateTopic(testCtx(t), bare, nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.UpdateTopic(testCtx(t), "bare", func(tp *meta.Topic) ([]meta.PartitionState, error) {
		tp.Configs["cleanup.policy"] = "compact"
		return nil, nil
	})
	if err != nil || got.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("update of a topic without configs: %+v, %v", got, err)
	}

	_, err = c.UpdateTopic(testCtx(t), "missing", func(*meta.Topic) ([]meta.PartitionState, error) { return nil, nil })
	mustIs(t, err, ErrTopicNotFound)
}

func TestCASPartitionState(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	c := connect(t, eps, cluster)
	_, states := createTopic(t, c, "isr", 2)
	ctx := testCtx(t)

	rev0 := statesOf(t, c, "isr")[0].ModRevision
	shrunk := states[0].Clone()
	shrunk.ISR = shrunk.ISR[:1]
	shrunk.PartitionEpoch++
	rev1, err := c.CASPartitionState(ctx, shrunk, rev0)
	if err != nil {
		t.Fatal(err)
	}
	if ps := statesOf(t, c, "isr"); ps[0].ModRevision != rev1 || !reflect.DeepEqual(ps[0].PartitionState, shrunk) {
		t.Fatalf("after CAS: %+v, want %+v at %d", ps[0], shrunk, rev1)
	}
	// A writer still holding the old revision loses, and learns why.
	_, err = c.CASPartitionState(ctx, states[0], rev0)
	mustIs(t, err, ErrConflict)
	if ps := statesOf(t, c, "isr"); ps[0].ModRevision != rev1 {
		t.Fatal("a stale CAS was written")
	}
	// Revision 0: create a missing state, once.
	missing := meta.PartitionState{Topic: "isr", Partition: 1, Leader: 2, ISR: []int32{2}}
	if _, err := c.etcd.Delete(ctx, c.keys.partition("isr", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CASPartitionState(ctx, missing, 0); err != nil {
		t.Fatal(err)
	}
	_, err = c.CASPartitionState(ctx, missing, 0)
	mustIs(t, err, ErrConflict)

	// ISR expand fenced by the follower's registration.
	follower := register(t, c, testBroker(2), 10*time.Second)
	cond := BrokerRegistered(2, follower.CreateRevision())
	expanded := shrunk.Clone()
	expanded.ISR = append(expanded.ISR, 2)
	expanded.PartitionEpoch++
	rev2, err := c.CASPartitionState(ctx, expanded, rev1, cond, follower.Condition())
	if err != nil {
		t.Fatal(err)
	}
	// The follower restarts: a new incarnation, a new create revision. An
	// expand decided on the old registration must fail, and say why.
	if err := follower.Close(ctx); err != nil {
		t.Fatal(err)
	}
	register(t, c, testBroker(2), 10*time.Second)
	_, err = c.CASPartitionState(ctx, expanded, rev2, cond)
	mustIs(t, err, ErrConditionFailed)
	if errors.Is(err, ErrConflict) {
		t.Fatalf("%v: a failed condition reported as a revision conflict", err)
	}
	// Several failures at once: the revision conflict is reported first.
	_, err = c.CASPartitionState(ctx, expanded, rev1, cond)
	mustIs(t, err, ErrConflict)

	// Topic fencing.
	vt, _ := c.Topic(ctx, "isr")
	rev3, err := c.CASPartitionState(ctx, expanded, rev2, TopicUnchanged("isr", vt.ModRevision))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateTopic(ctx, "isr", func(tp *meta.Topic) ([]meta.PartitionState, error) {
		tp.Configs["k"] = "v"
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err = c.CASPartitionState(ctx, expanded, rev3, TopicUnchanged("isr", vt.ModRevision))
	mustIs(t, err, ErrConditionFailed)

	// A deleted topic cannot get states back.
	if err := c.DeleteTopic(ctx, "isr"); err != nil {
		t.Fatal(err)
	}
	_, err = c.CASPartitionState(ctx, expanded, 0)
	mustIs(t, err, ErrTopicNotFound)
	if ps := statesOf(t, c, "isr"); len(ps) != 0 {
		t.Fatalf("states of a deleted topic: %+v", ps)
	}

	// Malformed calls.
	_, err = c.CASPartitionState(ctx, expanded, rev3, Condition{})
	mustIs(t, err, ErrInvalid)
	_, err = c.CASPartitionState(ctx, meta.PartitionState{Topic: "isr", Partition: -1}, 0)
	mustIs(t, err, ErrInvalid)
	_, err = c.CASPartitionState(context.Background(), meta.PartitionState{Topic: "a/b"}, 0)
	mustIs(t, err, ErrInvalid)
}

// TestISRHistory: CASPartitionStateNoted records each stored change in the
// partition's ISR history, in the same transaction: a write that fails
// records nothing, the history keeps the last ISRHistoryLen changes in
// partition-epoch order, partitions and topics keep theirs apart, and it
// goes with the topic when the topic is deleted.
func TestISRHistory(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	c := connect(t, eps, cluster)
	topic, states := createTopic(t, c, "hist", 2)
	topic2, _ := createTopic(t, c, "hist2", 1)
	ids := map[string]meta.TopicID{"hist": topic.ID, "hist2": topic2.ID}
	ctx := testCtx(t)

	history := func(name string) map[int32][]meta.ISRChange {
		t.Helper()
		h, err := c.ISRHistory(ctx, ids[name])
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := history("hist"); len(h) != 0 {
		t.Fatalf("history of a new topic: %v, want none", h)
	}

	cur, rev := states[0], statesOf(t, c, "hist")[0].ModRevision
	const changes = ISRHistoryLen + 5
	for i := range changes {
		next := cur.Clone()
		next.PartitionEpoch++
		if i%2 == 0 {
			next.ISR = next.ISR[:1]
		} else {
			next.ISR = slices.Clone(states[0].ISR)
		}
		note := meta.ISRChange{PreviousLeader: cur.Leader, PreviousISR: cur.ISR, By: "leader 1", Reason: fmt.Sprintf("change %d", i)}
		var err error
		if rev, err = c.CASPartitionStateNoted(ctx, next, rev, topic.ID, note); err != nil {
			t.Fatal(err)
		}
		// A stale writer's change is refused and not recorded.
		stale := meta.ISRChange{By: "controller 9", Reason: "stale"}
		if _, err := c.CASPartitionStateNoted(ctx, next, rev-1, topic.ID, stale); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale noted CAS: %v, want ErrConflict", err)
		}
		cur = next
	}
	h := history("hist")
	got := h[0]
	if len(got) != ISRHistoryLen {
		t.Fatalf("partition 0 keeps %d changes, want %d: %+v", len(got), ISRHistoryLen, got)
	}
	for i, ch := range got {
		n := changes - ISRHistoryLen + i // the change's index
		if ch.Reason != fmt.Sprintf("change %d", n) || ch.PartitionEpoch != states[0].PartitionEpoch+int32(n)+1 ||
			ch.By != "leader 1" || ch.TimeUnixMs == 0 {
			t.Errorf("change %d: %+v, want reason %q at partition epoch %d", i, ch, fmt.Sprintf("change %d", n), states[0].PartitionEpoch+int32(n)+1)
		}
		if wantISR := len(states[0].ISR); n%2 == 0 && len(ch.ISR) != 1 || n%2 == 1 && len(ch.ISR) != wantISR {
			t.Errorf("change %d: ISR %v, previous %v", n, ch.ISR, ch.PreviousISR)
		}
		if i > 0 && !slices.Equal(ch.PreviousISR, got[i-1].ISR) {
			t.Errorf("change %d: previous ISR %v, but the change before stored %v", n, ch.PreviousISR, got[i-1].ISR)
		}
	}
	if len(h[1]) != 0 || len(history("hist2")) != 0 {
		t.Errorf("other partitions and topics got history: %v / %v", h[1], history("hist2"))
	}
	// A plain CAS records nothing.
	next := cur.Clone()
	next.PartitionEpoch++
	rev, err := c.CASPartitionState(ctx, next, rev)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(history("hist")[0]); n != ISRHistoryLen {
		t.Errorf("after a plain CAS: %d changes, want %d", n, ISRHistoryLen)
	}

	// Without a topic id the change is stored all the same, with no
	// history entry.
	next = next.Clone()
	next.PartitionEpoch++
	if _, err := c.CASPartitionStateNoted(ctx, next, rev, meta.TopicID{}, meta.ISRChange{Reason: "no id"}); err != nil {
		t.Errorf("noted CAS without a topic id: %v, want it stored", err)
	}
	if ps := statesOf(t, c, "hist"); ps[0].PartitionEpoch != next.PartitionEpoch {
		t.Errorf("the state without a topic id was not stored: %+v", ps[0])
	}
	if n := len(history("hist")[0]); n != ISRHistoryLen {
		t.Errorf("after a change without a topic id: %d changes, want %d", n, ISRHistoryLen)
	}
	// The history is outside the prefix the metadata cache reads.
	resp, err := c.etcd.Get(ctx, c.keys.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), "isr-history") {
			t.Errorf("history key %s under the cache's prefix %s", kv.Key, c.keys.prefix)
		}
	}

	if err := c.DeleteTopic(ctx, "hist"); err != nil {
		t.Fatal(err)
	}
	if h := history("hist"); len(h) != 0 {
		t.Errorf("history after the topic was deleted: %v", h)
	}
	// A topic re-created with the name starts without history.
	again, _ := createTopic(t, c, "hist", 1)
	ids["hist"] = again.ID
	if h := history("hist"); len(h) != 0 {
		t.Errorf("history of the re-created topic: %v", h)
	}
}
