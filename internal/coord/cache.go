package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// Snapshot is the cluster metadata as of one etcd revision. Snapshots are
// immutable and shared by every reader: never modify one or anything it
// points to (Clone the meta values first).
type Snapshot struct {
	// Revision is the etcd revision this snapshot reflects: every change
	// of the cluster's keys up to it is applied, none after it.
	Revision  int64
	ClusterID string // "" until ClusterID was first called
	Brokers   map[int32]VersionedBroker
	Topics    map[string]VersionedTopic
	// Partitions holds each topic's partition states, index = partition.
	// A slice may be shorter than the topic's assignment and may have holes
	// (entries with ModRevision 0) where a state is missing; use Partition.
	Partitions map[string][]VersionedPartition
	// ControllerID is the broker id of the active controller, -1 if none;
	// ControllerEpoch is its epoch (the controller key's create revision).
	ControllerID    int32
	ControllerEpoch int64
	// ACLs holds every ACL of the cluster by its key (ACLKey).
	// ACLRevision changes whenever ACLs does (it is the revision of the
	// last change, or of the read that built the snapshot), so a reader
	// can rebuild what it derives from ACLs only then.
	ACLs        map[string]meta.ACL
	ACLRevision int64
	// BadACLs holds the keys of ACLs that do not decode or validate (a
	// newer samsa's enum value, a hand-edited key): an authorizer must
	// fail closed while any exists, since a DENY may be among them.
	BadACLs map[string]bool
	// Quotas holds every client quota by its key (QuotaKey); QuotaRevision
	// changes whenever Quotas does, as ACLRevision.
	Quotas        map[string]meta.ClientQuota
	QuotaRevision int64
}

// Partition returns the stored state of one partition, if any.
func (s *Snapshot) Partition(topic string, partition int32) (VersionedPartition, bool) {
	ps := s.Partitions[topic]
	if partition < 0 || int(partition) >= len(ps) || !ps[partition].Exists() {
		return VersionedPartition{}, false
	}
	return ps[partition], true
}

func emptySnapshot() *Snapshot {
	return &Snapshot{
		Brokers:      map[int32]VersionedBroker{},
		Topics:       map[string]VersionedTopic{},
		Partitions:   map[string][]VersionedPartition{},
		ACLs:         map[string]meta.ACL{},
		BadACLs:      map[string]bool{},
		Quotas:       map[string]meta.ClientQuota{},
		ControllerID: -1,
	}
}

// Cache is a local copy of the whole cluster metadata, kept current by an
// etcd watch: every broker reads metadata from it instead of from etcd.
//
// One goroutine (run) owns the watch and is the only writer of snapshots;
// a second one (requestProgress) asks etcd for progress notifications on
// behalf of WaitRevision. Close stops and waits for both.
type Cache struct {
	client *Client
	log    *slog.Logger
	snap   atomic.Pointer[Snapshot]

	// mu guards the two broadcast channels, which are closed and replaced.
	mu       sync.Mutex
	changed  chan struct{} // closed when the content changes
	advanced chan struct{} // closed when the revision or the content changes

	ctx          context.Context // cancelled by Close and Client.Close
	cancel       context.CancelFunc
	done         chan struct{} // closed when run returns
	progressDone chan struct{} // closed when requestProgress returns
	// progressWanted (size 1: one pending request covers every waiter)
	// wakes requestProgress.
	progressWanted chan struct{}
	// watching is true while run has a watch open.
	watching atomic.Bool
	// resyncs counts full re-reads after the first (watch restarts).
	resyncs atomic.Int64
}

// Watch retry delays after a failed re-read.
const (
	minRetryDelay = 100 * time.Millisecond
	maxRetryDelay = 2 * time.Second
	// progressInterval is how often a waiting WaitRevision asks etcd for
	// a progress notification (etcd ignores the request while the watch
	// is catching up, so it must be repeated).
	progressInterval = 100 * time.Millisecond
)

// NewCache reads the whole cluster prefix and starts watching it from the
// next revision. It returns once the first snapshot is in place; if etcd
// cannot be read within ctx, it fails. Later watch failures (compaction,
// lost leader, broken connection) are repaired in the background by
// re-reading everything and watching again.
func (c *Client) NewCache(ctx context.Context) (*Cache, error) {
	cctx, cancel := context.WithCancel(c.ctx)
	cache := &Cache{
		client:         c,
		log:            c.log,
		changed:        make(chan struct{}),
		advanced:       make(chan struct{}),
		ctx:            cctx,
		cancel:         cancel,
		done:           make(chan struct{}),
		progressDone:   make(chan struct{}),
		progressWanted: make(chan struct{}, 1),
	}
	octx, ocancel := c.opCtx(ctx)
	defer ocancel()
	snap, err := cache.read(octx)
	if err != nil {
		cancel()
		return nil, err
	}
	cache.snap.Store(snap)
	if err := c.goStart(func() { cache.run(snap.Revision) }); err != nil {
		cancel()
		return nil, err
	}
	if err := c.goStart(cache.requestProgress); err != nil {
		cancel()
		<-cache.done
		return nil, err
	}
	return cache, nil
}

// Snapshot returns the current snapshot. To wait for the next one, call
// Changed before Snapshot.
func (c *Cache) Snapshot() *Snapshot { return c.snap.Load() }

// Changed returns a channel that is closed when a snapshot with new
// content is published (then a new channel takes its place). A snapshot
// that only advances Revision (progress notification) does not close it.
func (c *Cache) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *Cache) advancedCh() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.advanced
}

// publish installs s; contentChanged says whether to wake Changed waiters
// as well as WaitRevision ones. Only run calls it.
func (c *Cache) publish(s *Snapshot, contentChanged bool) {
	c.snap.Store(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.advanced)
	c.advanced = make(chan struct{})
	if contentChanged {
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// WaitRevision returns once the cache has applied etcd revision rev or a
// later one (read-your-writes: pass Client.LastRevision after a write). It
// fails with the context's error, or ErrClosed once the cache is closed.
func (c *Cache) WaitRevision(ctx context.Context, rev int64) error {
	var tick *time.Ticker
	for {
		adv := c.advancedCh()
		if c.snap.Load().Revision >= rev {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("coord: wait for revision %d: %w", rev, ErrClosed)
		default:
		}
		// The revision may belong to a write outside the cluster prefix:
		// only a progress notification then tells that the cache is there.
		select {
		case c.progressWanted <- struct{}{}:
		default:
		}
		if tick == nil {
			tick = time.NewTicker(progressInterval)
			defer tick.Stop()
		}
		select {
		case <-adv:
		case <-tick.C:
		case <-c.done:
		case <-ctx.Done():
			return fmt.Errorf("coord: wait for revision %d (cache at %d): %w", rev, c.snap.Load().Revision, ctx.Err())
		}
	}
}

// Sync waits until the cache reflects every write that completed in etcd
// before Sync was called: it reads etcd's current revision (a
// linearizable read) and waits for it.
func (c *Cache) Sync(ctx context.Context) error {
	octx, cancel := c.client.opCtx(ctx)
	resp, err := c.client.etcd.Get(octx, c.client.keys.clusterID(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return c.client.wrapErr("sync cache", err)
	}
	return c.WaitRevision(ctx, resp.Header.Revision)
}

// Close stops the watch and waits for the cache's goroutines. The last
// snapshot stays readable.
func (c *Cache) Close() error {
	c.cancel()
	<-c.done
	<-c.progressDone
	return nil
}

// read loads the whole cluster prefix into a new snapshot.
func (c *Cache) read(ctx context.Context) (*Snapshot, error) {
	resp, err := c.client.etcd.Get(ctx, c.client.keys.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, c.client.wrapErr("read metadata", err)
	}
	b := newBuilder(c.client.keys, c.log, emptySnapshot())
	for _, kv := range resp.Kvs {
		b.put(kv)
	}
	s := b.snapshot()
	s.Revision = resp.Header.Revision
	s.ACLRevision = resp.Header.Revision
	s.QuotaRevision = resp.Header.Revision
	return s, nil
}

// run watches from rev+1 until the cache is closed, re-reading everything
// when the watch fails.
func (c *Cache) run(rev int64) {
	defer close(c.done)
	var delay time.Duration
	for {
		progressed, err := c.watch(rev)
		if c.ctx.Err() != nil {
			return
		}
		c.log.Warn("coord: metadata watch ended; re-reading", "revision", c.snap.Load().Revision, "err", err)
		if progressed {
			delay = 0
		}
		for {
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-c.ctx.Done():
					t.Stop()
					return
				}
			}
			delay = min(max(2*delay, minRetryDelay), maxRetryDelay)
			octx, cancel := c.client.opCtx(c.ctx)
			snap, err := c.read(octx)
			cancel()
			if c.ctx.Err() != nil {
				return
			}
			if err != nil {
				c.log.Warn("coord: metadata re-read failed", "err", err, "retry_in", delay)
				continue
			}
			c.resyncs.Add(1)
			c.publish(snap, true)
			rev = snap.Revision
			break
		}
	}
}

var errWatchClosed = errors.New("coord: watch channel closed")

// watch applies watch responses from rev+1 on until the watch fails. It
// reports whether it applied anything.
func (c *Cache) watch(rev int64) (progressed bool, err error) {
	// WithRequireLeader: a member cut off from the quorum cancels the watch
	// instead of leaving it silently stale.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(c.ctx))
	defer cancel()
	c.watching.Store(true)
	defer c.watching.Store(false)
	wch := c.client.etcd.Watch(wctx, c.client.keys.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return progressed, err
		}
		cur := c.snap.Load()
		if resp.IsProgressNotify() {
			// etcd sends these only once every earlier event was sent.
			if r := resp.Header.Revision; r > cur.Revision {
				next := *cur
				next.Revision = r
				c.publish(&next, false)
			}
			continue
		}
		if len(resp.Events) == 0 {
			continue
		}
		b := newBuilder(c.client.keys, c.log, cur)
		last := cur.Revision
		content := false
		for _, ev := range resp.Events {
			last = max(last, ev.Kv.ModRevision)
			if c.client.keys.parse(string(ev.Kv.Key)).kind == kindHeartbeat {
				continue // liveness only (WatchPeers): several a second
			}
			content = true
			switch ev.Type {
			case mvccpb.PUT:
				b.put(ev.Kv)
			case mvccpb.DELETE:
				b.del(ev.Kv)
			}
		}
		if !content {
			if last > cur.Revision {
				next := *cur
				next.Revision = last
				c.publish(&next, false)
			}
			progressed = true
			continue
		}
		s := b.snapshot()
		// Not resp.Header.Revision: while a watcher catches up, etcd may
		// stamp a batch with a revision beyond its last event.
		s.Revision = last
		c.publish(s, true)
		progressed = true
	}
	return progressed, errWatchClosed
}

// requestProgress asks etcd for a progress notification whenever a
// WaitRevision waits.
func (c *Cache) requestProgress() {
	defer close(c.progressDone)
	// The same metadata as the watch context, so the request goes to the
	// gRPC stream carrying the watch.
	pctx := clientv3.WithRequireLeader(c.ctx)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.progressWanted:
		}
		if !c.watching.Load() {
			continue
		}
		if err := c.client.etcd.RequestProgress(pctx); err != nil && c.ctx.Err() == nil {
			c.log.Debug("coord: watch progress request failed", "err", err)
		}
	}
}

// builder makes a new snapshot from a base one, copying only the maps and
// slices it changes (copy on write).
type builder struct {
	keys keyspace
	log  *slog.Logger
	s    *Snapshot
	// owned marks what has been copied from the base already.
	ownBrokers, ownTopics, ownPartitions, ownACLs, ownQuotas bool
	ownSlice                                                 map[string]bool
}

func newBuilder(k keyspace, log *slog.Logger, base *Snapshot) *builder {
	s := *base
	return &builder{keys: k, log: log, s: &s, ownSlice: map[string]bool{}}
}

func (b *builder) snapshot() *Snapshot { return b.s }

func (b *builder) brokers() map[int32]VersionedBroker {
	if !b.ownBrokers {
		b.s.Brokers = cloneMap(b.s.Brokers)
		b.ownBrokers = true
	}
	return b.s.Brokers
}

func (b *builder) topics() map[string]VersionedTopic {
	if !b.ownTopics {
		b.s.Topics = cloneMap(b.s.Topics)
		b.ownTopics = true
	}
	return b.s.Topics
}

// acls returns a private copy of the ACL map, stored in the new
// snapshot, and marks the ACLs changed as of rev.
func (b *builder) acls(rev int64) map[string]meta.ACL {
	if !b.ownACLs {
		b.s.ACLs = cloneMap(b.s.ACLs)
		b.s.BadACLs = cloneMap(b.s.BadACLs)
		b.ownACLs = true
	}
	b.s.ACLRevision = max(b.s.ACLRevision, rev)
	return b.s.ACLs
}

// quotas returns a private copy of the quota map, stored in the new
// snapshot, and marks the quotas changed as of rev.
func (b *builder) quotas(rev int64) map[string]meta.ClientQuota {
	if !b.ownQuotas {
		b.s.Quotas = cloneMap(b.s.Quotas)
		b.ownQuotas = true
	}
	b.s.QuotaRevision = max(b.s.QuotaRevision, rev)
	return b.s.Quotas
}

// partitions returns a private copy of topic's partition slice, stored in
// the new snapshot.
func (b *builder) partitions(topic string) []VersionedPartition {
	if !b.ownPartitions {
		b.s.Partitions = cloneMap(b.s.Partitions)
		b.ownPartitions = true
	}
	ps := b.s.Partitions[topic]
	if !b.ownSlice[topic] {
		ps = append([]VersionedPartition(nil), ps...)
		b.s.Partitions[topic] = ps
		b.ownSlice[topic] = true
	}
	return ps
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// put applies a created or updated key. A value that does not decode is
// logged and treated as absent: a stale entry would be worse.
func (b *builder) put(kv *mvccpb.KeyValue) {
	pk := b.keys.parse(string(kv.Key))
	switch pk.kind {
	case kindClusterID:
		b.s.ClusterID = string(kv.Value)
	case kindController:
		var v controllerValue
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			b.log.Error("coord: skipping undecodable controller key", "err", err)
			b.del(kv)
			return
		}
		b.s.ControllerID, b.s.ControllerEpoch = v.BrokerID, kv.CreateRevision
	case kindBroker:
		var br meta.Broker
		if err := meta.Decode(kv.Value, &br); err != nil {
			b.log.Error("coord: skipping undecodable broker registration", "key", string(kv.Key), "err", err)
			b.del(kv)
			return
		}
		b.brokers()[pk.broker] = VersionedBroker{Broker: br, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	case kindTopic:
		vt, err := decodeTopic(kv)
		if err != nil {
			b.log.Error("coord: skipping undecodable topic", "key", string(kv.Key), "err", err)
			b.del(kv)
			return
		}
		b.topics()[pk.topic] = vt
	case kindACL:
		var a meta.ACL
		err := meta.Decode(kv.Value, &a)
		if err == nil {
			err = meta.ValidateACL(a)
		}
		acls := b.acls(kv.ModRevision)
		if err != nil {
			b.log.Error("coord: an ACL does not decode; authorization refuses all but super users until it is deleted",
				"key", string(kv.Key), "err", err)
			delete(acls, pk.acl)
			b.s.BadACLs[pk.acl] = true
			return
		}
		acls[pk.acl] = a
		delete(b.s.BadACLs, pk.acl)
	case kindQuota:
		var q meta.ClientQuota
		err := meta.Decode(kv.Value, &q)
		if err == nil {
			q.Entity, err = meta.Canonical(q.Entity)
		}
		quotas := b.quotas(kv.ModRevision)
		if err != nil {
			b.log.Error("coord: skipping undecodable client quota", "key", string(kv.Key), "err", err)
			delete(quotas, pk.acl)
			return
		}
		quotas[pk.acl] = q
	case kindPartition:
		vp, err := decodePartition(kv)
		if err != nil {
			b.log.Error("coord: skipping undecodable partition state", "key", string(kv.Key), "err", err)
			b.del(kv)
			return
		}
		ps := b.partitions(pk.topic)
		for len(ps) <= int(pk.partition) {
			ps = append(ps, VersionedPartition{})
		}
		ps[pk.partition] = vp
		b.s.Partitions[pk.topic] = ps
	}
}

// del applies a deleted key.
func (b *builder) del(kv *mvccpb.KeyValue) {
	pk := b.keys.parse(string(kv.Key))
	switch pk.kind {
	case kindClusterID:
		b.s.ClusterID = ""
	case kindController:
		b.s.ControllerID, b.s.ControllerEpoch = -1, 0
	case kindBroker:
		if _, ok := b.s.Brokers[pk.broker]; ok {
			delete(b.brokers(), pk.broker)
		}
	case kindTopic:
		if _, ok := b.s.Topics[pk.topic]; ok {
			delete(b.topics(), pk.topic)
		}
	case kindACL:
		_, ok := b.s.ACLs[pk.acl]
		if ok || b.s.BadACLs[pk.acl] {
			delete(b.acls(kv.ModRevision), pk.acl)
			delete(b.s.BadACLs, pk.acl)
		}
	case kindQuota:
		if _, ok := b.s.Quotas[pk.acl]; ok {
			delete(b.quotas(kv.ModRevision), pk.acl)
		}
	case kindPartition:
		if int(pk.partition) >= len(b.s.Partitions[pk.topic]) {
			return
		}
		ps := b.partitions(pk.topic)
		ps[pk.partition] = VersionedPartition{}
		for len(ps) > 0 && !ps[len(ps)-1].Exists() {
			ps = ps[:len(ps)-1]
		}
		if len(ps) == 0 {
			delete(b.s.Partitions, pk.topic)
			delete(b.ownSlice, pk.topic)
		} else {
			b.s.Partitions[pk.topic] = ps
		}
	}
}
