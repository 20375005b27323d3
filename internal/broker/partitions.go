package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/group"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/txn"
)

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// localPartition is a replica hosted here with the topic incarnation and
// settings it was opened with.
type localPartition struct {
	*replica.Partition
	topicID meta.TopicID
	// settings are the topic's effective configs; replaced by the
	// partition manager when the topic's configs change.
	settings atomic.Pointer[topicSettings]
	// compactedSegments and compactedAt record the last compaction (a
	// compacted topic's); only the cleaner goroutine uses them.
	compactedSegments int
	compactedAt       time.Time
	// truncations audits the truncations of this replica's log since it
	// was opened here (the fetcher's: replication.go).
	truncations truncationCounters
}

// truncationCounters count a replica's truncations (Truncations).
type truncationCounters struct {
	count, removed, committed, lastUnixMs atomic.Int64
}

// Truncations is a replica's truncation audit since it was opened on
// this broker: how many truncations, the records they removed, how many
// of those lay below its high watermark (committed, so possibly
// acknowledged: 0 but after an unclean election), and when the last one
// was (Unix ms, 0: none).
type Truncations struct {
	Count            int64 `json:"count"`
	Removed          int64 `json:"removed"`
	RemovedCommitted int64 `json:"removed_committed"`
	LastUnixMs       int64 `json:"last_unix_ms"`
}

func (t *truncationCounters) note(removed, committed int64) {
	t.count.Add(1)
	t.removed.Add(removed)
	t.committed.Add(committed)
	t.lastUnixMs.Store(time.Now().UnixMilli())
}

func (t *truncationCounters) snapshot() Truncations {
	return Truncations{Count: t.count.Load(), Removed: t.removed.Load(), RemovedCommitted: t.committed.Load(),
		LastUnixMs: t.lastUnixMs.Load()}
}

// partitionManager owns the replicas hosted on this broker. Its run
// goroutine is the only one that opens, closes or changes the role of a
// replica; handlers look replicas up concurrently.
type partitionManager struct {
	b *Broker
	// fetchers replicate the partitions followed here; only run's
	// goroutine (reconcile, remove) uses it.
	fetchers *fetcherManager

	mu sync.RWMutex
	// parts are the open replicas; guarded by mu.
	parts map[topicPartition]*localPartition

	// view is the metadata snapshot the replicas last matched: what this
	// broker answers clients from (see Broker.view); written by run and
	// openExisting, read by waitReconciled and the handlers.
	view atomic.Pointer[coord.Snapshot]
	// reconciledMu guards reconciledCh, closed and replaced whenever
	// view advances.
	reconciledMu sync.Mutex
	reconciledCh chan struct{}

	// removing counts the retired logs still being removed (remove);
	// closeAll waits for them.
	removing sync.WaitGroup
	// tombSeq numbers the tombs (tomb).
	tombSeq atomic.Uint64

	// hwMu guards the high watermark checkpoint (hwcheckpoint.go):
	// hwStart, the lines read at start not yet taken by an opening
	// replica (nil until read), and hwWritten, the last one written.
	hwMu      sync.Mutex
	hwStart   map[topicPartition]hwEntry
	hwWritten []byte
}

func newPartitionManager(b *Broker) *partitionManager {
	return &partitionManager{b: b, fetchers: newFetcherManager(b), parts: map[topicPartition]*localPartition{}, reconciledCh: make(chan struct{})}
}

// get returns the local replica of a partition, or nil.
func (m *partitionManager) get(topic string, partition int32) *localPartition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[topicPartition{topic, partition}]
}

// partitionMetadataFile records which topic incarnation a directory holds,
// like Kafka's partition.metadata, so a re-created topic of the same name
// never reuses an old log.
const partitionMetadataFile = "partition.metadata"

func (m *partitionManager) dir(tp topicPartition) string {
	return filepath.Join(m.b.cfg.logDir(), tp.topic+"-"+strconv.Itoa(int(tp.partition)))
}

// parseDirName splits "<topic>-<partition>".
func parseDirName(name string) (topicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return topicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return topicPartition{}, false
	}
	return topicPartition{name[:i], int32(p)}, true
}

// openExisting removes partition directories of topics that were deleted
// (or re-created) while the broker was down, then reconciles.
func (m *partitionManager) openExisting(s *coord.Snapshot) error {
	entries, err := os.ReadDir(m.b.cfg.logDir())
	if err != nil {
		return fmt.Errorf("broker: read log dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.Contains(e.Name(), tombMark) {
			// Deleted, its removal cut short by a stop or a crash.
			m.removeLater(filepath.Join(m.b.cfg.logDir(), e.Name()))
			continue
		}
		tp, ok := parseDirName(e.Name())
		if !ok {
			continue
		}
		t, exists := s.Topics[tp.topic]
		keep := exists && int(tp.partition) < len(t.Topic.Partitions) &&
			slices.Contains(t.Topic.Partitions[tp.partition], m.b.cfg.NodeID) &&
			readTopicID(filepath.Join(m.b.cfg.logDir(), e.Name())) == t.Topic.ID
		if !keep {
			m.b.logger.Info("deleting log of a deleted partition", "dir", e.Name())
			if err := os.RemoveAll(filepath.Join(m.b.cfg.logDir(), e.Name())); err != nil {
				return fmt.Errorf("broker: delete stale log: %w", err)
			}
		}
	}
	m.loadHighWatermarks()
	m.reconcile(s)
	m.setReconciled(s)
	return nil
}

func readTopicID(dir string) meta.TopicID {
	var id meta.TopicID
	b, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return id
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			if parsed, err := meta.ParseTopicID(strings.TrimSpace(v)); err == nil {
				id = parsed
			}
		}
	}
	return id
}

// writeTopicID records the incarnation durably (file, rename, directory):
// a start that found it missing or empty would take the directory for a
// deleted incarnation's and remove the log with it.
func writeTopicID(dir string, id meta.TopicID) error {
	return klog.WriteFileAtomic(klog.OSFS{}, dir, partitionMetadataFile, []byte("version: 0\ntopic_id: "+id.String()+"\n"))
}

// holdsLog reports whether a partition directory holds more than its
// partition.metadata (and that file's temporary).
func holdsLog(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); n != partitionMetadataFile && n != partitionMetadataFile+".tmp" {
			return true
		}
	}
	return false
}

// run reconciles the local replicas with the cluster metadata every time the
// metadata changes, until ctx is done.
func (m *partitionManager) run(ctx context.Context) {
	for {
		changed := m.b.cache.Changed()
		s := m.b.cache.Snapshot()
		m.reconcile(s)
		m.setReconciled(s)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// setReconciled publishes s as the view once the replicas match it.
func (m *partitionManager) setReconciled(s *coord.Snapshot) {
	m.reconciledMu.Lock()
	defer m.reconciledMu.Unlock()
	if v := m.view.Load(); v == nil || s.Revision > v.Revision {
		m.view.Store(s)
		close(m.reconciledCh)
		m.reconciledCh = make(chan struct{})
	}
}

// view is the metadata snapshot this broker answers clients from: the one
// its replicas last matched, so Metadata never names this broker leader of
// a partition it does not lead yet, and every handler answers from one etcd
// revision. Before the first reconcile (not serving yet) it is the cache's.
func (b *Broker) view() *coord.Snapshot {
	if v := b.partitions.view.Load(); v != nil {
		return v
	}
	return b.cache.Snapshot()
}

// waitReconciled returns once the replicas match metadata revision rev or
// later: partitions created by then are open here, and led here if this
// broker is their leader. It cannot wait forever for a revision the cache
// has: every samsa write lies under the watched prefix, so the cache
// publishes it as changed content (waking run), and etcd never sends a
// progress notification past an event it has not yet delivered.
func (m *partitionManager) waitReconciled(ctx context.Context, rev int64) error {
	for {
		m.reconciledMu.Lock()
		ch := m.reconciledCh
		m.reconciledMu.Unlock()
		if v := m.view.Load(); v != nil && v.Revision >= rev {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// reconcile opens, reconfigures, promotes and removes local replicas so they
// match the snapshot.
func (m *partitionManager) reconcile(s *coord.Snapshot) {
	self := m.b.cfg.NodeID
	want := map[topicPartition]bool{}
	type opening struct {
		tp       topicPartition
		id       meta.TopicID
		settings topicSettings
	}
	var toOpen []opening
	settingsOf := make(map[string]topicSettings, len(s.Topics))
	for name, vt := range s.Topics {
		t := vt.Topic
		settings := resolveTopicSettings(t.Configs, m.b.cfg.TopicDefaults)
		settingsOf[name] = settings
		for i, replicas := range t.Partitions {
			if !slices.Contains(replicas, self) {
				continue
			}
			tp := topicPartition{name, int32(i)}
			want[tp] = true
			lp := m.get(name, int32(i))
			if lp != nil && lp.topicID != t.ID {
				// Same name, new incarnation: the old log must go.
				m.remove(tp, lp)
				lp = nil
			}
			if lp == nil {
				toOpen = append(toOpen, opening{tp, t.ID, settings})
			}
		}
	}
	// Opening a log syncs a few files (partition.metadata, the first
	// segment, the directory): several at once, so that a topic of
	// thousands of partitions is not opened one fsync after another.
	inParallel(len(toOpen), maxParallelSyncs, func(i int) {
		o := toOpen[i]
		if _, err := m.open(o.tp, o.id, o.settings); err != nil {
			m.b.logger.Error("cannot open partition", "topic", o.tp.topic, "partition", o.tp.partition, "err", err)
		}
	})
	for name, vt := range s.Topics {
		t := vt.Topic
		settings := settingsOf[name]
		states := s.Partitions[name]
		for i, replicas := range t.Partitions {
			if !slices.Contains(replicas, self) {
				continue
			}
			tp := topicPartition{name, int32(i)}
			lp := m.get(name, int32(i))
			if lp == nil {
				continue // it failed to open
			}
			if *lp.settings.Load() != settings {
				lp.Log().SetConfig(m.logConfig(settings))
				lp.settings.Store(&settings)
			}
			if i < len(states) && states[i].Exists() {
				m.applyState(s, tp, lp, replicas, settings, states[i].PartitionState)
			}
		}
	}
	m.mu.RLock()
	var gone []topicPartition
	for tp := range m.parts {
		if !want[tp] {
			gone = append(gone, tp)
		}
	}
	m.mu.RUnlock()
	for _, tp := range gone {
		m.remove(tp, m.get(tp.topic, tp.partition))
	}
}

// applyState gives a local replica the role its stored state says: leader,
// or follower of the leader (fetching from it), or follower of nobody while
// the partition is offline. A broker recovering from an unclean shutdown
// leads nothing (recovery.go): where the state still names it leader, it
// follows nobody until the controller has moved the leadership.
func (m *partitionManager) applyState(s *coord.Snapshot, tp topicPartition, lp *localPartition, replicas []int32, settings topicSettings, st meta.PartitionState) {
	self := m.b.cfg.NodeID
	if st.Leader == self && m.b.recoveringIn(s) {
		st.Leader = meta.NoLeader
	}
	var err error
	switch {
	case st.Leader == self:
		m.fetchers.unfollow(tp)
		err = lp.BecomeLeader(st.LeaderEpoch, st.PartitionEpoch, st.ISR, replica.LeaderConfig{
			Replicas:          replicas,
			MinInsyncReplicas: settings.minInsyncReplicas,
			ReplicaLagTimeMax: m.b.cfg.ReplicaLagTimeMax,
		})
	default:
		err = lp.BecomeFollower(st.LeaderEpoch, st.Leader)
		if addr, live := brokerAddr(s, st.Leader); live && err == nil {
			m.fetchers.follow(tp, lp, st.Leader, addr)
		} else {
			m.fetchers.unfollow(tp)
		}
	}
	if err != nil {
		m.b.logger.Error("cannot take the partition's role", "topic", tp.topic, "partition", tp.partition,
			"leader", st.Leader, "epoch", st.LeaderEpoch, "err", err)
	}
	m.b.groupRoleChanged(s, tp, lp, err == nil && st.Leader == self, st.LeaderEpoch)
	m.b.txnRoleChanged(s, tp, lp, err == nil && st.Leader == self, st.LeaderEpoch)
}

// logConfig converts topic settings to the log's configuration.
func (m *partitionManager) logConfig(s topicSettings) klog.Config {
	c := klog.DefaultConfig()
	c.SegmentBytes = s.segmentBytes
	c.SegmentMs = s.segmentMs
	c.SegmentIndexBytes = s.segmentIndexBytes
	c.IndexIntervalBytes = s.indexInterval
	c.RetentionBytes, c.RetentionMs = s.retentionBytes, s.retentionMs
	if !s.deleteOld {
		c.RetentionBytes, c.RetentionMs = -1, -1
	}
	c.FlushMessages = s.flushMessages
	c.FlushMs = s.flushMs
	c.ProducerIDExpirationMs = m.b.cfg.ProducerIDExpiration.Milliseconds()
	c.Logger = m.b.logger
	if m.b.cfg.Observer != nil {
		c.OnFlush = m.b.cfg.Observer.LogFlushed
	}
	if m.b.cfg.LogFS != nil {
		c.FS = m.b.cfg.LogFS
	}
	return c
}

func (m *partitionManager) open(tp topicPartition, id meta.TopicID, settings topicSettings) (*localPartition, error) {
	dir := m.dir(tp)
	if old := readTopicID(dir); old != id && holdsLog(dir) {
		// Another incarnation's log, whose removal failed (perhaps
		// halfway, its partition.metadata gone first): never serve its
		// records as this one's. A directory this incarnation made has
		// its id before any segment.
		m.b.logger.Warn("removing the log of a deleted incarnation", "topic", tp.topic, "partition", tp.partition, "id", old)
		if err := m.fs().RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if readTopicID(dir) != id {
		if err := writeTopicID(dir, id); err != nil {
			return nil, err
		}
	}
	l, err := klog.Open(dir, m.logConfig(settings))
	if err != nil {
		return nil, err
	}
	lp := &localPartition{Partition: replica.New(tp.topic, tp.partition, m.b.cfg.NodeID, l, m.takeCheckpointed(tp, id)), topicID: id}
	lp.settings.Store(&settings)
	m.mu.Lock()
	m.parts[tp] = lp
	m.mu.Unlock()
	return lp, nil
}

// remove closes a replica and deletes its log (its partition no longer
// lives here).
func (m *partitionManager) remove(tp topicPartition, lp *localPartition) {
	m.mu.Lock()
	if m.parts[tp] == lp {
		delete(m.parts, tp)
	}
	m.mu.Unlock()
	if lp == nil {
		return
	}
	if tp.topic == group.OffsetsTopic {
		m.b.groups.Resigned(tp.partition, lp.LeaderEpoch())
	}
	if tp.topic == txn.StateTopic {
		m.b.txns.Resigned(tp.partition, lp.LeaderEpoch())
	}
	m.fetchers.unfollow(tp)
	// The directory is renamed at once and removed in the background, so
	// a large log neither delays the view (reconcile publishes it only
	// when done) nor keeps a re-created partition from its directory.
	tomb := m.tomb(tp)
	if err := lp.Retire(tomb); err != nil {
		// Closed, not renamed: remove it here, so that a re-created
		// partition never finds the old records in its directory.
		m.b.logger.Warn("cannot rename a deleted partition's log; removing it in place", "topic", tp.topic, "partition", tp.partition, "err", err)
		if err := m.fs().RemoveAll(m.dir(tp)); err != nil {
			m.b.logger.Error("cannot delete partition log", "topic", tp.topic, "partition", tp.partition, "err", err)
		}
		return
	}
	m.removeLater(tomb)
}

// removeWait bounds how long Close waits for deleted logs to be removed.
const removeWait = 10 * time.Second

// tombMark marks the name of a deleted partition's directory, renamed
// before its removal: "~" is in no topic name, so it never parses as a
// partition directory.
const tombMark = "~deleted-"

// tombNameMax bounds the partition directory's share of a tomb's name, so
// the name stays within the file system's 255 bytes whatever the topic's
// (249 characters at most); the time and sequence number keep it unique.
const tombNameMax = 200

// tomb is the name a deleted partition's directory is renamed to.
func (m *partitionManager) tomb(tp topicPartition) string {
	base := filepath.Base(m.dir(tp))
	if len(base) > tombNameMax {
		base = base[:tombNameMax]
	}
	return filepath.Join(m.b.cfg.logDir(), base+tombMark+strconv.FormatInt(time.Now().UnixNano(), 10)+"-"+strconv.FormatUint(m.tombSeq.Add(1), 10))
}

// removeLater removes a retired directory in the background.
func (m *partitionManager) removeLater(dir string) {
	m.removing.Go(func() {
		if err := m.fs().RemoveAll(dir); err != nil {
			m.b.logger.Error("cannot delete a deleted partition's log", "dir", dir, "err", err)
		}
	})
}

// fs is the file system the logs live on.
func (m *partitionManager) fs() klog.FS {
	if m.b.cfg.LogFS != nil {
		return m.b.cfg.LogFS
	}
	return klog.OSFS{}
}

// all returns the open replicas.
func (m *partitionManager) all() []*localPartition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*localPartition, 0, len(m.parts))
	for _, lp := range m.parts {
		out = append(out, lp)
	}
	return out
}

// housekeepingTick is how often partitions are checked for a due flush or a
// failed log; retention runs every log.retention.check.interval.ms.
const housekeepingTick = 100 * time.Millisecond

// runHousekeeping shrinks ISRs, checkpoints high watermarks, flushes logs
// with an unflushed tail that is due, stops the broker on a failed log and
// enforces retention. Compaction, which can take long, runs on its own
// goroutine (runCleaner), so it never delays an ISR shrink or a flush.
func (m *partitionManager) runHousekeeping(ctx context.Context) {
	tick := time.NewTicker(housekeepingTick)
	defer tick.Stop()
	lastRetention, lastCheckpoint := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			retention := now.Sub(lastRetention) >= m.b.cfg.RetentionCheckInterval
			if retention {
				lastRetention = now
			}
			checkpoint := now.Sub(lastCheckpoint) >= m.b.cfg.HighWatermarkCheckpointInterval
			if checkpoint {
				lastCheckpoint = now
			}
			m.housekeepRound(now, checkpoint, retention)
		}
	}
}

// housekeepRound is one housekeeping round: it checks every replica's ISR,
// runs housekeep for those that have I/O to do, several at once so that
// their fsyncs overlap (maxParallelSyncs), and with checkpoint writes the
// high watermark checkpoint.
func (m *partitionManager) housekeepRound(now time.Time, checkpoint, retention bool) {
	var due []*localPartition
	for _, lp := range m.all() {
		if lp.MaybeShrinkISR(now) {
			m.b.isr.propose(lp)
		}
		if retention || lp.Log().NeedsFlush() || lp.Log().Err() != nil {
			due = append(due, lp)
		}
	}
	inParallel(len(due), maxParallelSyncs, func(i int) { m.housekeep(due[i], retention) })
	if checkpoint {
		if err := m.checkpointHighWatermarks(); err != nil {
			m.b.logger.Warn("high watermark checkpoint failed", "err", err)
		}
	}
}

// housekeep is the I/O of one housekeeping round of one replica: a due
// flush, a failed log, retention.
func (m *partitionManager) housekeep(lp *localPartition, retention bool) {
	// In page-cache mode when flush.messages or flush.ms say so; in fsync
	// mode whenever a tail is unflushed (left by a produce whose
	// connection closed before its flush, or appended just before the
	// replica stopped leading), which would otherwise pin the high
	// watermark below it and keep a new leader from serving consumers.
	if lp.Log().NeedsFlush() {
		if err := lp.Flush(); err != nil && !errors.Is(err, klog.ErrClosed) {
			m.b.logger.Error("flush failed", "topic", lp.Topic, "partition", lp.Index, "err", err)
		}
	}
	if err := lp.Log().Err(); err != nil {
		m.b.logFailed(lp, err)
	}
	if retention {
		if n, err := lp.Log().EnforceRetention(); err != nil && !errors.Is(err, klog.ErrClosed) {
			m.b.logger.Error("retention failed", "topic", lp.Topic, "partition", lp.Index, "err", err)
		} else if n > 0 {
			m.b.logger.Info("retention deleted segments", "topic", lp.Topic, "partition", lp.Index, "segments", n)
		}
	}
}

// runCleaner compacts the replicas of compacted topics (maybeCompact), as
// Kafka's log cleaner thread does, beside the housekeeping goroutine.
func (m *partitionManager) runCleaner(ctx context.Context) {
	tick := time.NewTicker(housekeepingTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, lp := range m.all() {
				if ctx.Err() != nil {
					return
				}
				m.maybeCompact(lp, time.Now())
			}
		}
	}
}

// compactionRecheck is how often a partition whose closed segments did not
// change is compacted anyway (tombstones age past delete.retention.ms; a
// shorter delete.retention.ms rechecks sooner).
const compactionRecheck = time.Hour

// maybeCompact compacts a compacted topic's replica below its high
// watermark when a segment has closed since its last compaction (or an
// hour has passed), at most every log.cleaner.backoff.ms, like Kafka's log
// cleaner. Each replica compacts its own
// log: replicas agree on the latest value of every key below the high
// watermark, not on bytes.
func (m *partitionManager) maybeCompact(lp *localPartition, now time.Time) {
	st := lp.settings.Load()
	l := lp.Log()
	if !st.compact || now.Sub(lp.compactedAt) < m.b.cfg.CleanerBackoff {
		return
	}
	recheck := compactionRecheck
	if st.deleteRetentionMs > 0 {
		recheck = min(recheck, time.Duration(st.deleteRetentionMs)*time.Millisecond)
	}
	if n := l.NumSegments(); n < 2 || n == lp.compactedSegments && now.Sub(lp.compactedAt) < recheck {
		return
	}
	stats, err := l.Compact(klog.CompactOptions{UpperBound: lp.LastStableOffset(), DeleteRetentionMs: st.deleteRetentionMs, Decompress: records.DecompressRecords})
	lp.compactedAt = now
	if !stats.Interrupted {
		// An interrupted run (a truncation cut into its range) is tried
		// again after log.cleaner.backoff.ms, not only once a segment
		// rolls.
		lp.compactedSegments = l.NumSegments()
	}
	switch {
	case err != nil && !errors.Is(err, klog.ErrClosed):
		m.b.logger.Error("compaction failed", "topic", lp.Topic, "partition", lp.Index, "err", err)
	case stats.SegmentsCleaned > 0:
		m.b.logger.Info("compacted", "topic", lp.Topic, "partition", lp.Index, "segments", stats.SegmentsCleaned,
			"bytes_before", stats.BytesBefore, "bytes_after", stats.BytesAfter,
			"records_removed", stats.RecordsRemoved, "tombstones_removed", stats.TombstonesRemoved)
	}
}

// closeAll closes every replica, flushing its log, and waits up to
// removeWait for the removal of deleted ones (what is left goes at the next
// start).
// stopCompactions makes every running compaction stop at its next check:
// the broker is closing (a session loss, under Run, before it registers
// again), and must not wait for a long compaction to run to its end.
func (m *partitionManager) stopCompactions() {
	for _, lp := range m.all() {
		lp.Log().StopCompaction()
	}
}

func (m *partitionManager) closeAll() error {
	defer func() {
		done := make(chan struct{})
		go func() { m.removing.Wait(); close(done) }()
		t := time.NewTimer(removeWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			m.b.logger.Warn("stopping before every deleted partition's log is removed; the rest goes at the next start")
		}
	}()
	m.fetchers.closeAll()
	if err := m.checkpointHighWatermarks(); err != nil {
		m.b.logger.Warn("high watermark checkpoint at shutdown failed", "err", err)
	}
	m.mu.Lock()
	parts := m.parts
	m.parts = map[topicPartition]*localPartition{}
	m.mu.Unlock()
	var errs []error
	for _, lp := range parts {
		// A failed log closes without an error (it skips the flush),
		// but must count as not closed cleanly: no clean-shutdown marker.
		if err := lp.Log().Err(); err != nil {
			errs = append(errs, fmt.Errorf("broker: log of %s-%d: %w", lp.Topic, lp.Index, err))
		}
		errs = append(errs, lp.Close(false))
	}
	return errors.Join(errs...)
}
