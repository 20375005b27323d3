package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// OffsetsTopic is the internal topic that holds groups and offsets.
const OffsetsTopic = "__consumer_offsets"

// Store is one __consumer_offsets partition led here, as the coordinator
// uses it. The broker implements it over its local leader replica.
type Store interface {
	// Append appends recs in one batch as leader in leader epoch epoch and
	// returns the offset just past them, without waiting for them to be
	// committed. It refuses (ErrNotLeader) unless the partition is led
	// here in epoch, and may refuse for other reasons (too few in-sync
	// replicas); a refused Append wrote nothing. The coordinator calls it
	// holding its lock, so that its changes reach the log in the order it
	// makes them in memory: it must not wait for replication, an fsync or
	// the network.
	Append(epoch int32, recs []records.KV) (end int64, err error)
	// WaitCommitted returns nil once every offset below end is committed
	// (acks=all) by this broker as leader in epoch, the epoch of the
	// Append: once the partition was led elsewhere, even briefly, the
	// records may have been truncated, and it fails (ErrNotLeader). It
	// returns early with ctx's error.
	WaitCommitted(ctx context.Context, epoch int32, end int64) error
	// AppendTxn is Append for records of producer pid's transaction at
	// producerEpoch (TxnOffsetCommit): one transactional batch. token is
	// the verification the broker made with the transaction coordinator
	// (0 if the transaction was open on the partition at that epoch): the
	// append fails with ErrTxnState if the producer's transaction ended
	// on the partition since (a marker), and with ErrProducerFenced if
	// the partition knows a newer epoch of the producer.
	AppendTxn(epoch int32, pid int64, producerEpoch int16, token uint64, recs []records.KV) (end int64, err error)
	// Load calls fn with every record of the partition, in offset order,
	// from its start to its end as of the call, and returns that end. The
	// records below it need not be committed yet.
	Load(ctx context.Context, fn func(r Record) error) (end int64, err error)
	// MaxBatchBytes is the size of the largest batch Append accepts (the
	// partition's max.message.bytes); the coordinator refuses larger
	// writes before it builds them.
	MaxBatchBytes() int
}

// Record is one record of a __consumer_offsets partition, as Load replays
// it.
type Record struct {
	Key, Value []byte
	// End is an offset past the record (the end of its batch) that is
	// committed once the record is.
	End int64
	// ProducerID is the producer whose transaction the record belongs to
	// (a transactional offset commit), -1 if none.
	ProducerID int64
	// Marker: the record ends ProducerID's transaction (a control record;
	// Key and Value are nil), committing it if Commit.
	Marker, Commit bool
}

// ErrNotLeader is what a Store returns when the partition is no longer led
// here.
var ErrNotLeader = errors.New("group: offsets partition not led here")

// ErrTxnState and ErrProducerFenced are what a Store's AppendTxn returns
// for a producer whose transaction ended on the partition after it was
// verified (INVALID_TXN_STATE) and for an epoch older than the one the
// partition knows (INVALID_PRODUCER_EPOCH).
var (
	ErrTxnState       = errors.New("group: transaction not ongoing on the offsets partition")
	ErrProducerFenced = errors.New("group: producer epoch fenced on the offsets partition")
)

// Config is the coordinator's configuration (Kafka's group.* and
// offsets.* broker settings).
type Config struct {
	// Partitions is offsets.topic.num.partitions.
	Partitions int32
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes: how long an empty
	// group's offsets outlive it.
	OffsetsRetention time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes.
	MaxMetadataBytes int
	// CommitTimeout is offsets.commit.timeout.ms: how long a write may
	// wait to be committed.
	CommitTimeout time.Duration
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Logger receives load and write failures; slog.Default if nil.
	Logger *slog.Logger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		Partitions:            50,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		InitialRebalanceDelay: 3 * time.Second,
		OffsetsRetention:      7 * 24 * time.Hour,
		MaxMetadataBytes:      4096,
		CommitTimeout:         5 * time.Second,
	}
}

// shard is one __consumer_offsets partition led here, in one leader
// epoch. Its fields are guarded by the coordinator's lock.
type shard struct {
	partition int32
	// epoch is the leader epoch it coordinates in; every write is
	// appended and acknowledged only in it.
	epoch   int32
	store   Store
	loading bool
	groups  map[string]*group
	// committed is an end below which every record is known to be
	// committed in epoch (so it stays committed as long as the shard
	// exists).
	committed int64
	// ends is, per group id, the end of the group's latest append (kept
	// for deleted groups too), or after a load of the latest record of the
	// group loaded, until it is known to be committed: an OffsetFetch
	// answers only once everything it read is committed, whatever the
	// outcome of the write that appended it, and waits for no other
	// group's records (after a failover the loaded tail may stay
	// uncommitted until the ISR grows back).
	ends map[string]int64
	// lateMarkers are the markers written since the shard's current load
	// attempt started (an attempt reads the log up to its end at its
	// start, so it holds every marker written before).
	lateMarkers []lateMarker
	// warnAt and warnsSuppressed rate-limit the shard's failure warnings.
	warnAt          time.Time
	warnsSuppressed int
	// ctx is done once the shard is dropped: its load and the waits of
	// its writes end.
	ctx    context.Context
	cancel context.CancelFunc
}

// Coordinator coordinates the groups of the __consumer_offsets partitions
// led by this broker. All its methods are safe for concurrent use; the
// blocking ones (Join, Sync and the writes) return when ctx is done.
type Coordinator struct {
	cfg    Config
	logger *slog.Logger

	// bg counts the shards' loads and the goroutines awaiting writes'
	// commits; Close waits for them.
	bg sync.WaitGroup

	mu     sync.Mutex
	shards map[int32]*shard
	// closed is set by Close: Elected starts nothing after it.
	closed bool
	// inFlightWrites counts the writes whose outcome is not known yet.
	inFlightWrites int
	// partitions is the partition count of __consumer_offsets (Elected
	// learns the real one; cfg.Partitions until then).
	partitions int32
}

// New returns a coordinator that leads nothing yet.
func New(cfg Config) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{cfg: cfg, logger: cfg.Logger, shards: map[int32]*shard{}, partitions: cfg.Partitions}
}

// PartitionFor is the __consumer_offsets partition of a group among n:
// Kafka's abs(groupId.hashCode()) % n, with Java's String.hashCode.
func PartitionFor(groupID string, n int32) int32 {
	var h int32
	for _, r := range groupID {
		if r >= 0x10000 { // a surrogate pair in Java's UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		return 0 // Kafka's Utils.abs maps MIN_VALUE to 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// Elected makes this broker the coordinator of partition's groups in
// leader epoch epoch (of partitions in all): it replays the partition
// (store.Load) in the background and serves its groups once that is done.
func (c *Coordinator) Elected(partition, epoch, partitions int32, store Store) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.partitions = partitions
	if sh, ok := c.shards[partition]; ok {
		if sh.epoch >= epoch {
			c.mu.Unlock()
			return
		}
		c.dropLocked(sh)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sh := &shard{partition: partition, epoch: epoch, store: store, loading: true, groups: map[string]*group{},
		ends: map[string]int64{}, ctx: ctx, cancel: cancel}
	c.shards[partition] = sh
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		c.load(ctx, sh)
	}()
}

// Resigned ends this broker's coordination of partition's groups (it no
// longer leads the partition as of epoch).
func (c *Coordinator) Resigned(partition, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sh, ok := c.shards[partition]; ok && sh.epoch <= epoch {
		c.dropLocked(sh)
	}
}

// Close resigns everything and waits for the loads and the writes in
// flight to end. The coordinator leads nothing after it.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	for _, sh := range c.shards {
		c.dropLocked(sh)
	}
	c.mu.Unlock()
	c.bg.Wait()
}

// dropLocked forgets a shard; its waiting requests get NOT_COORDINATOR.
func (c *Coordinator) dropLocked(sh *shard) {
	sh.cancel()
	for _, g := range sh.groups {
		for _, m := range g.members {
			m.answerJoin(joinResult{code: kerr.NotCoordinator.Code, memberID: m.id, generation: -1})
			m.answerSync(syncResult{code: kerr.NotCoordinator.Code})
		}
	}
	delete(c.shards, sh.partition)
}

// load replays a shard's partition and then serves it.
func (c *Coordinator) load(ctx context.Context, sh *shard) {
	start := c.cfg.Now()
	for backoff := loadRetryBackoff; !c.loadOnce(ctx, sh, start); backoff = min(2*backoff, maxLoadRetryBackoff) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// loadRetryBackoff and maxLoadRetryBackoff pace the loads of a shard
// after a failed one.
const (
	loadRetryBackoff    = 100 * time.Millisecond
	maxLoadRetryBackoff = 5 * time.Second
)

// loadOnce replays the shard's partition once. It reports false when the
// replay failed and must be tried again: the shard stays loading (its
// groups get COORDINATOR_LOAD_IN_PROGRESS), since nothing else would load
// it while this broker keeps leading the partition in the same epoch.
func (c *Coordinator) loadOnce(ctx context.Context, sh *shard, start time.Time) bool {
	// Markers written so far are below the log end that Load starts
	// from: this attempt replays them, so a shard whose loads keep
	// failing holds only the markers of one attempt.
	c.mu.Lock()
	sh.lateMarkers = nil
	c.mu.Unlock()
	groups := map[string]*group{}
	get := func(id string) *group {
		g, ok := groups[id]
		if !ok {
			g = newGroup(id, start)
			groups[id] = g
		}
		return g
	}
	// stored tells whether a group's latest metadata record is a value
	// (not a tombstone, not missing).
	stored := map[string]bool{}
	// ends is the end of each group's latest record (deleted groups too).
	ends := map[string]int64{}
	n := 0
	// pending: the transactional offset commits not yet ended by a marker,
	// by producer.
	pending := map[int64][]pendingCommit{}
	end, err := sh.store.Load(ctx, func(r Record) error {
		n++
		key, value, recEnd := r.Key, r.Value, r.End
		if r.Marker {
			for _, pc := range pending[r.ProducerID] {
				g := groups[pc.group]
				if g == nil {
					continue
				}
				delete(g.pendingTxn[r.ProducerID], pc.tp)
				if len(g.pendingTxn[r.ProducerID]) == 0 {
					delete(g.pendingTxn, r.ProducerID)
				}
				if r.Commit {
					if cur, ok := g.offsets[pc.tp]; !ok || cur.end < pc.o.end {
						g.offsets[pc.tp] = pc.o
					}
				}
			}
			delete(pending, r.ProducerID)
			return nil
		}
		d, err := decodeRecord(key, value)
		if err != nil {
			c.logger.Warn("skipping a record of "+OffsetsTopic, "partition", sh.partition, "err", err)
			return nil
		}
		ends[d.group] = recEnd
		if d.isOffset {
			tp := topicPartition{d.topic, d.partition}
			if d.offset == nil {
				if g, ok := groups[d.group]; ok {
					delete(g.offsets, tp)
					g.dropPendingTxn(tp)
				}
				return nil
			}
			o := *d.offset
			o.end = recEnd
			if r.ProducerID >= 0 {
				g := get(d.group)
				g.addPendingTxn(r.ProducerID, tp, o)
				pending[r.ProducerID] = append(pending[r.ProducerID], pendingCommit{d.group, tp, o})
				return nil
			}
			get(d.group).offsets[tp] = o
			return nil
		}
		stored[d.group] = d.meta != nil
		if d.meta == nil {
			if g, ok := groups[d.group]; ok {
				g.members, g.static = map[string]*member{}, map[string]string{}
				g.generation, g.protocolType, g.protocol, g.leader = 0, "", "", ""
				if len(g.offsets) == 0 {
					delete(groups, d.group)
				}
			}
			return nil
		}
		// Writes of one group's metadata may land out of order (an
		// emptied group's is written in the background): the highest
		// generation wins.
		if g := get(d.group); d.meta.Generation >= g.generation {
			restoreGroup(g, d.meta, start)
		}
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shards[sh.partition] != sh {
		return true // resigned meanwhile
	}
	if err != nil {
		if ctx.Err() == nil {
			c.logger.Error("loading groups failed; trying again", "partition", sh.partition, "epoch", sh.epoch, "err", err)
		}
		return false
	}
	now := c.cfg.Now()
	for id, g := range groups {
		if !stored[id] && len(g.offsets) == 0 && len(g.pendingTxn) == 0 {
			// Deleted (its offsets' tombstones followed the group's).
			delete(groups, id)
			continue
		}
		g.stored = stored[id]
		if len(g.members) > 0 {
			g.setState(stateStable, now)
			for _, m := range g.members {
				m.deadline = now.Add(m.sessionTimeout)
			}
		}
	}
	sh.groups, sh.loading = groups, false
	for _, m := range sh.lateMarkers {
		if m.offset >= end {
			c.completeTxnLocked(sh, m.pid, m.commit, m.offset)
		}
	}
	sh.lateMarkers = nil
	for id, e := range ends {
		sh.ends[id] = max(sh.ends[id], e)
	}
	c.logger.Info("loaded groups", "partition", sh.partition, "epoch", sh.epoch, "records", n, "end", end, "groups", len(groups),
		"took", now.Sub(start).Round(time.Millisecond))
	return true
}

// restoreGroup sets g's membership from its stored metadata; members
// keep their join order.
func restoreGroup(g *group, v *kmsg.GroupMetadataValue, now time.Time) {
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	g.protocol, g.leader = "", ""
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	g.members, g.static = map[string]*member{}, map[string]string{}
	for i, vm := range v.Members {
		m := &member{
			id: vm.MemberID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(max(vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis)) * time.Millisecond,
			assignment:       vm.Assignment,
			joined:           now.Add(time.Duration(i)),
		}
		if g.protocol != "" {
			m.protocols = []protocol{{g.protocol, vm.Subscription}}
		}
		if vm.InstanceID != nil {
			m.instanceID = *vm.InstanceID
			g.static[m.instanceID] = m.id
		}
		g.members[m.id] = m
	}
	// An empty group's offsets expire counting from when it emptied.
	since := now
	if v.CurrentStateTimestamp > 0 {
		since = time.UnixMilli(v.CurrentStateTimestamp)
	}
	g.setState(stateEmpty, since)
}

// newMemberID returns a fresh member id: the client id (or instance id)
// and a random suffix, as Kafka forms them. A prefix too long for the id
// to fit its records (maxRecordString) is cut, at a character boundary.
func newMemberID(prefix string) string {
	if n := maxRecordString - 33; len(prefix) > n {
		for n > 0 && !utf8.RuneStart(prefix[n]) {
			n--
		}
		prefix = prefix[:n]
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// lookupLocked finds the shard of a group: NOT_COORDINATOR if its
// partition is not led here, COORDINATOR_LOAD_IN_PROGRESS while loading.
// The empty group id is INVALID_GROUP_ID unless emptyOK: Kafka's
// GroupCoordinatorService takes it as a group for DescribeGroups,
// DeleteGroups, OffsetFetch and OffsetCommit ("for backwards
// compatibility"), refusing it for the membership APIs and OffsetDelete.
func (c *Coordinator) lookupLocked(groupID string, emptyOK bool) (*shard, int16) {
	if groupID == "" && !emptyOK || len(groupID) > maxRecordString {
		// A longer id does not fit its records (see maxRecordString).
		return nil, kerr.InvalidGroupID.Code
	}
	sh, ok := c.shards[PartitionFor(groupID, c.partitions)]
	if !ok {
		return nil, kerr.NotCoordinator.Code
	}
	if sh.loading {
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return sh, 0
}

// Sizes of a write, estimated from the lengths of its parts before
// anything is allocated: an upper bound of records.Build's encoding.
const (
	// batchOverhead is a batch's header.
	batchOverhead = 61
	// recordOverhead bounds a record's length, attributes, deltas, key and
	// value lengths and header count.
	recordOverhead = 24
)

// change is one group's part of a write: records, and what memory does
// once they are in the leader's log.
type change struct {
	group string
	// size bounds the encoded size of the records; build makes them, only
	// once the change is known to fit in a batch.
	size  int
	build func() []records.KV
	// apply (if not nil) makes the change in memory, under the lock, once
	// the records are appended; a change that is not appended is not
	// applied.
	apply func()
	// done (if not nil) gets the outcome of an appended change, under the
	// lock: 0 once committed, or the code of the failure.
	done func(code int16)
}

// write is one or more appends to a shard's partition, made together
// under the lock, whose commit one goroutine awaits.
type write struct {
	// done is closed once the outcome is known; code is then 0 (committed)
	// or the error code Kafka's coordinator answers for the failure.
	done chan struct{}
	code int16
}

// appendLocked appends one change (see appendChangesLocked); code is
// nonzero if it was not appended.
func (c *Coordinator) appendLocked(sh *shard, ch change) (*write, int16) {
	w, codes := c.appendChangesLocked(sh, []change{ch}, nil)
	return w, codes[0]
}

// appendChangesLocked appends changes to sh's partition as leader in sh's
// epoch, packed in order into as few batches as the partition's largest
// batch allows, and applies each appended change to memory. The caller
// holds the lock across the appends and the changes, so the log and memory
// change in the same order. codes[i] is nonzero for a change that was not
// appended and not applied: RECORD_LIST_TOO_LARGE if it alone exceeds the
// largest batch, or the code of the refused append (which wrote nothing;
// the changes after it are not tried either). One goroutine then awaits
// the commit of everything appended and, holding the lock, calls each
// appended change's done and then onWrite (if not nil) with the outcome
// before it completes the returned write (nil if nothing was appended).
//
// A write that fails after its append (a timeout) may still be committed
// later, so the changes stay in memory as they are in the leader's log;
// an OffsetFetch reads them only once they are committed (fetchWait).
func (c *Coordinator) appendChangesLocked(sh *shard, changes []change, onWrite func(code int16)) (*write, []int16) {
	codes := make([]int16, len(changes))
	limit := sh.store.MaxBatchBytes()
	var appended []change
	var end int64
	for i := 0; i < len(changes); {
		if batchOverhead+changes[i].size > limit {
			codes[i] = kerr.RecordListTooLarge.Code
			i++
			continue
		}
		j, size := i, batchOverhead
		for j < len(changes) && size+changes[j].size <= limit {
			size += changes[j].size
			j++
		}
		var recs []records.KV
		for _, ch := range changes[i:j] {
			recs = append(recs, ch.build()...)
		}
		e, err := sh.store.Append(sh.epoch, recs)
		if err != nil {
			code := c.writeCode(sh, err)
			for k := i; k < len(changes); k++ {
				codes[k] = code
			}
			break
		}
		end = e
		for _, ch := range changes[i:j] {
			sh.ends[ch.group] = e // before apply, which may read it
			if ch.apply != nil {
				ch.apply()
			}
		}
		appended = append(appended, changes[i:j]...)
		i = j
	}
	if len(appended) == 0 {
		return nil, codes
	}
	return c.awaitLocked(sh, appended, end, onWrite), codes
}

// awaitLocked starts the goroutine that awaits the commit of the appended
// changes, which end at end (see appendChangesLocked).
func (c *Coordinator) awaitLocked(sh *shard, appended []change, end int64, onWrite func(code int16)) *write {
	w := &write{done: make(chan struct{})}
	c.inFlightWrites++
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(sh.ctx, c.cfg.CommitTimeout)
		err := sh.store.WaitCommitted(ctx, sh.epoch, end)
		cancel()
		c.mu.Lock()
		code := c.writeCode(sh, err)
		if code == 0 {
			sh.committed = max(sh.committed, end)
		}
		for _, ch := range appended {
			if e, ok := sh.ends[ch.group]; ok && e <= sh.committed {
				delete(sh.ends, ch.group)
			}
			if ch.done != nil {
				ch.done(code)
			}
		}
		if onWrite != nil {
			onWrite(code)
		}
		w.code = code
		c.inFlightWrites--
		c.mu.Unlock()
		close(w.done)
	}()
	return w
}

// writeCode maps a Store error to the error code Kafka's coordinator
// answers.
func (c *Coordinator) writeCode(sh *shard, err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotLeader), sh.ctx.Err() != nil:
		return kerr.NotCoordinator.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, ErrTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, ErrProducerFenced):
		return kerr.InvalidProducerEpoch.Code
	default:
		c.warnLocked(sh, "writing to "+OffsetsTopic+" failed", "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
}

// warnInterval is how often a shard logs the failures of its writes at
// most; the ones in between are counted in the next line.
const warnInterval = 10 * time.Second

// warnLocked logs a write failure of sh, at most once per warnInterval.
// The caller holds the lock.
func (c *Coordinator) warnLocked(sh *shard, msg string, args ...any) {
	now := time.Now()
	if now.Before(sh.warnAt) {
		sh.warnsSuppressed++
		return
	}
	if sh.warnsSuppressed > 0 {
		args = append(args, "suppressed since the last", sh.warnsSuppressed)
	}
	sh.warnAt, sh.warnsSuppressed = now.Add(warnInterval), 0
	c.logger.Warn(msg, append([]any{"partition", sh.partition}, args...)...)
}

// await returns the outcome of w, or REQUEST_TIMED_OUT if ctx is done
// first (the connection is closing).
func await(ctx context.Context, w *write) int16 {
	select {
	case <-w.done:
		return w.code
	case <-ctx.Done():
		return kerr.RequestTimedOut.Code
	}
}

// groupWriteCode maps the code of a failed group metadata write to what
// Kafka's coordinator answers JoinGroup and SyncGroup: a timed-out write is
// COORDINATOR_NOT_AVAILABLE (clients rediscover the coordinator and
// rejoin), as REQUEST_TIMED_OUT is not an error those requests may return
// (the Java consumer treats it as fatal); a group too large to write is
// UNKNOWN_SERVER_ERROR, as in Kafka.
func groupWriteCode(code int16) int16 {
	switch code {
	case kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.RecordListTooLarge.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// currentLocked reports whether sh still coordinates its partition.
func (c *Coordinator) currentLocked(sh *shard) bool { return c.shards[sh.partition] == sh }

// groupChange is the write of g's metadata, its membership as of now; onDone
// (if not nil) gets the outcome.
//
// Memory and the log agree on a group's membership once such a write is
// committed: until then (or if it failed or was refused) the group is
// marked dirty, and Tick writes a settled dirty group's metadata again
// until one write commits (see retryLocked).
//
// Every attempt counts in g.metaSeq, refused ones too (markDirtyLocked):
// only the outcome of the latest attempt says whether memory is in the
// log, so an earlier write that commits later clears no mark.
func (c *Coordinator) groupChange(sh *shard, g *group, onDone func(code int16)) change {
	var seq int64
	return change{
		group: g.id,
		size:  groupRecordSize(g),
		build: func() []records.KV { return []records.KV{{Key: groupKey(g.id), Value: groupValue(g)}} },
		apply: func() {
			g.metaSeq++
			seq = g.metaSeq
			g.metaWriting++
			g.stored = true
		},
		done: func(code int16) {
			g.metaWriting--
			if g.metaSeq == seq {
				g.metaDirty = code != 0
			}
			if onDone != nil {
				onDone(code)
			}
		},
	}
}

// markDirtyLocked records a refused write of g's metadata: memory may no
// longer be what the log holds, and no write in flight clears the mark.
func markDirtyLocked(g *group) {
	g.metaSeq++
	g.metaDirty = true
}

// writeGroupLocked appends g's metadata (see groupChange); if the append
// is refused, g is dirty.
func (c *Coordinator) writeGroupLocked(sh *shard, g *group, onDone func(code int16)) (*write, int16) {
	w, code := c.appendLocked(sh, c.groupChange(sh, g, onDone))
	if code != 0 {
		markDirtyLocked(g)
	}
	return w, code
}

// persistLocked writes g's metadata (after a rebalance emptied it, or a
// static replacement was undone); the writer waits for nothing, and a
// failed write is retried by Tick.
func (c *Coordinator) persistLocked(sh *shard, g *group) {
	logFailure := func(code int16) {
		if code != 0 {
			c.warnLocked(sh, "persisting group metadata failed", "group", g.id, "code", code)
		}
	}
	if _, code := c.writeGroupLocked(sh, g, logFailure); code != 0 {
		logFailure(code)
	}
}
