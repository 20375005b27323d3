package txn

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// StateTopic is the internal topic that holds transactions.
const StateTopic = "__transaction_state"

// State is a transaction's state; the values are Kafka's (and kmsg's
// TransactionState).
type State int8

// States.
const (
	StateEmpty             State = State(kmsg.TransactionStateEmpty)
	StateOngoing           State = State(kmsg.TransactionStateOngoing)
	StatePrepareCommit     State = State(kmsg.TransactionStatePrepareCommit)
	StatePrepareAbort      State = State(kmsg.TransactionStatePrepareAbort)
	StateCompleteCommit    State = State(kmsg.TransactionStateCompleteCommit)
	StateCompleteAbort     State = State(kmsg.TransactionStateCompleteAbort)
	StateDead              State = State(kmsg.TransactionStateDead)
	StatePrepareEpochFence State = State(kmsg.TransactionStatePrepareEpochFence)
)

func (s State) String() string { return kmsg.TransactionState(s).String() }

// Store is one __transaction_state partition led here, as the coordinator
// uses it; the broker implements it over its local leader replica (the
// same contract as the group coordinator's store).
type Store interface {
	// Append appends recs in one batch as leader in leader epoch epoch
	// and returns the offset just past them, without waiting for them to
	// be committed. It is called under the coordinator's lock: it must not
	// wait for replication, an fsync or the network.
	Append(epoch int32, recs []records.KV) (end int64, err error)
	// WaitCommitted returns nil once every offset below end is committed
	// by this broker as leader in epoch throughout; ErrNotLeader once the
	// partition was led elsewhere.
	WaitCommitted(ctx context.Context, epoch int32, end int64) error
	// Load calls fn with every record of the partition in offset order,
	// from its start to its end as of the call, and returns that end.
	Load(ctx context.Context, fn func(key, value []byte, end int64) error) (end int64, err error)
	// MaxBatchBytes is the size of the largest batch Append accepts (the
	// partition's max.message.bytes).
	MaxBatchBytes() int
}

// recordOverhead bounds the bytes a batch of one record adds to its key
// and value: the batch header (61) and the record's lengths, attributes
// and deltas.
const recordOverhead = 61 + 24

// ErrNotLeader is what a Store returns when the partition is no longer led
// here.
var ErrNotLeader = errors.New("txn: transaction state partition not led here")

// ProducerIDs hands out producer ids unique in the cluster.
type ProducerIDs interface {
	NextID(ctx context.Context) (int64, error)
}

// Marker is a transaction marker to write to a partition.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
}

// MarkerWriter writes transaction markers to partition leaders.
type MarkerWriter interface {
	// WriteMarkers writes m to each of parts, through their leaders, and
	// returns once each is written and committed there, or failed: the
	// error per partition (nil when written). A partition that no longer
	// exists gets ErrPartitionGone and is not retried; any other error is.
	WriteMarkers(ctx context.Context, m Marker, parts []TopicPartition) map[TopicPartition]error
}

// ErrPartitionGone: the partition of a marker was deleted; the marker is
// dropped, as Kafka drops markers for deleted topics.
var ErrPartitionGone = errors.New("txn: partition no longer exists")

// ErrMarkerFenced: the leader refused the marker for a newer producer
// epoch or coordinator epoch than its own: a newer coordinator owns the
// transaction, and this one stops writing its markers.
var ErrMarkerFenced = errors.New("txn: marker fenced by a newer producer or coordinator epoch")

// Config is the coordinator's configuration (Kafka's transaction.* broker
// settings).
type Config struct {
	// Partitions is transaction.state.log.num.partitions.
	Partitions int32
	// MaxTimeout is transaction.max.timeout.ms: the largest
	// transaction.timeout.ms a producer may ask for.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: how long an idle
	// transactional id (no transaction open) is kept.
	IDExpiration time.Duration
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.
	// interval.ms: how often timed-out transactions are looked for.
	AbortInterval time.Duration
	// RemoveInterval is transaction.remove.expired.transaction.cleanup.
	// interval.ms: how often expired transactional ids are looked for.
	RemoveInterval time.Duration
	// CommitTimeout bounds how long a request waits for its write to be
	// committed (Kafka's transaction.state.log acks=all wait).
	CommitTimeout time.Duration
	// MarkerRetryBackoff is the pause before markers that failed are
	// written again.
	MarkerRetryBackoff time.Duration
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Logger; slog.Default if nil.
	Logger *slog.Logger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		Partitions:         50,
		MaxTimeout:         15 * time.Minute,
		IDExpiration:       7 * 24 * time.Hour,
		AbortInterval:      10 * time.Second,
		RemoveInterval:     time.Hour,
		CommitTimeout:      5 * time.Second,
		MarkerRetryBackoff: 100 * time.Millisecond,
	}
}

// txnMeta is one transactional id's state, as stored (see records.go) and,
// for lastEpoch and end, as known in memory only.
type txnMeta struct {
	id string
	// producerID and epoch are the producer's current ones;
	// prevProducerID is the id before the last change of id (epoch
	// exhaustion), -1 if none.
	producerID, prevProducerID int64
	epoch                      int16
	// lastEpoch is the epoch before the last bump by InitProducerId (-1
	// if unknown: after a load, as in Kafka): a retried InitProducerId
	// (KIP-360) names it.
	lastEpoch  int16
	timeoutMs  int32
	state      State
	partitions map[TopicPartition]struct{}
	// start is when the transaction began (Ongoing), lastUpdate when the
	// state last changed; milliseconds.
	start, lastUpdate int64
	// end is the end of the latest record written for the id: an answer
	// waits until it is committed.
	end int64
	// finishing: the markers of its PrepareCommit/PrepareAbort are being
	// written.
	finishing bool
	// tv2: the client uses transactions v2 (KIP-890 part 2: an epoch bump
	// at every transaction end), as its last AddPartitions or EndTxn said.
	tv2 bool
	// nextProducerID is the producer id a v2 transaction ending at the
	// last epoch moves to once complete (its markers carry the old id at
	// epoch 32767); -1 if none.
	nextProducerID int64
}

func (t *txnMeta) clone() *txnMeta {
	c := *t
	c.partitions = make(map[TopicPartition]struct{}, len(t.partitions))
	for tp := range t.partitions {
		c.partitions[tp] = struct{}{}
	}
	return &c
}

// shard is one __transaction_state partition led here, in one leader
// epoch, which is the coordinator epoch of its markers. Guarded by the
// coordinator's lock.
type shard struct {
	partition int32
	epoch     int32
	store     Store
	loading   bool
	txns      map[string]*txnMeta
	ctx       context.Context
	cancel    context.CancelFunc
}

// Coordinator is the transaction coordinator of the __transaction_state
// partitions led by this broker. Its methods are safe for concurrent use.
type Coordinator struct {
	cfg     Config
	logger  *slog.Logger
	ids     ProducerIDs
	markers MarkerWriter

	// bg counts the goroutines it started (loads, marker writers); Close
	// waits for them.
	bg sync.WaitGroup

	mu     sync.Mutex
	shards map[int32]*shard
	// closed is set by Close: Elected starts nothing after it.
	closed     bool
	partitions int32
	lastAbort  time.Time
	lastRemove time.Time
}

// New returns a coordinator that leads nothing yet.
func New(cfg Config, ids ProducerIDs, markers MarkerWriter) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{cfg: cfg, logger: cfg.Logger, ids: ids, markers: markers,
		shards: map[int32]*shard{}, partitions: cfg.Partitions}
}

// PartitionFor is the __transaction_state partition of a transactional id
// among n: Kafka's abs(transactionalId.hashCode()) % n.
func PartitionFor(id string, n int32) int32 {
	var h int32
	for _, r := range id {
		if r >= 0x10000 { // a surrogate pair in Java's UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == math.MinInt32 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// Elected makes this broker the coordinator of partition's transactions in
// leader epoch epoch (of partitions in all): the partition is replayed in
// the background; its transactions are served once that is done, and the
// markers of those found prepared are written again.
func (c *Coordinator) Elected(partition, epoch, partitions int32, store Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.partitions = partitions
	if sh, ok := c.shards[partition]; ok {
		if sh.epoch >= epoch {
			return
		}
		c.dropLocked(sh)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sh := &shard{partition: partition, epoch: epoch, store: store, loading: true, txns: map[string]*txnMeta{}, ctx: ctx, cancel: cancel}
	c.shards[partition] = sh
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		c.load(sh)
	}()
}

// Resigned ends this broker's coordination of partition (it no longer
// leads it as of epoch).
func (c *Coordinator) Resigned(partition, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sh, ok := c.shards[partition]; ok && sh.epoch <= epoch {
		c.dropLocked(sh)
	}
}

// Close resigns everything and waits for its goroutines. The
// coordinator leads nothing after it.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	for _, sh := range c.shards {
		c.dropLocked(sh)
	}
	c.mu.Unlock()
	c.bg.Wait()
}

func (c *Coordinator) dropLocked(sh *shard) {
	sh.cancel()
	delete(c.shards, sh.partition)
}

// load replays a shard's partition, then serves it and resumes the
// markers of prepared transactions.
func (c *Coordinator) load(sh *shard) {
	start := c.cfg.Now()
	for backoff := loadRetryBackoff; !c.loadOnce(sh, start); backoff = min(2*backoff, maxLoadRetryBackoff) {
		select {
		case <-sh.ctx.Done():
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
// transactional ids get COORDINATOR_LOAD_IN_PROGRESS), since nothing else
// would load it while this broker keeps leading the partition in the
// same epoch, and its prepared transactions would never be finished nor
// its open ones timed out.
func (c *Coordinator) loadOnce(sh *shard, start time.Time) bool {
	txns := map[string]*txnMeta{}
	n := 0
	end, err := sh.store.Load(sh.ctx, func(key, value []byte, recEnd int64) error {
		n++
		id, t, err := decodeRecord(key, value)
		if err != nil {
			c.logger.Warn("skipping a record of "+StateTopic, "partition", sh.partition, "err", err)
			return nil
		}
		if t == nil {
			delete(txns, id)
			return nil
		}
		t.end = recEnd
		txns[id] = t
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shards[sh.partition] != sh {
		return true
	}
	if err != nil {
		if sh.ctx.Err() == nil {
			c.logger.Error("loading transactions failed; trying again", "partition", sh.partition, "epoch", sh.epoch, "err", err)
		}
		return false
	}
	sh.txns, sh.loading = txns, false
	for _, t := range txns {
		if t.state == StatePrepareCommit || t.state == StatePrepareAbort {
			c.finishLocked(sh, t)
		}
	}
	c.logger.Info("loaded transactions", "partition", sh.partition, "epoch", sh.epoch, "records", n, "end", end,
		"transactional ids", len(txns), "took", c.cfg.Now().Sub(start).Round(time.Millisecond))
	return true
}

// lookupLocked finds the shard of a transactional id: NOT_COORDINATOR if
// its partition is not led here, COORDINATOR_LOAD_IN_PROGRESS while
// loading.
func (c *Coordinator) lookupLocked(id string) (*shard, int16) {
	sh, ok := c.shards[PartitionFor(id, c.partitions)]
	if !ok {
		return nil, kerr.NotCoordinator.Code
	}
	if sh.loading {
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return sh, 0
}

// writeLocked appends next, the new state of its transactional id, and
// makes it the state in memory. It returns the error code of a refused
// append (nothing changed then).
func (c *Coordinator) writeLocked(sh *shard, next *txnMeta) int16 {
	if next.epoch < 0 {
		c.logger.Error("refusing a transaction state without a valid epoch", "transactional id", next.id,
			"producer id", next.producerID, "epoch", next.epoch)
		return kerr.UnknownServerError.Code
	}
	next.lastUpdate = c.cfg.Now().UnixMilli()
	rec := records.KV{Key: stateKey(next.id), Value: stateValue(next)}
	if n := len(rec.Key) + len(rec.Value) + recordOverhead; n > sh.store.MaxBatchBytes() {
		// Too many partitions in one transaction: Kafka's answer to a
		// transaction log append that is too large (not retriable).
		c.logger.Warn("transaction state too large for "+StateTopic, "transactional id", next.id,
			"bytes", n, "max", sh.store.MaxBatchBytes(), "partitions", len(next.partitions))
		return kerr.UnknownServerError.Code
	}
	end, err := sh.store.Append(sh.epoch, []records.KV{rec})
	if err != nil {
		return c.appendErrorCode(sh, err)
	}
	next.end = end
	sh.txns[next.id] = next
	return 0
}

// appendErrorCode maps a write failure to the code Kafka's coordinator
// answers: NOT_COORDINATOR once the partition is led elsewhere, else
// COORDINATOR_NOT_AVAILABLE (too few in-sync replicas, a timeout), both
// retriable.
func (c *Coordinator) appendErrorCode(sh *shard, err error) int16 {
	if errors.Is(err, ErrNotLeader) || errors.Is(err, context.Canceled) && sh.ctx.Err() != nil {
		return kerr.NotCoordinator.Code
	}
	c.logger.Warn("transaction state write failed", "partition", sh.partition, "err", err)
	return kerr.CoordinatorNotAvailable.Code
}

// waitCommitted waits until everything written for t up to now is
// committed and returns 0, or the error code.
func (c *Coordinator) waitCommitted(ctx context.Context, sh *shard, end int64) int16 {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	if err := sh.store.WaitCommitted(ctx, sh.epoch, end); err != nil {
		if errors.Is(err, ErrNotLeader) {
			return kerr.NotCoordinator.Code
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return kerr.CoordinatorNotAvailable.Code
		}
		return c.appendErrorCode(sh, err)
	}
	return 0
}

// finishLocked writes the markers of t, which is PrepareCommit or
// PrepareAbort, once that state is committed, then its CompleteCommit or
// CompleteAbort, in the background. A shard dropped meanwhile stops it:
// the next coordinator resumes from the log.
func (c *Coordinator) finishLocked(sh *shard, t *txnMeta) {
	if t.finishing {
		return
	}
	t.finishing = true
	end := t.end
	m := Marker{ProducerID: t.producerID, ProducerEpoch: t.epoch, CoordinatorEpoch: sh.epoch, Commit: t.state == StatePrepareCommit}
	parts := t.sortedPartitions()
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		if !c.awaitPrepared(sh, t.id, end) {
			return
		}
		if !c.writeAllMarkers(sh, t.id, m, parts) {
			return
		}
		for !c.completeAfterMarkers(sh, t.id, m) {
			select {
			case <-sh.ctx.Done():
				return
			case <-time.After(c.cfg.MarkerRetryBackoff):
			}
		}
	}()
}

// awaitPrepared waits until the shard's records below end, which hold a
// transaction's PrepareCommit or PrepareAbort, are committed, and reports
// whether they are (false: the shard was dropped). A failed wait is tried
// again until the shard is dropped: the transaction is finishing, so
// nothing else will finish it, and an ISR shrunk below
// min.insync.replicas after the append, or a session deadline passed for
// a moment, holds the prepare back only until the ISR grows back or the
// session is renewed. A replica that stopped leading in the shard's epoch
// fails every wait until the broker drops the shard.
func (c *Coordinator) awaitPrepared(sh *shard, id string, end int64) bool {
	warned := time.Time{}
	for {
		err := sh.store.WaitCommitted(sh.ctx, sh.epoch, end)
		if err == nil {
			return true
		}
		if sh.ctx.Err() != nil {
			return false
		}
		if now := time.Now(); now.Sub(warned) > 10*time.Second {
			warned = now
			c.logger.Warn("transaction end not committed yet; waiting again", "transactional id", id,
				"partition", sh.partition, "err", err)
		}
		select {
		case <-sh.ctx.Done():
			return false
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
	}
}

// completeAfterMarkers writes the CompleteCommit or CompleteAbort of the
// transaction whose markers m were all written. It reports false when the
// write must be tried again (refused: too few in-sync replicas).
func (c *Coordinator) completeAfterMarkers(sh *shard, id string, m Marker) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := sh.txns[id]
	if c.shards[sh.partition] != sh || cur == nil || !cur.finishing || cur.producerID != m.ProducerID || cur.epoch != m.ProducerEpoch {
		return true
	}
	next := cur.clone()
	next.finishing = false
	next.state = StateCompleteAbort
	if m.Commit {
		next.state = StateCompleteCommit
	}
	next.partitions = map[TopicPartition]struct{}{}
	if next.nextProducerID >= 0 {
		// Epochs ran out (transactions v2): the producer goes on with a
		// new id.
		next.prevProducerID, next.producerID, next.epoch, next.nextProducerID = cur.producerID, cur.nextProducerID, 0, -1
	}
	if code := c.writeLocked(sh, next); code != 0 {
		c.logger.Warn("cannot complete a transaction yet", "transactional id", id, "code", code)
		return code == kerr.NotCoordinator.Code
	}
	return true
}

// writeAllMarkers writes m to every partition, retrying failures until all
// are written (true) or the shard is dropped (false). A marker refused for
// a newer coordinator epoch or producer epoch stops the writing (false), as
// in Kafka: a newer coordinator owns the transaction, so this broker is
// about to drop the shard, and its markers, written again after that (say
// to a partition deleted and created again under the same name, which
// knows nothing of the producer), could commit or abort what is not
// theirs. The transaction stays finishing here until the shard is dropped;
// the partition's next coordinator replays it.
func (c *Coordinator) writeAllMarkers(sh *shard, id string, m Marker, parts []TopicPartition) bool {
	warned := time.Time{}
	for len(parts) > 0 {
		results := c.markers.WriteMarkers(sh.ctx, m, parts)
		var retry []TopicPartition
		for _, tp := range parts {
			err, ok := results[tp]
			switch {
			case ok && err == nil:
			case errors.Is(err, ErrPartitionGone):
				c.logger.Info("dropping a transaction marker for a deleted partition", "transactional id", id,
					"topic", tp.Topic, "partition", tp.Partition)
			case errors.Is(err, ErrMarkerFenced):
				c.logger.Error("transaction marker fenced: a newer coordinator or producer epoch owns the transaction; "+
					"its markers are left to the partition's next coordinator", "transactional id", id,
					"topic", tp.Topic, "partition", tp.Partition, "coordinator epoch", m.CoordinatorEpoch, "err", err)
				return false
			default:
				retry = append(retry, tp)
				if now := time.Now(); now.Sub(warned) > 10*time.Second {
					warned = now
					c.logger.Warn("transaction marker not written yet; retrying", "transactional id", id,
						"topic", tp.Topic, "partition", tp.Partition, "coordinator epoch", m.CoordinatorEpoch, "err", err)
				}
			}
		}
		parts = retry
		if len(parts) == 0 {
			return true
		}
		select {
		case <-sh.ctx.Done():
			return false
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
	}
	return true
}

// Tick aborts the transactions that outlived their timeout and removes
// the transactional ids that expired, each at its configured interval.
// The broker calls it periodically.
func (c *Coordinator) Tick() {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	// The transactions v2 producers out of epochs, whose abort moves them
	// to a new producer id: allocated with the lock released.
	type exhausted struct {
		sh    *shard
		id    string
		pid   int64
		epoch int16
	}
	var needIDs []exhausted
	defer func() {
		for _, x := range needIDs {
			c.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.CommitTimeout)
			fresh, err := c.ids.NextID(ctx)
			cancel()
			c.mu.Lock()
			if err != nil {
				c.logger.Warn("cannot allocate a producer id", "err", err)
				return // the next Tick tries again
			}
			t := x.sh.txns[x.id]
			if c.shards[x.sh.partition] == x.sh && t != nil && t.state == StateOngoing && !t.finishing &&
				t.producerID == x.pid && t.epoch == x.epoch {
				c.fenceAndAbortLocked(x.sh, t, fresh)
			}
		}
	}()
	abort := now.Sub(c.lastAbort) >= c.cfg.AbortInterval
	remove := now.Sub(c.lastRemove) >= c.cfg.RemoveInterval
	if abort {
		c.lastAbort = now
	}
	if remove {
		c.lastRemove = now
	}
	if !abort && !remove {
		return
	}
	nowMs := now.UnixMilli()
	for _, sh := range c.shards {
		if sh.loading {
			continue
		}
		for id, t := range sh.txns {
			switch {
			case abort && t.state == StateOngoing && !t.finishing && nowMs > t.start+int64(t.timeoutMs):
				c.logger.Info("aborting a transaction past its timeout", "transactional id", id,
					"producer id", t.producerID, "epoch", t.epoch, "timeout ms", t.timeoutMs)
				if t.tv2 && t.epoch >= exhaustedEpoch {
					needIDs = append(needIDs, exhausted{sh, id, t.producerID, t.epoch})
					continue
				}
				c.fenceAndAbortLocked(sh, t, -1)
			case remove && (t.state == StateEmpty || t.state == StateCompleteCommit || t.state == StateCompleteAbort) &&
				!t.finishing && nowMs-t.lastUpdate >= c.cfg.IDExpiration.Milliseconds():
				if _, err := sh.store.Append(sh.epoch, []records.KV{{Key: stateKey(id)}}); err != nil {
					continue
				}
				c.logger.Info("transactional id expired", "transactional id", id, "producer id", t.producerID)
				delete(sh.txns, id)
			}
		}
	}
}

// fenceAndAbortLocked aborts t's open transaction with its epoch bumped,
// which fences the producer that opened it: its later writes and its own
// EndTxn are refused (Kafka's PrepareEpochFence, written as PrepareAbort
// with the new epoch). A transactions v2 producer out of epochs moves to
// fresh, a new producer id, once the abort completes, as after its own
// EndTxn at the last epoch (its abort retry is answered with it); others
// get a new id from InitProducerId. It returns the code of a refused
// write.
func (c *Coordinator) fenceAndAbortLocked(sh *shard, t *txnMeta, fresh int64) int16 {
	next := t.clone()
	if next.epoch < math.MaxInt16 {
		next.epoch++
	}
	next.lastEpoch = -1
	next.state = StatePrepareAbort
	if t.tv2 && t.epoch >= exhaustedEpoch {
		next.nextProducerID = fresh
	}
	if code := c.writeLocked(sh, next); code != 0 {
		return code
	}
	c.finishLocked(sh, next)
	return 0
}
