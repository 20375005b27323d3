package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/replica"
)

// Replication, follower side: one fetcher per leader broker pulls every
// partition this broker follows from that leader with ordinary Fetch
// requests carrying this broker's id, the follower's leader epoch and the
// epoch of its last batch (Fetch v12), exactly as Kafka followers do. The
// leader answers DivergingEpoch when the follower's log went a different way;
// the follower truncates there and fetches again.
//
// Leader side (in 01_fetch.go): a fetch with a replica id records the
// follower's position (replica.FollowerFetch), which moves the high
// watermark and may propose an ISR expansion; isrUpdater stores ISR changes
// in etcd by compare-and-swap.

// fetcherManager owns the fetchers; the partition manager's goroutine is
// its only caller.
type fetcherManager struct {
	b        *Broker
	fetchers map[int32]*fetcher // by leader id
}

func newFetcherManager(b *Broker) *fetcherManager {
	return &fetcherManager{b: b, fetchers: map[int32]*fetcher{}}
}

// follow makes lp fetched from leader (at addr), and from no other.
func (m *fetcherManager) follow(tp topicPartition, lp *localPartition, leader int32, addr string) {
	for id, f := range m.fetchers {
		if id != leader {
			f.remove(tp)
		}
	}
	f := m.fetchers[leader]
	if f != nil && f.addr != addr {
		f.stop()
		f = nil
	}
	if f == nil {
		f = newFetcher(m.b, leader, addr)
		m.fetchers[leader] = f
	}
	f.add(tp, lp)
}

// unfollow stops fetching tp.
func (m *fetcherManager) unfollow(tp topicPartition) {
	for _, f := range m.fetchers {
		f.remove(tp)
	}
}

// closeAll stops every fetcher and waits for them.
func (m *fetcherManager) closeAll() {
	for id, f := range m.fetchers {
		f.stop()
		delete(m.fetchers, id)
	}
}

// fetcher replicates the partitions led by one broker.
type fetcher struct {
	b      *Broker
	leader int32
	addr   string
	dialer replicaDialer
	// conn is the connection to the leader, nil until dialled and after
	// a failure; only run uses it.
	conn *replicaConn

	mu sync.Mutex
	// parts are the partitions fetched from this leader; guarded by mu.
	parts map[topicPartition]*localPartition

	// wake (size 1) tells an idle fetcher that partitions were added.
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func newFetcher(b *Broker, leader int32, addr string) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{b: b, leader: leader, addr: addr, parts: map[topicPartition]*localPartition{},
		wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	f.dialer = replicaDialer{sec: b.interBroker, clientID: "samsa-replica-" + strconv.Itoa(int(b.cfg.NodeID)),
		timeout: 5 * time.Second}
	go f.run(ctx)
	return f
}

// replicaFetchMaxBytes is a replica fetch's MaxBytes. The leader returns
// at most that many record bytes but for one batch (KIP-74: the batch
// that takes a response past its limit is the last), plus the partitions'
// headers: replicaResponseSlack. That batch is bounded by its topic's
// max.message.bytes when it was written, and by socket.request.max.bytes
// (the Produce that carried it): fetcher.request takes the larger of
// that and the topics' max.message.bytes now, so that batches written
// under a limit lowered since still replicate (unless
// socket.request.max.bytes was lowered below them too).
const (
	replicaFetchMaxBytes = 64 << 20
	replicaResponseSlack = 36 << 20
)

func (f *fetcher) add(tp topicPartition, lp *localPartition) {
	f.mu.Lock()
	f.parts[tp] = lp
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(tp topicPartition) {
	f.mu.Lock()
	delete(f.parts, tp)
	f.mu.Unlock()
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// fetchBackoff is the pause after a failed fetch.
const fetchBackoff = 200 * time.Millisecond

// fetchWarnInterval is how often a fetcher that keeps failing the same
// way says so at Warn level: the first failure is logged at once, then one
// record per interval with the count, so a broker that cannot reach or
// log in to a leader (a wrong inter-broker password, TLS mismatch, missing
// CLUSTER_ACTION) says why without flooding the log.
const fetchWarnInterval = 30 * time.Second

// maxWarnSubjects is how many subjects a warnLimiter keeps before it
// prunes the stale ones.
const maxWarnSubjects = 256

// warnLimiter rate-limits a fetcher's Warn records, by subject.
type warnLimiter struct {
	last  map[string]time.Time
	count map[string]int
}

// allow reports whether a record about subject may be logged now, and how
// many were suppressed since the last one.
func (w *warnLimiter) allow(subject string, now time.Time) (bool, int) {
	if w.last == nil {
		w.last, w.count = map[string]time.Time{}, map[string]int{}
	}
	if last, ok := w.last[subject]; ok && now.Sub(last) < fetchWarnInterval {
		w.count[subject]++
		return false, 0
	}
	if len(w.last) >= maxWarnSubjects {
		// Partitions come and go: forget the subjects not reported
		// within the interval, whose next failure is news anyway.
		for k, t := range w.last {
			if now.Sub(t) >= fetchWarnInterval {
				delete(w.last, k)
				delete(w.count, k)
			}
		}
	}
	n := w.count[subject]
	w.last[subject], w.count[subject] = now, 0
	return true, n
}

// clear forgets subject: its next failure is logged at once.
func (w *warnLimiter) clear(subject string) bool {
	_, had := w.last[subject]
	delete(w.last, subject)
	delete(w.count, subject)
	return had
}

func (f *fetcher) run(ctx context.Context) {
	defer close(f.done)
	defer f.dropConn()
	log := f.b.logger.With("leader", f.leader)
	var warns warnLimiter
	const requestFailed = "request"
	for ctx.Err() == nil {
		f.mu.Lock()
		parts := make(map[topicPartition]*localPartition, len(f.parts))
		for tp, lp := range f.parts {
			parts[tp] = lp
		}
		f.mu.Unlock()
		if len(parts) == 0 {
			// Idle: the leader would close the connection after
			// connections.max.idle.ms, failing the next fetch.
			f.dropConn()
			select {
			case <-ctx.Done():
			case <-f.wake:
			}
			continue
		}
		req, sent, maxBatch := f.request(parts)
		resp, err := f.fetch(ctx, req, replicaFetchMaxBytes+replicaResponseSlack+maxBatch)
		if err != nil {
			if ctx.Err() == nil {
				if ok, suppressed := warns.allow(requestFailed, time.Now()); ok {
					log.Warn("replica fetches from the leader fail", "err", err, "failures_since_last_report", suppressed,
						"inter_broker_listener", f.b.lc.interBroker)
				} else {
					log.Debug("replica fetch failed", "err", err)
				}
				f.pause(ctx, fetchBackoff)
			}
			continue
		}
		if warns.clear(requestFailed) {
			log.Info("replica fetches from the leader work again")
		}
		backoff := resp.ErrorCode != 0
		var answers []fetchAnswer
		for ti := range resp.Topics {
			rt := &resp.Topics[ti]
			for pi := range rt.Partitions {
				rp := &rt.Partitions[pi]
				tp := topicPartition{rt.Topic, rp.Partition}
				lp := parts[tp]
				epoch, ok := sent[tp]
				if lp == nil || !ok {
					continue
				}
				// One answer per partition: the request named each once,
				// and answers are applied concurrently.
				delete(sent, tp)
				answers = append(answers, fetchAnswer{tp, lp, epoch, rp})
			}
		}
		for i, err := range f.handleAll(answers) {
			if err == nil {
				continue
			}
			backoff = true
			if !errors.Is(err, replica.ErrNotLeader) && !errors.Is(err, replica.ErrRoleChanged) && !errors.Is(err, replica.ErrClosed) {
				tp := answers[i].tp
				// By partition and error code: the error's text may carry
				// offsets that change from one fetch to the next.
				subject := tp.topic + "/" + strconv.Itoa(int(tp.partition)) + ":" + strconv.Itoa(int(errorCode(err)))
				if ok, suppressed := warns.allow(subject, time.Now()); ok {
					log.Warn("replication of a partition failed", "topic", tp.topic, "partition", tp.partition, "err", err,
						"failures_since_last_report", suppressed)
				}
			}
		}
		if backoff {
			f.pause(ctx, fetchBackoff)
		}
	}
}

// fetch sends req to the leader, dialling first if there is no connection
// or its SASL session is about to end. A connection that failed is
// dropped, and dialled again at the next fetch.
func (f *fetcher) fetch(ctx context.Context, req *kmsg.FetchRequest, maxResponse int64) (*kmsg.FetchResponse, error) {
	if f.conn != nil && f.conn.expired(time.Now()) {
		f.dropConn()
	}
	if f.conn == nil {
		c, err := f.dialer.dial(ctx, f.addr)
		if err != nil {
			return nil, err
		}
		f.conn = c
	}
	rctx, cancel := context.WithTimeout(ctx, f.b.cfg.ReplicaFetchWaitMax+10*time.Second)
	defer cancel()
	resp, err := f.conn.request(rctx, req, maxResponse)
	if err != nil {
		f.dropConn()
		return nil, err
	}
	return resp.(*kmsg.FetchResponse), nil
}

// dropConn closes the connection to the leader, if any.
func (f *fetcher) dropConn() {
	if f.conn != nil {
		f.conn.close()
		f.conn = nil
	}
}

func (f *fetcher) pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// request builds one Fetch for every partition, recording the leader epoch
// each was sent with.
// maxBatch is the largest batch the response may carry (see
// replicaFetchMaxBytes).
func (f *fetcher) request(parts map[topicPartition]*localPartition) (req *kmsg.FetchRequest, sent map[topicPartition]int32, maxBatch int64) {
	req = kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = f.b.cfg.NodeID
	req.MaxWaitMillis = int32(f.b.cfg.ReplicaFetchWaitMax.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = replicaFetchMaxBytes
	req.SessionEpoch = -1
	sent = make(map[topicPartition]int32, len(parts))
	maxBatch = max(int64(f.b.cfg.SocketRequestMaxBytes), defaultMaxMessageBytes)
	byTopic := map[string]int{}
	for tp, lp := range parts {
		pos, err := lp.FetchPosition()
		if err != nil {
			if !errors.Is(err, replica.ErrRoleChanged) && !errors.Is(err, replica.ErrClosed) {
				// Its log failed or cannot be flushed: report no
				// position the leader would count as durable (the
				// broker stops on a failed log; Broker.logFailed).
				f.b.logger.Error("replica's log cannot be flushed; not fetching", "topic", tp.topic, "partition", tp.partition, "err", err)
			}
			continue
		}
		i, ok := byTopic[tp.topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = tp.topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[tp.topic] = i
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = tp.partition
		p.FetchOffset = pos.Offset
		p.LastFetchedEpoch = pos.LastFetchedEpoch
		p.CurrentLeaderEpoch = pos.LeaderEpoch
		p.LogStartOffset = lp.Log().StartOffset()
		p.PartitionMaxBytes = f.b.cfg.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
		sent[tp] = p.CurrentLeaderEpoch
		if st := lp.settings.Load(); st != nil {
			maxBatch = max(maxBatch, int64(st.maxMessageBytes))
		}
	}
	return req, sent, maxBatch
}

// fetchAnswer is one partition's part of a fetch response, with the epoch
// its request went out in.
type fetchAnswer struct {
	tp    topicPartition
	lp    *localPartition
	epoch int32
	rp    *kmsg.FetchResponseTopicPartition
}

// handleAll applies a fetch response's answers and returns their errors,
// in order. Answers that carry records for topics that acknowledge only
// fsync'd data are applied concurrently: each appends and syncs its own
// log, so the fsyncs of the partitions of one response overlap (a group
// commit across partitions) instead of adding up before the next fetch,
// whose positions are what moves the leader's high watermark. The others
// only write to the page cache, which a goroutine each would not speed up.
func (f *fetcher) handleAll(answers []fetchAnswer) []error {
	errs := make([]error, len(answers))
	var withRecords []int
	for i := range answers {
		a := &answers[i]
		if len(a.rp.RecordBatches) == 0 || !a.lp.Log().SyncOnAppend() {
			// The replica's follower operations check that it still
			// follows in the epoch the request went out with.
			errs[i] = f.handle(a.lp, a.epoch, a.rp)
			continue
		}
		withRecords = append(withRecords, i)
	}
	inParallel(len(withRecords), maxParallelSyncs, func(j int) {
		a := &answers[withRecords[j]]
		errs[withRecords[j]] = f.handle(a.lp, a.epoch, a.rp)
	})
	return errs
}

// handle applies one partition's fetch answer to a request sent while the
// replica followed in epoch.
func (f *fetcher) handle(lp *localPartition, epoch int32, rp *kmsg.FetchResponseTopicPartition) error {
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		pos, err := lp.FetchPosition()
		if err != nil {
			return err
		}
		offset := pos.Offset
		if offset < rp.LogStartOffset {
			// Behind the leader's log start: start over from there.
			// What goes lies below the leader's log start, deleted
			// there too: nothing committed is lost.
			removed := lp.Log().EndOffset() - lp.Log().StartOffset()
			if err := lp.TruncateFullyAndStartAt(epoch, rp.LogStartOffset); err != nil {
				return err
			}
			f.b.logger.Info("behind the leader's log start; log emptied", "topic", lp.Topic, "partition", lp.Index,
				"epoch", epoch, "offset", offset, "leader_log_start", rp.LogStartOffset, "removed", removed)
			f.b.observer().Truncated(lp.Topic, lp.Index, removed, 0)
			lp.truncations.note(removed, 0)
			return nil
		}
		// Ahead of the leader (after an unclean election), or no epoch
		// in common with it.
		audit := f.truncationAudit(lp)
		leo, err := lp.TruncateAfterOutOfRange(epoch, max(rp.LogStartOffset, 0))
		if err == nil {
			removed, committed := audit(leo)
			f.b.logger.Warn("fetch offset out of the leader's range; truncated", "topic", lp.Topic, "partition", lp.Index,
				"epoch", epoch, "offset", offset, "leader_log_start", rp.LogStartOffset, "leo", leo,
				"removed", removed, "removed_below_high_watermark", committed)
		}
		return err
	default:
		return kerr.ErrorForCode(rp.ErrorCode)
	}
	if rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
		audit := f.truncationAudit(lp)
		leo, err := lp.TruncateToDivergence(epoch, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		if err == nil {
			removed, committed := audit(leo)
			level := slog.LevelInfo
			if committed > 0 {
				level = slog.LevelWarn
			}
			f.b.logger.Log(context.Background(), level, "truncated at the divergence from the leader", "topic", lp.Topic, "partition", lp.Index,
				"epoch", rp.DivergingEpoch.Epoch, "leader_end_offset", rp.DivergingEpoch.EndOffset, "leo", leo,
				"removed", removed, "removed_below_high_watermark", committed)
		}
		return err
	}
	return lp.AppendFromLeader(epoch, rp.RecordBatches, rp.HighWatermark, rp.LogStartOffset)
}

// truncationAudit reads lp's log end and high watermark before a
// truncation; the function it returns, given the log end after it,
// reports to the observer and returns how many records went and how many
// of them lay below the high watermark: committed, so possibly
// acknowledged to a producer. That count stays 0 but after an unclean
// election (docs/metrics.md). Only the fetcher truncates a follower's log,
// so nothing moves between the reading and the truncation but the high
// watermark, which only rises in between.
func (f *fetcher) truncationAudit(lp *localPartition) func(leo int64) (removed, committed int64) {
	leo0, hw0 := lp.Log().EndOffset(), lp.HighWatermark()
	return func(leo int64) (int64, int64) {
		removed := max(leo0-leo, 0)
		committed := max(min(hw0, leo0)-leo, 0)
		f.b.observer().Truncated(lp.Topic, lp.Index, removed, committed)
		lp.truncations.note(removed, committed)
		return removed, committed
	}
}

// isrUpdater stores the ISR changes leaders propose, one at a time, as
// compare-and-swap writes of the partition state conditioned on this
// broker's registration (a deposed, cut-off leader cannot change an ISR)
// and, for members joining, on theirs being the live one the leader saw.
type isrUpdater struct {
	b *Broker

	mu sync.Mutex
	// queue holds the partitions with a proposal to store; guarded by mu.
	queue map[*localPartition]bool
	// wake (size 1) signals a non-empty queue.
	wake chan struct{}
}

func newISRUpdater(b *Broker) *isrUpdater {
	return &isrUpdater{b: b, queue: map[*localPartition]bool{}, wake: make(chan struct{}, 1)}
}

func (u *isrUpdater) propose(lp *localPartition) {
	u.mu.Lock()
	u.queue[lp] = true
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *isrUpdater) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.wake:
		}
		u.mu.Lock()
		batch := u.queue
		u.queue = map[*localPartition]bool{}
		u.mu.Unlock()
		for lp := range batch {
			base, err := u.store(ctx, lp)
			if err == nil {
				continue
			}
			unknown := !writeOutcomeKnown(err)
			if lp.ISRProposalFailed(base, unknown) && ctx.Err() == nil {
				// It may be stored: try again until the stored state
				// shows what happened.
				time.AfterFunc(isrRetryBackoff, func() { u.propose(lp) })
			}
			if ctx.Err() == nil && (unknown || !errors.Is(err, coord.ErrConflict) && !errors.Is(err, errJoinerNotEligible) && !errors.Is(err, errStaleProposal)) {
				u.b.logger.Warn("ISR change not stored", "topic", lp.Topic, "partition", lp.Index, "outcome_unknown", unknown, "err", err)
			}
		}
	}
}

// isrRetryBackoff is the pause before an ISR change whose write had an
// unknown outcome is written again.
const isrRetryBackoff = 200 * time.Millisecond

// errStaleProposal: an ISR change was built on an older partition state
// than the stored one (the controller changed it meanwhile); it is dropped
// rather than applied over the newer state.
var errStaleProposal = errors.New("broker: ISR change built on an older partition epoch than the stored one")

// writeOutcomeKnown reports whether a failed etcd write is known not to
// have been applied: its transaction was refused or never sent. Any other
// failure (a timeout, an unreachable or leaderless etcd) may have applied it.
func writeOutcomeKnown(err error) bool {
	for _, known := range []error{coord.ErrConflict, coord.ErrConditionFailed, coord.ErrInvalid, coord.ErrTopicNotFound,
		coord.ErrTxnTooLarge, replica.ErrNotLeader, errJoinerNotEligible, errStaleProposal} {
		if errors.Is(err, known) {
			return true
		}
	}
	return false
}

// store writes lp's pending ISR change, if any, over the stored partition
// state it was built on (Kafka's AlterPartition rule: a change applies only
// to the partition epoch it was made from). A change that may be stored
// already (an earlier write's outcome was unknown) is settled instead
// (settle). It returns the partition epoch the change was built on.
func (u *isrUpdater) store(ctx context.Context, lp *localPartition) (base int32, err error) {
	prop, ok := lp.ProposedISR()
	if !ok {
		return 0, nil
	}
	base = prop.PartitionEpoch
	s := u.b.cache.Snapshot()
	vp, ok := s.Partition(lp.Topic, lp.Index)
	if vt, known := s.Topics[lp.Topic]; !ok || !known || vt.Topic.ID != lp.topicID ||
		vp.Leader != u.b.cfg.NodeID || vp.LeaderEpoch != prop.LeaderEpoch {
		return base, replica.ErrNotLeader
	}
	if vp.PartitionEpoch != base {
		return base, fmt.Errorf("%w: built on %d, stored %d", errStaleProposal, base, vp.PartitionEpoch)
	}
	if !u.b.sessionLive() {
		// Past its session's deadline (woken from a pause, say) this
		// broker's view may be stale: change nothing until it renews.
		return base, fmt.Errorf("%w: session past its deadline", replica.ErrNotLeader)
	}
	if prop.OutcomeUnknown {
		return base, u.settle(ctx, lp, vp)
	}
	conds := []coord.Condition{u.b.session.Condition()}
	for _, r := range prop.ISR {
		if r == u.b.cfg.NodeID || slices.Contains(vp.ISR, r) {
			continue
		}
		vb, live := s.Brokers[r]
		if !live || !mayJoinISR(s, r) {
			return base, fmt.Errorf("%w: broker %d", errJoinerNotEligible, r)
		}
		// The incarnation seen here may join: a later one registers anew
		// (recovering if it started uncleanly), and this condition then
		// fails.
		conds = append(conds, coord.BrokerRegistered(r, vb.CreateRevision))
	}
	next := vp.PartitionState.Clone()
	next.ISR = prop.ISR
	next.PartitionEpoch++
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	note := meta.ISRChange{PreviousLeader: vp.Leader, PreviousISR: vp.ISR, By: "leader " + strconv.Itoa(int(u.b.cfg.NodeID)),
		Reason: u.b.isrChangeReason(s, lp, vp.ISR, prop.ISR)}
	if _, err := u.b.client.CASPartitionStateNoted(wctx, next, vp.ModRevision, lp.topicID, note, conds...); err != nil {
		return base, err
	}
	u.b.logger.Info("ISR changed", "topic", lp.Topic, "partition", lp.Index, "epoch", prop.LeaderEpoch, "from", vp.ISR, "to", prop.ISR)
	shrink := slices.ContainsFunc(vp.ISR, func(r int32) bool { return !slices.Contains(prop.ISR, r) })
	expand := slices.ContainsFunc(prop.ISR, func(r int32) bool { return !slices.Contains(vp.ISR, r) })
	u.b.observer().ISRChanged(lp.Topic, lp.Index, shrink, expand)
	return base, nil
}

// settle ends an ISR change whose write had an unknown outcome without
// writing it again (its checks, a joiner's eligibility among them, may no
// longer hold): it stores the state the change was built on, unchanged,
// under the next partition epoch, compare-and-swapped on that state's
// revision. If the change landed, this fails as a conflict and the stored
// change reaches the leader; if not, this lands and the leader drops the
// change, its next fetch or shrink check proposing afresh. Either way a
// newer partition epoch ends the pending change, which the high watermark
// counted meanwhile.
func (u *isrUpdater) settle(ctx context.Context, lp *localPartition, vp coord.VersionedPartition) error {
	next := vp.PartitionState.Clone()
	next.PartitionEpoch++
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	note := meta.ISRChange{PreviousLeader: vp.Leader, PreviousISR: vp.ISR, By: "leader " + strconv.Itoa(int(u.b.cfg.NodeID)),
		Reason: "an earlier ISR change whose write had an unknown outcome was found not stored: ISR unchanged"}
	if _, err := u.b.client.CASPartitionStateNoted(wctx, next, vp.ModRevision, lp.topicID, note, u.b.session.Condition()); err != nil {
		return err
	}
	u.b.logger.Info("ISR change of unknown outcome settled: not stored", "topic", lp.Topic, "partition", lp.Index, "isr", vp.ISR)
	return nil
}

// isrChangeReason says why the leader changes lp's ISR from from to to,
// for the partition's ISR history: each member that leaves and each that
// joins, with what the leader knows of it now.
func (b *Broker) isrChangeReason(s *coord.Snapshot, lp *localPartition, from, to []int32) string {
	st := lp.Status()
	follower := func(id int32) (replica.FollowerStatus, bool) {
		i := slices.IndexFunc(st.Followers, func(f replica.FollowerStatus) bool { return f.ID == id })
		if i < 0 {
			return replica.FollowerStatus{}, false
		}
		return st.Followers[i], true
	}
	var parts []string
	for _, id := range from {
		if slices.Contains(to, id) {
			continue
		}
		vb, registered := s.Brokers[id]
		f, known := follower(id)
		switch {
		case !registered:
			parts = append(parts, fmt.Sprintf("replica %d removed: its broker is not registered", id))
		case vb.ShuttingDown:
			parts = append(parts, fmt.Sprintf("replica %d removed: its broker is in controlled shutdown", id))
		case known && !f.LastCaughtUp.IsZero():
			parts = append(parts, fmt.Sprintf("replica %d removed: last caught up %s ago, past replica.lag.time.max.ms %d",
				id, time.Since(f.LastCaughtUp).Round(100*time.Millisecond), b.cfg.ReplicaLagTimeMax.Milliseconds()))
		default:
			parts = append(parts, fmt.Sprintf("replica %d removed: not caught up within replica.lag.time.max.ms %d of this leader epoch",
				id, b.cfg.ReplicaLagTimeMax.Milliseconds()))
		}
	}
	for _, id := range to {
		if slices.Contains(from, id) {
			continue
		}
		if f, ok := follower(id); ok && f.LogEnd >= 0 {
			parts = append(parts, fmt.Sprintf("replica %d added: caught up to the high watermark (its log end %d)", id, f.LogEnd))
		} else {
			parts = append(parts, fmt.Sprintf("replica %d added: caught up to the high watermark", id))
		}
	}
	if len(parts) == 0 {
		return "ISR unchanged"
	}
	return strings.Join(parts, "; ")
}

// errJoinerNotEligible: an ISR expansion names a broker that may not join
// (mayJoinISR).
var errJoinerNotEligible = errors.New("broker: a joining ISR member is not registered, or shutting down, or recovering")

// mayJoinISR reports whether broker id may be added to an ISR: it is
// registered, not in controlled shutdown (the controller would remove it
// again; Kafka's KIP-841 refuses such expansions too) and not recovering
// from an unclean shutdown (invariant 10, recovery.go).
func mayJoinISR(s *coord.Snapshot, id int32) bool {
	vb, ok := s.Brokers[id]
	return ok && !vb.ShuttingDown && !vb.Recovering
}

// brokerAddr is a live broker's advertised address in s.
func brokerAddr(s *coord.Snapshot, id int32) (string, bool) {
	vb, ok := s.Brokers[id]
	if !ok {
		return "", false
	}
	return net.JoinHostPort(vb.Host, strconv.Itoa(int(vb.Port))), true
}
