package txn

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Every method below answers what Kafka's TransactionCoordinator answers,
// with PRODUCER_FENCED where Kafka's does; the broker turns it into
// INVALID_PRODUCER_EPOCH for request versions that predate it (KIP-588).
// A method that wrote something answers once the write is committed; one
// that did not still waits until the id's latest write is (an earlier
// answer may have failed with its write still uncommitted), so nothing a
// client is told can be lost with a failover.

// InitResult is InitProducerId's answer.
type InitResult struct {
	Code       int16
	ProducerID int64
	Epoch      int16
}

// InitProducerID gives transactional id id its producer id and a new
// epoch, fencing any older producer of the id: an open transaction is
// aborted (with the epoch bumped) and CONCURRENT_TRANSACTIONS answered, for
// the client to retry once the abort is complete. pid and epoch, if not -1,
// are the producer's current ones (KIP-360, v3+): a retry of an
// InitProducerId that succeeded gets the same answer again; another pair
// than the id's current one is PRODUCER_FENCED.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, pid int64, epoch int16) InitResult {
	fail := func(code int16) InitResult { return InitResult{Code: code, ProducerID: -1, Epoch: -1} }
	if id == "" || len(id) > maxIDLen {
		return fail(kerr.InvalidRequest.Code)
	}
	if timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds() {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	fresh := int64(-1) // a producer id allocated for this call
	for {
		c.mu.Lock()
		sh, code := c.lookupLocked(id)
		if code != 0 {
			c.mu.Unlock()
			return fail(code)
		}
		t := sh.txns[id]
		needID := t == nil || t.epoch >= exhaustedEpoch && (t.state == StateEmpty || t.state == StateCompleteCommit || t.state == StateCompleteAbort)
		if needID && fresh < 0 {
			c.mu.Unlock()
			var err error
			if fresh, err = c.ids.NextID(ctx); err != nil {
				c.logger.Warn("cannot allocate a producer id", "err", err)
				return fail(kerr.CoordinatorNotAvailable.Code)
			}
			continue
		}
		res := c.initLocked(sh, t, id, timeoutMs, pid, epoch, fresh)
		end := int64(0)
		if cur := sh.txns[id]; cur != nil {
			end = cur.end
		}
		c.mu.Unlock()
		if res.Code != 0 {
			return fail(res.Code)
		}
		if code := c.waitCommitted(ctx, sh, end); code != 0 {
			return fail(code)
		}
		return res
	}
}

func (c *Coordinator) initLocked(sh *shard, t *txnMeta, id string, timeoutMs int32, pid int64, epoch int16, fresh int64) InitResult {
	if t == nil {
		next := &txnMeta{id: id, producerID: fresh, prevProducerID: -1, nextProducerID: -1, epoch: 0, lastEpoch: -1, timeoutMs: timeoutMs,
			state: StateEmpty, partitions: map[TopicPartition]struct{}{}, start: -1}
		if code := c.writeLocked(sh, next); code != 0 {
			return InitResult{Code: code}
		}
		return InitResult{ProducerID: next.producerID, Epoch: next.epoch}
	}
	expected := pid >= 0
	if t.finishing {
		return InitResult{Code: kerr.ConcurrentTransactions.Code}
	}
	// The producer the client names must be the id's current one, or its
	// previous one from before a change of producer id (a retry).
	if expected && pid != t.producerID && !(pid == t.prevProducerID && epoch >= exhaustedEpoch) {
		return InitResult{Code: kerr.ProducerFenced.Code}
	}
	switch t.state {
	case StatePrepareCommit, StatePrepareAbort:
		return InitResult{Code: kerr.ConcurrentTransactions.Code}
	case StateOngoing:
		if code := c.fenceAndAbortLocked(sh, t, -1); code != 0 {
			return InitResult{Code: code}
		}
		return InitResult{Code: kerr.ConcurrentTransactions.Code}
	case StateEmpty, StateCompleteCommit, StateCompleteAbort:
	default:
		return InitResult{Code: kerr.UnknownServerError.Code}
	}
	next := t.clone()
	switch {
	case t.epoch >= exhaustedEpoch && (!expected || epoch == t.epoch):
		// Out of epochs: a new producer id (fresh, allocated for this).
		next.prevProducerID, next.producerID, next.epoch, next.lastEpoch = t.producerID, fresh, 0, -1
		if expected {
			next.lastEpoch = t.epoch
		}
	case !expected:
		next.epoch, next.lastEpoch = t.epoch+1, -1
	case epoch == t.epoch:
		next.epoch, next.lastEpoch = t.epoch+1, t.epoch
	case epoch == t.lastEpoch:
		// A retry of the call that made the current epoch.
		return InitResult{ProducerID: t.producerID, Epoch: t.epoch}
	default:
		return InitResult{Code: kerr.ProducerFenced.Code}
	}
	next.timeoutMs = timeoutMs
	next.partitions = map[TopicPartition]struct{}{}
	next.state, next.start = StateEmpty, -1
	if code := c.writeLocked(sh, next); code != 0 {
		return InitResult{Code: code}
	}
	return InitResult{ProducerID: next.producerID, Epoch: next.epoch}
}

// exhaustedEpoch is the epoch from which a producer gets a new producer id
// rather than a bump: the last one, 32767, stays for the coordinator's own
// fencing.
const exhaustedEpoch = math.MaxInt16 - 1

// checkProducerLocked finds id's transaction for a request of producer
// (pid, epoch): INVALID_PRODUCER_ID_MAPPING if the id is unknown or has
// another producer id, PRODUCER_FENCED for another epoch.
//
// A transaction whose markers are being written has a transition in
// progress: CONCURRENT_TRANSACTIONS, checked first if pendingFirst (Kafka's
// AddPartitionsToTxn order), after the producer otherwise (EndTxn's).
func (c *Coordinator) checkProducerLocked(id string, pid int64, epoch int16, pendingFirst bool) (*shard, *txnMeta, int16) {
	if id == "" || len(id) > maxIDLen {
		return nil, nil, kerr.InvalidRequest.Code
	}
	sh, code := c.lookupLocked(id)
	if code != 0 {
		return nil, nil, code
	}
	t := sh.txns[id]
	switch {
	case t == nil:
		return nil, nil, kerr.InvalidProducerIDMapping.Code
	case pendingFirst && t.finishing:
		return nil, nil, kerr.ConcurrentTransactions.Code
	case t.producerID != pid:
		return nil, nil, kerr.InvalidProducerIDMapping.Code
	case t.epoch != epoch:
		return nil, nil, kerr.ProducerFenced.Code
	case t.finishing:
		return nil, nil, kerr.ConcurrentTransactions.Code
	}
	return sh, t, 0
}

// AddPartitions adds partitions to the producer's transaction, opening it
// if none is open (AddPartitionsToTxn; AddOffsetsToTxn adds the group's
// __consumer_offsets partition). The answer is one code for all of them.
//
// tv2 tells that the client uses transactions v2 (the partition leader's
// implicit add of a Produce v12, a TxnOffsetCommit v5, AddPartitionsToTxn
// v4+ from a broker): its transaction will end with an epoch bump.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, tv2 bool) int16 {
	c.mu.Lock()
	sh, t, code := c.checkProducerLocked(id, pid, epoch, true)
	if code == 0 {
		code = c.addLocked(sh, t, parts, tv2)
	}
	var end int64
	if code == 0 {
		end = sh.txns[id].end
	}
	c.mu.Unlock()
	if code != 0 {
		return code
	}
	return c.waitCommitted(ctx, sh, end)
}

func (c *Coordinator) addLocked(sh *shard, t *txnMeta, parts []TopicPartition, tv2 bool) int16 {
	switch t.state {
	case StatePrepareCommit, StatePrepareAbort:
		return kerr.ConcurrentTransactions.Code
	case StateOngoing:
		if t.tv2 == tv2 && !slices.ContainsFunc(parts, func(tp TopicPartition) bool { _, in := t.partitions[tp]; return !in }) {
			return 0 // all there already
		}
	case StateEmpty, StateCompleteCommit, StateCompleteAbort:
	default:
		return kerr.UnknownServerError.Code
	}
	next := t.clone()
	next.tv2 = tv2
	if t.state != StateOngoing {
		next.state, next.start = StateOngoing, c.cfg.Now().UnixMilli()
	}
	for _, tp := range parts {
		next.partitions[tp] = struct{}{}
	}
	return c.writeLocked(sh, next)
}

// Verify answers whether the producer's transaction holds each partition
// of parts (AddPartitionsToTxn v4+ with VerifyOnly, KIP-890): per
// partition 0, or TRANSACTION_ABORTABLE when it is not in the transaction;
// or one code for all (the producer is not the id's, or fenced; the
// transaction is completing). It writes nothing.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]int16, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" || len(id) > maxIDLen {
		return nil, kerr.InvalidRequest.Code
	}
	sh, code := c.lookupLocked(id)
	if code != 0 {
		return nil, code
	}
	t := sh.txns[id]
	switch {
	case t == nil || t.producerID != pid:
		return nil, kerr.InvalidProducerIDMapping.Code
	case t.epoch != epoch:
		return nil, kerr.ProducerFenced.Code
	case t.state == StatePrepareCommit || t.state == StatePrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	}
	out := make(map[TopicPartition]int16, len(parts))
	for _, tp := range parts {
		out[tp] = 0
		if _, in := t.partitions[tp]; !in || t.state != StateOngoing {
			out[tp] = kerr.TransactionAbortable.Code
		}
	}
	return out, 0
}

// EndResult is EndTxn's answer; v2 clients take the producer id and epoch
// to go on with from it (-1 on errors and for v1).
type EndResult struct {
	Code       int16
	ProducerID int64
	Epoch      int16
}

// EndTxn commits or aborts the producer's open transaction: the
// PrepareCommit or PrepareAbort is written and, once committed, answered;
// the markers and the completion follow in the background. A retry of an
// EndTxn that completed (or is completing) gets 0 (or
// CONCURRENT_TRANSACTIONS); one that contradicts it INVALID_TXN_STATE.
//
// With tv2 (EndTxn v5+, transactions v2, KIP-890 part 2) every end bumps
// the producer's epoch (at the last epoch, the producer moves to a new
// producer id once the transaction completes), the markers carry the new
// epoch, and the answer tells the client the pair to go on with; a retry is
// recognised by its epoch being the one before the bump, and an abort with
// no transaction open is accepted (and bumps the epoch too), as Kafka's
// table for v2 says.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit, tv2 bool) EndResult {
	fail := func(code int16) EndResult { return EndResult{Code: code, ProducerID: -1, Epoch: -1} }
	fresh := int64(-1)
	for {
		c.mu.Lock()
		if id == "" || len(id) > maxIDLen {
			c.mu.Unlock()
			return fail(kerr.InvalidRequest.Code)
		}
		sh, code := c.lookupLocked(id)
		if code != 0 {
			c.mu.Unlock()
			return fail(code)
		}
		t := sh.txns[id]
		var res EndResult
		needID := false
		if tv2 {
			res, needID = c.endV2Locked(sh, t, pid, epoch, commit, fresh)
		} else {
			res = c.endV1Locked(sh, t, pid, epoch, commit)
		}
		if needID && fresh < 0 {
			c.mu.Unlock()
			var err error
			if fresh, err = c.ids.NextID(ctx); err != nil {
				c.logger.Warn("cannot allocate a producer id", "err", err)
				return fail(kerr.CoordinatorNotAvailable.Code)
			}
			continue
		}
		var end int64
		if cur := sh.txns[id]; cur != nil {
			end = cur.end
		}
		c.mu.Unlock()
		if res.Code != 0 {
			return fail(res.Code)
		}
		if code := c.waitCommitted(ctx, sh, end); code != 0 {
			return fail(code)
		}
		return res
	}
}

func (c *Coordinator) endV1Locked(sh *shard, t *txnMeta, pid int64, epoch int16, commit bool) EndResult {
	switch {
	case t == nil || t.producerID != pid:
		return EndResult{Code: kerr.InvalidProducerIDMapping.Code}
	case t.epoch != epoch:
		return EndResult{Code: kerr.ProducerFenced.Code}
	case t.finishing:
		return EndResult{Code: kerr.ConcurrentTransactions.Code}
	}
	want := map[bool]State{true: StateCompleteCommit, false: StateCompleteAbort}[commit]
	switch t.state {
	case StateOngoing:
	case want:
		return EndResult{ProducerID: -1, Epoch: -1} // a retry
	case StatePrepareCommit, StatePrepareAbort:
		return EndResult{Code: kerr.ConcurrentTransactions.Code}
	default:
		return EndResult{Code: kerr.InvalidTxnState.Code}
	}
	next := t.clone()
	next.state = StatePrepareAbort
	if commit {
		next.state = StatePrepareCommit
	}
	next.tv2 = false
	if code := c.writeLocked(sh, next); code != 0 {
		return EndResult{Code: code}
	}
	c.finishLocked(sh, next)
	return EndResult{ProducerID: -1, Epoch: -1}
}

// endV2Locked is EndTxn under transactions v2. needID: the end bumps the
// last epoch, and fresh (a producer id allocated for the call) is needed.
func (c *Coordinator) endV2Locked(sh *shard, t *txnMeta, pid int64, epoch int16, commit bool, fresh int64) (EndResult, bool) {
	if t == nil {
		return EndResult{Code: kerr.InvalidProducerIDMapping.Code}, false
	}
	if t.finishing && t.nextProducerID >= 0 && pid == t.nextProducerID {
		// The producer id this transaction's end handed out, used before
		// its markers are all written: retry once they are (Kafka checks
		// the pending transition first for this very case).
		return EndResult{Code: kerr.ConcurrentTransactions.Code}, false
	}
	retryOnBump := t.epoch == epoch+1 && t.producerID == pid
	retryOnOverflow := t.prevProducerID == pid && epoch >= exhaustedEpoch && t.epoch == 0
	if t.producerID != pid && !retryOnOverflow {
		return EndResult{Code: kerr.InvalidProducerIDMapping.Code}, false
	}
	complete := t.state == StateCompleteCommit || t.state == StateCompleteAbort
	prepare := t.state == StatePrepareCommit || t.state == StatePrepareAbort
	var valid bool
	switch {
	case prepare:
		// Kafka fences a request of the current (bumped) epoch here; but
		// the client has that epoch from this very EndTxn's answer, given
		// before the markers are written, and its next EndTxn may come
		// before they are: it is told to retry (CONCURRENT_TRANSACTIONS,
		// below) rather than fenced.
		valid = retryOnBump || epoch == t.epoch
	case complete:
		valid = retryOnBump || retryOnOverflow || epoch == t.epoch
	default: // Empty, Ongoing
		valid = epoch == t.epoch
	}
	if !valid {
		return EndResult{Code: kerr.ProducerFenced.Code}, false
	}
	if t.finishing {
		return EndResult{Code: kerr.ConcurrentTransactions.Code}, false
	}
	retry := retryOnBump || retryOnOverflow
	switch t.state {
	case StateOngoing:
	case StateCompleteCommit, StateCompleteAbort:
		if retry {
			if (t.state == StateCompleteCommit) == commit {
				return EndResult{ProducerID: t.producerID, Epoch: t.epoch}, false
			}
			return EndResult{Code: kerr.InvalidTxnState.Code}, false
		}
		if commit {
			return EndResult{Code: kerr.InvalidTxnState.Code}, false
		}
		// An abort with nothing open: bump the epoch all the same.
	case StateEmpty:
		if commit {
			return EndResult{Code: kerr.InvalidTxnState.Code}, false
		}
	default:
		return EndResult{Code: kerr.InvalidTxnState.Code}, false
	}
	if t.epoch >= exhaustedEpoch && fresh < 0 {
		return EndResult{}, true
	}
	next := t.clone()
	next.tv2 = true
	next.state = StatePrepareAbort
	if commit {
		next.state = StatePrepareCommit
	}
	if t.state != StateOngoing {
		next.partitions, next.start = map[TopicPartition]struct{}{}, c.cfg.Now().UnixMilli()
	}
	// The markers carry the bumped epoch; past the last one (a producer
	// already at 32767) they keep it, and the producer moves to fresh.
	next.lastEpoch, next.epoch = t.epoch, min(t.epoch, math.MaxInt16-1)+1
	if t.epoch >= exhaustedEpoch {
		next.nextProducerID = fresh
	}
	if code := c.writeLocked(sh, next); code != 0 {
		return EndResult{Code: code}, false
	}
	c.finishLocked(sh, next)
	if next.nextProducerID >= 0 {
		return EndResult{ProducerID: next.nextProducerID, Epoch: 0}, false
	}
	return EndResult{ProducerID: next.producerID, Epoch: next.epoch}, false
}

// Description is DescribeTransactions' view of one transactional id.
type Description struct {
	Code       int16
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	// StartMs is when the open transaction began, -1 if none.
	StartMs    int64
	Partitions []TopicPartition
}

// Describe describes a transactional id (DescribeTransactions):
// TRANSACTIONAL_ID_NOT_FOUND if unknown here.
func (c *Coordinator) Describe(id string) Description {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(id)
	if code != 0 {
		return Description{Code: code, ProducerID: -1, Epoch: -1, StartMs: -1}
	}
	t := sh.txns[id]
	if t == nil {
		return Description{Code: kerr.TransactionalIDNotFound.Code, ProducerID: -1, Epoch: -1, StartMs: -1}
	}
	d := Description{State: t.state, ProducerID: t.producerID, Epoch: t.epoch, TimeoutMs: t.timeoutMs,
		StartMs: t.start, Partitions: t.sortedPartitions()}
	if t.state == StateEmpty {
		d.StartMs = -1
	}
	return d
}

// Listed is ListTransactions' view of one transactional id.
type Listed struct {
	ID         string
	ProducerID int64
	State      State
}

// List lists the transactional ids coordinated here (ListTransactions):
// those in one of states (all if empty), of one of producerIDs (all if
// empty), and, if minDurationMs >= 0, whose transaction started more than
// that long ago (as Kafka: ids without a transaction, start -1, pass). It
// reports loading when a partition led here is still loading (the answer
// is then COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) List(states []State, producerIDs []int64, minDurationMs int64) (out []Listed, loading bool) {
	// The filters may be long (a request's worth of producer ids): they
	// are sets, and applied with the lock released.
	wantState := make(map[State]bool, len(states))
	for _, s := range states {
		wantState[s] = true
	}
	wantID := make(map[int64]bool, len(producerIDs))
	for _, id := range producerIDs {
		wantID[id] = true
	}
	type entry struct {
		Listed
		start int64
	}
	var all []entry
	c.mu.Lock()
	nowMs := c.cfg.Now().UnixMilli()
	for _, sh := range c.shards {
		if sh.loading {
			c.mu.Unlock()
			return nil, true
		}
		for id, t := range sh.txns {
			all = append(all, entry{Listed{ID: id, ProducerID: t.producerID, State: t.state}, t.start})
		}
	}
	c.mu.Unlock()
	for _, e := range all {
		if len(wantState) > 0 && !wantState[e.State] ||
			len(wantID) > 0 && !wantID[e.ProducerID] ||
			minDurationMs >= 0 && nowMs-e.start <= minDurationMs {
			continue
		}
		out = append(out, e.Listed)
	}
	slices.SortFunc(out, func(a, b Listed) int { return strings.Compare(a.ID, b.ID) })
	return out, false
}
