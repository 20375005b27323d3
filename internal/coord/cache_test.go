package coord

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/testutil"
)

func newCache(t *testing.T, c *Client) *Cache {
	t.Helper()
	cache, err := c.NewCache(testCtx(t))
	if err != nil {
		t.Fatalf("NewCache: %v", err)
	}
	t.Cleanup(func() { cache.Close() })
	return cache
}

// readYourWrites waits until the cache has applied c's last write.
func readYourWrites(t *testing.T, cache *Cache, c *Client) *Snapshot {
	t.Helper()
	if err := cache.WaitRevision(testCtx(t), c.LastRevision()); err != nil {
		t.Fatal(err)
	}
	return cache.Snapshot()
}

// matchesEtcd compares a snapshot's topics and partition states with a
// direct read of etcd.
func matchesEtcd(ctx context.Context, c *Client, s *Snapshot) error {
	resp, err := c.etcd.Get(ctx, c.keys.prefix+dirTopics, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	if len(resp.Kvs) != len(s.Topics) {
		return fmt.Errorf("cache has %d topics, etcd %d", len(s.Topics), len(resp.Kvs))
	}
	for _, kv := range resp.Kvs {
		vt, err := decodeTopic(kv)
		if err != nil {
			return err
		}
		if got := s.Topics[vt.Name]; !reflect.DeepEqual(got, vt) {
			return fmt.Errorf("cache topic %+v, etcd %+v", got, vt)
		}
		ps, err := c.PartitionStates(ctx, vt.Name)
		if err != nil {
			return err
		}
		if got := s.Partitions[vt.Name]; !reflect.DeepEqual(got, ps) {
			return fmt.Errorf("cache partitions of %s %+v, etcd %+v", vt.Name, got, ps)
		}
	}
	for name := range s.Partitions {
		if _, ok := s.Topics[name]; !ok {
			return fmt.Errorf("cache has partitions of unknown topic %s", name)
		}
	}
	return nil
}

func TestCacheFollowsChanges(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	c := connect(t, eps, cluster)
	id, err := c.ClusterID(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, "before", 2)

	cache := newCache(t, c)
	s := cache.Snapshot()
	if s.ClusterID != id || s.ControllerID != -1 || len(s.Topics) != 1 || len(s.Partitions["before"]) != 2 {
		t.Fatalf("initial snapshot %+v", s)
	}

	// Create: Changed fires, and WaitRevision gives read-your-writes.
	changed := cache.Changed()
	topic, states := createTopic(t, c, "orders", 3)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Changed not closed after CreateTopic")
	}
	s = readYourWrites(t, cache, c)
	if s.Revision < c.LastRevision() {
		t.Fatalf("snapshot revision %d < last write %d", s.Revision, c.LastRevision())
	}
	if vt := s.Topics["orders"]; !reflect.DeepEqual(vt.Topic, topic) || vt.ModRevision != c.LastRevision() {
		t.Fatalf("cached topic %+v, want %+v at %d", vt, topic, c.LastRevision())
	}
	for p, want := range states {
		vp, ok := s.Partition("orders", int32(p))
		if !ok || !reflect.DeepEqual(vp.PartitionState, want) {
			t.Fatalf("cached partition %d: %+v, %v; want %+v", p, vp, ok, want)
		}
	}
	if _, ok := s.Partition("orders", 3); ok {
		t.Fatal("partition 3 of a 3-partition topic")
	}

	// Update and CAS.
	if _, err := c.UpdateTopic(testCtx(t), "orders", func(tp *meta.Topic) ([]meta.PartitionState, error) {
		tp.Partitions = append(tp.Partitions, []int32{1, 2})
		return []meta.PartitionState{{Topic: "orders", Partition: 3, Leader: 1, ISR: []int32{1, 2}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	vp, _ := readYourWrites(t, cache, c).Partition("orders", 1)
	next := vp.PartitionState.Clone()
	next.Leader, next.LeaderEpoch, next.ISR = next.ISR[1], next.LeaderEpoch+1, next.ISR[1:]
	rev, err := c.CASPartitionState(testCtx(t), next, vp.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	s = readYourWrites(t, cache, c)
	if got, _ := s.Partition("orders", 1); got.ModRevision != rev || !reflect.DeepEqual(got.PartitionState, next) {
		t.Fatalf("cached partition 1 %+v, want %+v at %d", got, next, rev)
	}
	if got, _ := s.Partition("orders", 3); got.Leader != 1 {
		t.Fatalf("new partition 3 not cached: %+v", got)
	}

	// Brokers, with the registration's create revision.
	sess := register(t, c, testBroker(1), 10*time.Second)
	if vb := readYourWrites(t, cache, c).Brokers[1]; vb.CreateRevision != sess.CreateRevision() || !reflect.DeepEqual(vb.Broker, sess.Broker()) {
		t.Fatalf("cached broker %+v, want %+v at %d", vb, sess.Broker(), sess.CreateRevision())
	}
	if err := sess.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := cache.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := cache.Snapshot().Brokers[1]; ok {
		t.Fatal("closed session's broker still cached after Sync")
	}

	// Delete removes the topic and its partitions.
	if err := c.DeleteTopic(testCtx(t), "orders"); err != nil {
		t.Fatal(err)
	}
	s = readYourWrites(t, cache, c)
	if _, ok := s.Topics["orders"]; ok {
		t.Fatal("deleted topic still cached")
	}
	if _, ok := s.Partitions["orders"]; ok {
		t.Fatal("deleted topic's partitions still cached")
	}
	if err := matchesEtcd(testCtx(t), c, s); err != nil {
		t.Fatal(err)
	}
}

// Snapshots are immutable: applying changes never alters an old one.
func TestCacheSnapshotsAreImmutable(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	createTopic(t, c, "a", 2)
	cache := newCache(t, c)
	old := cache.Snapshot()
	oldTopics, oldParts := len(old.Topics), fmt.Sprint(old.Partitions)

	createTopic(t, c, "b", 1)
	vp, _ := old.Partition("a", 0)
	next := vp.PartitionState.Clone()
	next.PartitionEpoch++
	if _, err := c.CASPartitionState(testCtx(t), next, vp.ModRevision); err != nil {
		t.Fatal(err)
	}
	readYourWrites(t, cache, c)
	if len(old.Topics) != oldTopics || fmt.Sprint(old.Partitions) != oldParts {
		t.Fatalf("old snapshot changed: %d topics, partitions %v", len(old.Topics), old.Partitions)
	}
}

// WaitRevision returns for revisions written outside the cluster's prefix
// too (progress notifications), and fails with the context or on Close.
func TestCacheWaitRevision(t *testing.T) {
	eps := sharedEtcd(t)
	c := connect(t, eps, clusterName(t))
	elsewhere := connect(t, eps, clusterName(t))
	cache := newCache(t, c)

	// A write to another cluster's keys: no event for this cache.
	createTopic(t, elsewhere, "x", 1)
	changed := cache.Changed()
	if err := cache.WaitRevision(testCtx(t), elsewhere.LastRevision()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Fatal("Changed fired without a change to this cluster")
	default:
	}
	if err := cache.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	mustIs(t, cache.WaitRevision(ctx, cache.Snapshot().Revision+1000), context.DeadlineExceeded)

	errc := make(chan error, 1)
	go func() { errc <- cache.WaitRevision(context.Background(), cache.Snapshot().Revision+1000) }()
	if err := cache.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		mustIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitRevision still blocked after Close")
	}
	if cache.Snapshot() == nil {
		t.Fatal("no snapshot after Close")
	}
}

// A watch that comes back after the revisions it missed were compacted is
// restarted from a fresh read, and the cache converges.
func TestCacheSurvivesCompaction(t *testing.T) {
	eps := sharedEtcd(t)
	p := testutil.NewProxy(t, eps[0])
	cluster := clusterName(t)
	viaProxy := connect(t, p.Endpoints(), cluster)
	direct := connect(t, eps, cluster)
	createTopic(t, direct, "kept", 2)
	createTopic(t, direct, "doomed", 1)
	cache := newCache(t, viaProxy)

	p.SetDown(true)
	// Changes the cache cannot see: a create, an update, a delete.
	createTopic(t, direct, "born", 2)
	vp, _ := cache.Snapshot().Partition("kept", 0)
	next := vp.PartitionState.Clone()
	next.ISR = next.ISR[:1]
	if _, err := direct.CASPartitionState(testCtx(t), next, vp.ModRevision); err != nil {
		t.Fatal(err)
	}
	if err := direct.DeleteTopic(testCtx(t), "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.etcd.Compact(testCtx(t), direct.LastRevision(), clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	p.SetDown(false)

	waitFor(t, 20*time.Second, func() error {
		s := cache.Snapshot()
		if s.Revision < direct.LastRevision() {
			return fmt.Errorf("cache at revision %d, last write %d", s.Revision, direct.LastRevision())
		}
		return matchesEtcd(testCtx(t), direct, s)
	})
	if n := cache.resyncs.Load(); n < 1 {
		t.Fatalf("cache converged without re-reading (%d resyncs): compaction not exercised", n)
	}
	// And it keeps following after the restart.
	createTopic(t, direct, "after", 1)
	if err := cache.WaitRevision(testCtx(t), direct.LastRevision()); err != nil {
		t.Fatal(err)
	}
	if err := matchesEtcd(testCtx(t), direct, cache.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

// The builder keeps holes for missing partition states and trims them at
// the end, without touching the base snapshot.
func TestSnapshotBuilderPartitions(t *testing.T) {
	k := newKeyspace("b")
	put := func(b *builder, p int32) {
		v, _ := meta.Encode(meta.PartitionState{Topic: "t", Partition: p})
		b.put(&mvccpb.KeyValue{Key: []byte(k.partition("t", p)), Value: v, ModRevision: int64(10 + p)})
	}
	del := func(b *builder, p int32) {
		b.del(&mvccpb.KeyValue{Key: []byte(k.partition("t", p))})
	}
	log := slog.New(slog.DiscardHandler)
	b := newBuilder(k, log, emptySnapshot())
	put(b, 0)
	put(b, 2)
	s1 := b.snapshot()
	if ps := s1.Partitions["t"]; len(ps) != 3 || !ps[0].Exists() || ps[1].Exists() || !ps[2].Exists() {
		t.Fatalf("partitions %+v, want 0 and 2 with a hole at 1", ps)
	}
	if _, ok := s1.Partition("t", 1); ok {
		t.Fatal("hole reported as a partition")
	}

	b = newBuilder(k, log, s1)
	del(b, 2)
	s2 := b.snapshot()
	if ps := s2.Partitions["t"]; len(ps) != 1 {
		t.Fatalf("partitions %+v, want the trailing hole trimmed", ps)
	}
	if len(s1.Partitions["t"]) != 3 || !s1.Partitions["t"][2].Exists() {
		t.Fatal("building s2 changed s1")
	}
	b = newBuilder(k, log, s2)
	del(b, 0)
	del(b, 9) // never existed
	if _, ok := b.snapshot().Partitions["t"]; ok {
		t.Fatal("empty partition list kept")
	}
	// Undecodable values are skipped, not cached.
	b = newBuilder(k, log, s2)
	b.put(&mvccpb.KeyValue{Key: []byte(k.partition("t", 0)), Value: []byte("{"), ModRevision: 99})
	if _, ok := b.snapshot().Partition("t", 0); ok {
		t.Fatal("undecodable state cached")
	}
}
