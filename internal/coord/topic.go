package coord

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// VersionedTopic is a topic with the etcd revisions of its key.
type VersionedTopic struct {
	meta.Topic
	// CreateRevision tells a re-created topic of the same name apart.
	CreateRevision int64
	// ModRevision is the revision of the last write; TopicUnchanged uses it.
	ModRevision int64
}

// VersionedPartition is a partition state with the mod revision of its
// key, the revision CASPartitionState compares against. ModRevision 0 means
// the partition has no state in etcd (an entry the cache keeps as a hole).
type VersionedPartition struct {
	meta.PartitionState
	ModRevision int64
}

// Exists reports whether the entry holds a stored state.
func (p VersionedPartition) Exists() bool { return p.ModRevision != 0 }

// validateStates checks that states belong to topic t, one per partition
// at most, within its assignment.
func validateStates(t *meta.Topic, states []meta.PartitionState) error {
	seen := make(map[int32]bool, len(states))
	for _, s := range states {
		if s.Topic != t.Name {
			return fmt.Errorf("%w: state of topic %q given for topic %q", ErrInvalid, s.Topic, t.Name)
		}
		if s.Partition < 0 || int(s.Partition) >= len(t.Partitions) {
			return fmt.Errorf("%w: partition %d of topic %q with %d partitions", ErrInvalid, s.Partition, t.Name, len(t.Partitions))
		}
		if seen[s.Partition] {
			return fmt.Errorf("%w: two states for partition %d of topic %q", ErrInvalid, s.Partition, t.Name)
		}
		seen[s.Partition] = true
	}
	return nil
}

// validateTopic checks what the keyspace needs of a topic definition.
func validateTopic(t *meta.Topic) error {
	if err := validName(t.Name); err != nil {
		return err
	}
	if t.ID.IsZero() {
		return fmt.Errorf("%w: topic %q has no id", ErrInvalid, t.Name)
	}
	if len(t.Partitions) == 0 {
		return fmt.Errorf("%w: topic %q has no partitions", ErrInvalid, t.Name)
	}
	for p, replicas := range t.Partitions {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d of topic %q has no replicas", ErrInvalid, p, t.Name)
		}
		sorted := slices.Clone(replicas)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(replicas) {
			return fmt.Errorf("%w: partition %d of topic %q repeats a replica: %v", ErrInvalid, p, t.Name, replicas)
		}
	}
	return nil
}

// statePuts encodes partition states into put operations.
func (c *Client) statePuts(states []meta.PartitionState) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, len(states))
	for _, s := range states {
		b, err := meta.Encode(s)
		if err != nil {
			return nil, fmt.Errorf("coord: encode partition %s-%d: %w", s.Topic, s.Partition, err)
		}
		ops = append(ops, clientv3.OpPut(c.keys.partition(s.Topic, s.Partition), string(b)))
	}
	return ops, nil
}

// CreateTopic writes topic t and the initial states of its partitions in
// one transaction, which commits only if neither the topic key nor any
// partition state under its name exists (else ErrTopicExists). states may
// cover a subset of the partitions (the controller writes the others
// later), but each must be of t and within its assignment. t.ID must be
// set (meta.NewTopicID).
func (c *Client) CreateTopic(ctx context.Context, t meta.Topic, states []meta.PartitionState) error {
	if err := validateTopic(&t); err != nil {
		return err
	}
	if err := validateStates(&t, states); err != nil {
		return err
	}
	val, err := meta.Encode(t)
	if err != nil {
		return fmt.Errorf("coord: encode topic %q: %w", t.Name, err)
	}
	ops, err := c.statePuts(states)
	if err != nil {
		return err
	}
	ops = append(ops, clientv3.OpPut(c.keys.topic(t.Name), string(val)))
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Txn(ctx).
		If(
			clientv3.Compare(clientv3.CreateRevision(c.keys.topic(t.Name)), "=", 0),
			// Every key of the range must be absent: no leftovers of an
			// earlier topic of the same name.
			clientv3.Compare(clientv3.CreateRevision(c.keys.partitionsOf(t.Name)), "=", 0).WithPrefix(),
		).
		Then(ops...).
		Commit()
	if err != nil {
		return c.wrapErr(fmt.Sprintf("create topic %q", t.Name), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("coord: create topic %q: %w", t.Name, ErrTopicExists)
	}
	c.noteRevision(resp.Header.Revision)
	return nil
}

// DeleteTopic deletes the topic and all its partition states in one
// transaction; ErrTopicNotFound if the topic key does not exist.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	_, err := c.DeleteTopicID(ctx, name, meta.TopicID{})
	return err
}

// DeleteTopicID deletes the topic named name, if its id is id (whatever its
// id when id is zero), and all its partition states in one transaction
// conditioned on the incarnation it read, so a topic re-created under the
// same name meanwhile is never deleted in the old one's place. It returns
// the id of the topic it deleted; ErrTopicNotFound if there is no such
// topic.
func (c *Client) DeleteTopicID(ctx context.Context, name string, id meta.TopicID) (meta.TopicID, error) {
	if err := validName(name); err != nil {
		return meta.TopicID{}, err
	}
	for {
		vt, err := c.Topic(ctx, name)
		if err != nil {
			return meta.TopicID{}, err
		}
		if !id.IsZero() && vt.ID != id {
			return meta.TopicID{}, fmt.Errorf("coord: delete topic %q: %w: its id is %s, not %s", name, ErrTopicNotFound, vt.ID, id)
		}
		opCtx, cancel := c.opCtx(ctx)
		resp, err := c.etcd.Txn(opCtx).
			If(clientv3.Compare(clientv3.CreateRevision(c.keys.topic(name)), "=", vt.CreateRevision)).
			Then(
				clientv3.OpDelete(c.keys.topic(name)),
				clientv3.OpDelete(c.keys.partitionsOf(name), clientv3.WithPrefix()),
				clientv3.OpDelete(c.keys.isrHistoryOf(vt.ID, -1), clientv3.WithPrefix()),
			).
			Commit()
		cancel()
		if err != nil {
			return meta.TopicID{}, c.wrapErr(fmt.Sprintf("delete topic %q", name), err)
		}
		if resp.Succeeded {
			c.noteRevision(resp.Header.Revision)
			return vt.ID, nil
		}
		// Deleted or re-created since it was read: read it again.
	}
}

// Topic reads one topic.
func (c *Client) Topic(ctx context.Context, name string) (VersionedTopic, error) {
	if err := validName(name); err != nil {
		return VersionedTopic{}, err
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Get(ctx, c.keys.topic(name))
	if err != nil {
		return VersionedTopic{}, c.wrapErr(fmt.Sprintf("get topic %q", name), err)
	}
	if len(resp.Kvs) == 0 {
		return VersionedTopic{}, fmt.Errorf("coord: get topic %q: %w", name, ErrTopicNotFound)
	}
	return decodeTopic(resp.Kvs[0])
}

func decodeTopic(kv *mvccpb.KeyValue) (VersionedTopic, error) {
	var t meta.Topic
	if err := meta.Decode(kv.Value, &t); err != nil {
		return VersionedTopic{}, fmt.Errorf("coord: key %s: %w", kv.Key, err)
	}
	return VersionedTopic{Topic: t, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}, nil
}

func decodePartition(kv *mvccpb.KeyValue) (VersionedPartition, error) {
	var s meta.PartitionState
	if err := meta.Decode(kv.Value, &s); err != nil {
		return VersionedPartition{}, fmt.Errorf("coord: key %s: %w", kv.Key, err)
	}
	return VersionedPartition{PartitionState: s, ModRevision: kv.ModRevision}, nil
}

// PartitionStates reads the states of a topic's partitions, indexed by
// partition; partitions without a state are entries with ModRevision 0.
// A topic without any state yields an empty slice, not an error.
func (c *Client) PartitionStates(ctx context.Context, topic string) ([]VersionedPartition, error) {
	if err := validName(topic); err != nil {
		return nil, err
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Get(ctx, c.keys.partitionsOf(topic), clientv3.WithPrefix())
	if err != nil {
		return nil, c.wrapErr(fmt.Sprintf("get partitions of %q", topic), err)
	}
	var out []VersionedPartition
	for _, kv := range resp.Kvs {
		pk := c.keys.parse(string(kv.Key))
		if pk.kind != kindPartition || pk.topic != topic {
			continue
		}
		vp, err := decodePartition(kv)
		if err != nil {
			return nil, err
		}
		for len(out) <= int(pk.partition) {
			out = append(out, VersionedPartition{})
		}
		out[pk.partition] = vp
	}
	return out, nil
}

// ISRHistory returns the ISR history of the partitions of the topic with
// id id, by partition, oldest change first (CASPartitionStateNoted). It
// is a serializable read (served by the etcd member the client talks to,
// without a round of consensus): for display, it may lag the latest
// change by what that member has not applied yet.
func (c *Client) ISRHistory(ctx context.Context, id meta.TopicID) (map[int32][]meta.ISRChange, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	prefix := c.keys.isrHistoryOf(id, -1)
	resp, err := c.etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, c.wrapErr(fmt.Sprintf("get the ISR history of topic id %s", id), err)
	}
	out := map[int32][]meta.ISRChange{}
	for _, kv := range resp.Kvs {
		p, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/")
		n, err := strconv.ParseInt(p, 10, 32)
		if !ok || err != nil {
			continue
		}
		var ch meta.ISRChange
		if err := meta.Decode(kv.Value, &ch); err != nil {
			continue // a newer samsa's entry, or hand-edited: skipped
		}
		out[int32(n)] = append(out[int32(n)], ch)
	}
	return out, nil
}

// UpdateTopic changes a topic by read-modify-write: it reads the topic,
// calls fn on a private copy, and writes the result with a compare-and-swap
// on the topic key's mod revision, calling fn again on a fresh read if
// another writer got there first (so concurrent updates never lose one
// another). fn may return an error to abort; UpdateTopic then returns it
// as is. newStates, if any, are created in the same transaction and must
// not exist yet (CreatePartitions); ErrConflict if one does. fn must not
// change the name or id, nor remove partitions; t.Configs is never nil.
// Returns the topic as written.
func (c *Client) UpdateTopic(ctx context.Context, name string, fn func(t *meta.Topic) (newStates []meta.PartitionState, err error)) (meta.Topic, error) {
	if err := validName(name); err != nil {
		return meta.Topic{}, err
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.topic(name)
	for {
		resp, err := c.etcd.Get(ctx, key)
		if err != nil {
			return meta.Topic{}, c.wrapErr(fmt.Sprintf("update topic %q", name), err)
		}
		if len(resp.Kvs) == 0 {
			return meta.Topic{}, fmt.Errorf("coord: update topic %q: %w", name, ErrTopicNotFound)
		}
		cur, err := decodeTopic(resp.Kvs[0])
		if err != nil {
			return meta.Topic{}, err
		}
		t := cur.Topic.Clone()
		if t.Configs == nil {
			t.Configs = map[string]string{} // fn may add overrides
		}
		newStates, err := fn(&t)
		if err != nil {
			return meta.Topic{}, err
		}
		if t.Name != cur.Name || t.ID != cur.ID {
			return meta.Topic{}, fmt.Errorf("%w: update of topic %q changes its name or id", ErrInvalid, name)
		}
		if len(t.Partitions) < len(cur.Partitions) {
			return meta.Topic{}, fmt.Errorf("%w: update of topic %q removes partitions", ErrInvalid, name)
		}
		if err := validateTopic(&t); err != nil {
			return meta.Topic{}, err
		}
		if err := validateStates(&t, newStates); err != nil {
			return meta.Topic{}, err
		}
		val, err := meta.Encode(t)
		if err != nil {
			return meta.Topic{}, fmt.Errorf("coord: encode topic %q: %w", name, err)
		}
		if len(newStates) == 0 && bytes.Equal(val, resp.Kvs[0].Value) {
			return t, nil // nothing to write
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", cur.ModRevision)}
		for _, s := range newStates {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(c.keys.partition(name, s.Partition)), "=", 0))
		}
		ops, err := c.statePuts(newStates)
		if err != nil {
			return meta.Topic{}, err
		}
		ops = append(ops, clientv3.OpPut(key, string(val)))
		tresp, err := c.etcd.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return meta.Topic{}, c.wrapErr(fmt.Sprintf("update topic %q", name), err)
		}
		if tresp.Succeeded {
			c.noteRevision(tresp.Header.Revision)
			return t, nil
		}
		kvs := tresp.Responses[0].GetResponseRange().Kvs
		if len(kvs) > 0 && kvs[0].ModRevision == cur.ModRevision {
			// The topic did not move: a new partition's state exists.
			return meta.Topic{}, fmt.Errorf("coord: update topic %q: %w: a new partition already has a state", name, ErrConflict)
		}
		// Lost the race to another writer: read again and re-apply fn.
	}
}

// CASPartitionState writes s as the state of partition s.Topic/s.Partition
// if its key still has mod revision modRevision (0: the state must not
// exist yet), the topic exists, and every cond holds — all in one
// transaction. It returns the mod revision of the written state, to pass
// to the next CASPartitionState. Errors: ErrTopicNotFound, ErrConflict
// (the state moved: re-read it), ErrConditionFailed (naming the
// condition). The caller bumps PartitionEpoch (and LeaderEpoch on
// elections); this method stores what it is given.
func (c *Client) CASPartitionState(ctx context.Context, s meta.PartitionState, modRevision int64, conds ...Condition) (newModRevision int64, err error) {
	return c.casPartitionState(ctx, s, modRevision, meta.TopicID{}, nil, conds)
}

// ISRHistoryLen is how many changes the ISR history keeps per partition.
const ISRHistoryLen = 16

// CASPartitionStateNoted is CASPartitionState that also records the
// change in the partition's ISR history, in the same transaction: id is
// the topic's id (the history is kept by id), change gives the previous
// leader and ISR, the writer and the reason; the time and the new state's
// epochs, leader and ISR are filled in from s. The history keeps the last
// ISRHistoryLen changes (older ones are deleted by the same transaction)
// and goes with the topic when it is deleted. It records nothing of a
// write that fails.
func (c *Client) CASPartitionStateNoted(ctx context.Context, s meta.PartitionState, modRevision int64, id meta.TopicID, change meta.ISRChange, conds ...Condition) (newModRevision int64, err error) {
	if id.IsZero() {
		// A topic without an id (a hand-edited key): the history is
		// kept by id, so none is written, but the change itself must
		// not fail for it.
		c.log.Warn("no topic id: the ISR change is stored without a history entry", "topic", s.Topic, "partition", s.Partition)
		return c.casPartitionState(ctx, s, modRevision, id, nil, conds)
	}
	return c.casPartitionState(ctx, s, modRevision, id, &change, conds)
}

func (c *Client) casPartitionState(ctx context.Context, s meta.PartitionState, modRevision int64, id meta.TopicID, change *meta.ISRChange, conds []Condition) (newModRevision int64, err error) {
	if err := validName(s.Topic); err != nil {
		return 0, err
	}
	if s.Partition < 0 || modRevision < 0 {
		return 0, fmt.Errorf("%w: partition %d, mod revision %d", ErrInvalid, s.Partition, modRevision)
	}
	for _, cd := range conds {
		if !cd.valid() {
			return 0, fmt.Errorf("%w: zero or malformed condition %q", ErrInvalid, cd.what)
		}
	}
	val, err := meta.Encode(s)
	if err != nil {
		return 0, fmt.Errorf("coord: encode partition %s-%d: %w", s.Topic, s.Partition, err)
	}
	key := c.keys.partition(s.Topic, s.Partition)
	topicKey := c.keys.topic(s.Topic)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", modRevision),
		clientv3.Compare(clientv3.CreateRevision(topicKey), ">", 0),
	}
	reads := []clientv3.Op{clientv3.OpGet(key), clientv3.OpGet(topicKey)}
	for _, cd := range conds {
		cmps = append(cmps, cd.cmp(c.keys))
		reads = append(reads, clientv3.OpGet(c.keys.abs(cd.rel)))
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	writes := []clientv3.Op{clientv3.OpPut(key, string(val))}
	if change != nil {
		ch := *change
		ch.TimeUnixMs = time.Now().UnixMilli()
		ch.PartitionEpoch, ch.Leader, ch.LeaderEpoch, ch.ISR = s.PartitionEpoch, s.Leader, s.LeaderEpoch, s.ISR
		hv, err := meta.Encode(ch)
		if err != nil {
			return 0, fmt.Errorf("coord: encode ISR change of %s-%d: %w", s.Topic, s.Partition, err)
		}
		writes = append(writes, clientv3.OpPut(c.keys.isrHistoryEntry(id, s.Partition, s.PartitionEpoch), string(hv)))
		if oldest := s.PartitionEpoch - ISRHistoryLen + 1; oldest > 0 {
			writes = append(writes, clientv3.OpDelete(c.keys.isrHistoryOf(id, s.Partition),
				clientv3.WithRange(c.keys.isrHistoryEntry(id, s.Partition, oldest))))
		}
	}
	resp, err := c.etcd.Txn(ctx).If(cmps...).Then(writes...).Else(reads...).Commit()
	if err != nil {
		return 0, c.wrapErr(fmt.Sprintf("write partition %s-%d", s.Topic, s.Partition), err)
	}
	if resp.Succeeded {
		c.noteRevision(resp.Header.Revision)
		return resp.Header.Revision, nil
	}
	first := func(i int) *mvccpb.KeyValue {
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			return kvs[0]
		}
		return nil
	}
	if first(1) == nil {
		return 0, fmt.Errorf("coord: write partition %s-%d: %w", s.Topic, s.Partition, ErrTopicNotFound)
	}
	var got int64
	if kv := first(0); kv != nil {
		got = kv.ModRevision
	}
	if got != modRevision {
		return 0, fmt.Errorf("coord: write partition %s-%d: %w: mod revision is %d, not %d", s.Topic, s.Partition, ErrConflict, got, modRevision)
	}
	for i, cd := range conds {
		if !cd.holds(first(2 + i)) {
			return 0, fmt.Errorf("coord: write partition %s-%d: %w: %s", s.Topic, s.Partition, ErrConditionFailed, cd)
		}
	}
	// Everything held when read back: something changed in between.
	return 0, fmt.Errorf("coord: write partition %s-%d: %w", s.Topic, s.Partition, ErrConflict)
}
