package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A campaign runs a nemesis (random faults, one at a time, each held for a
// random time and healed) against a cluster while an acks=all producer
// writes unique values and a consumer reads along, then heals everything,
// reads every partition back and checks the history (see Check).

// FaultKind names a fault the nemesis injects.
type FaultKind string

// The nemesis's faults. Each takes at most one broker away at a time, so a
// topic with replication factor 3 and min.insync.replicas 2 must keep every
// acknowledged write.
const (
	// FaultKillLeader is kill -9 of the leader of a random partition.
	FaultKillLeader FaultKind = "kill-leader"
	// FaultKillRandom is kill -9 of a random broker.
	FaultKillRandom FaultKind = "kill-random"
	// FaultKillController is kill -9 of the controller.
	FaultKillController FaultKind = "kill-controller"
	// FaultPause freezes a random broker for longer than the session
	// timeout (it loses its registration, exits once thawed and is
	// started again by the supervisor).
	FaultPause FaultKind = "pause"
	// FaultIsolate disconnects a random broker from the network.
	FaultIsolate FaultKind = "isolate"
	// FaultRollingRestart restarts every broker in turn with SIGTERM,
	// waiting for full ISRs after each.
	FaultRollingRestart FaultKind = "rolling-restart"
	// FaultKillCoordinator is kill -9 of the campaign group's
	// coordinator (a random broker when the campaign runs no group).
	FaultKillCoordinator FaultKind = "kill-coordinator"
	// FaultPartitionHalves splits the brokers into a minority and a
	// majority that cannot reach each other (every port); clients reach
	// both.
	FaultPartitionHalves FaultKind = "partition-halves"
	// FaultPartitionBridge splits the brokers into two halves that
	// cannot reach each other, except through one broker that reaches
	// both (with three brokers: two brokers cut from each other).
	FaultPartitionBridge FaultKind = "partition-bridge"
	// FaultIsolateLeaderKafka cuts a partition's leader from the other
	// brokers on the Kafka port only: it keeps its etcd session (and its
	// leadership) while its followers cannot fetch.
	FaultIsolateLeaderKafka FaultKind = "isolate-leader-kafka"
	// FaultIsolateEtcd cuts a random broker from the other etcd members
	// only (their peer port): it loses its registration while it still
	// reaches the other brokers and the clients.
	FaultIsolateEtcd FaultKind = "isolate-etcd"
	// FaultFlapping cuts and heals random pairs of brokers every 0.2 to
	// 1 s for a few seconds.
	FaultFlapping FaultKind = "partition-flapping"
	// FaultLoseTail is kill -9 of a random broker that also loses the
	// tail of every log (Node.LoseTail, up to 64 KiB each): data its disk
	// never got. One broker at a time, which is min.insync.replicas-1.
	FaultLoseTail FaultKind = "lose-unflushed"

	// The faults that move leadership while every broker stays alive
	// (leadership.go, compacted.go).

	// FaultPreferredElection makes partitions led by non-preferred
	// replicas (a controlled restart of a random broker, then a wait for
	// full ISRs) and runs a preferred-leader election (ElectLeaders,
	// PREFERRED) for every partition of the workload topic, the compacted
	// topic and __consumer_offsets, under load.
	FaultPreferredElection FaultKind = "preferred-election"
	// FaultAutoRebalance unbalances leadership the same way and waits for
	// the controller's automatic rebalance
	// (leader.imbalance.check.interval.seconds, short in campaigns) to
	// give every partition back to its preferred replica; not within two
	// intervals and 15 s is a liveness failure.
	FaultAutoRebalance FaultKind = "auto-rebalance"
	// FaultControlledRestart is SIGTERM (a controlled shutdown, which
	// hands leaderships over) of the leader of a random partition or of
	// the group coordinator, down for a while, then started again.
	FaultControlledRestart FaultKind = "controlled-restart"
	// FaultSlowFollower slows a follower of a random partition: its
	// process stopped and resumed (SIGSTOP, SIGCONT) every 0.2-0.45 s for
	// 4.5-8 s; it stays registered and in the ISRs, so acks=all waits are
	// long.
	FaultSlowFollower FaultKind = "slow-follower"
	// FaultCompactedFollower stops a follower of the compacted topic (kill
	// -9, or frozen past its session timeout) until the leader dropped it
	// from the ISR and compacted twice, then starts it again: it must
	// catch up through the compacted log and rejoin the ISR.
	FaultCompactedFollower FaultKind = "compacted-follower"

	// The faults aimed at the transactional workload (txns.go).

	// FaultKillTxnCoordinator is kill -9 of the transaction coordinator of
	// one of the workload's transactional ids (a random broker when the
	// campaign runs no transactions), in the middle of its transactions.
	FaultKillTxnCoordinator FaultKind = "kill-txn-coordinator"
	// FaultKillTxnLeader is kill -9 of the leader of a random partition of
	// the transactional topic, while transactions write to it and markers
	// are being written.
	FaultKillTxnLeader FaultKind = "kill-txn-leader"
)

// AllFaults is the default fault mix, each kind equally likely.
var AllFaults = []FaultKind{FaultKillLeader, FaultKillRandom, FaultKillController, FaultKillCoordinator,
	FaultPause, FaultIsolate, FaultRollingRestart, FaultPartitionHalves, FaultPartitionBridge,
	FaultIsolateLeaderKafka, FaultIsolateEtcd, FaultFlapping, FaultLoseTail,
	FaultPreferredElection, FaultAutoRebalance, FaultControlledRestart, FaultSlowFollower, FaultCompactedFollower,
	FaultKillTxnCoordinator, FaultKillTxnLeader}

// CampaignRebalanceInterval is the campaign cluster's
// leader.imbalance.check.interval.seconds.
const CampaignRebalanceInterval = 5 * time.Second

// CampaignOverrides are the campaign cluster's broker settings beyond the
// harness's: automatic leader rebalancing every CampaignRebalanceInterval
// at any imbalance, compaction of a compacted partition at most every
// second, and transaction settings for the transactional workload. (auto.leader.rebalance.enable is set although docs/config.md
// gives true as its default: the broker's DefaultConfig leaves it off.)
var CampaignOverrides = []string{
	"auto.leader.rebalance.enable=true",
	fmt.Sprintf("leader.imbalance.check.interval.seconds=%d", int(CampaignRebalanceInterval/time.Second)),
	"leader.imbalance.per.broker.percentage=0",
	"log.cleaner.backoff.ms=1000",
	// Transactions: timed-out transactions aborted within a second of
	// their timeout, and a smaller __transaction_state than the default
	// 50 partitions, for three brokers on two cores.
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
	"transaction.state.log.num.partitions=8",
}

// ParseFaults parses a comma-separated fault mix ("kill-leader,pause");
// "all" or "" is AllFaults. A kind may repeat, to weigh it.
func ParseFaults(s string) ([]FaultKind, error) {
	if s == "" || s == "all" {
		return AllFaults, nil
	}
	var out []FaultKind
	for _, f := range strings.Split(s, ",") {
		k := FaultKind(strings.TrimSpace(f))
		if !slices.Contains(AllFaults, k) {
			return nil, fmt.Errorf("unknown fault %q (known: %v)", k, AllFaults)
		}
		out = append(out, k)
	}
	return out, nil
}

// Event is one entry of a campaign's history.
type Event struct {
	At time.Time
	// What is "inject", "heal", "healthy", "unhealthy", "restarted" or "note".
	What   string
	Fault  FaultKind
	Broker int32
	Detail string
}

// History is a campaign's timeline of injections, heals and observations;
// safe for concurrent use.
type History struct {
	mu     sync.Mutex
	Start  time.Time
	events []Event
}

// NewHistory starts a history at now.
func NewHistory() *History { return &History{Start: time.Now()} }

// Add records an event at now.
func (h *History) Add(what string, kind FaultKind, broker int32, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, Event{At: time.Now(), What: what, Fault: kind, Broker: broker, Detail: fmt.Sprintf(format, args...)})
}

// Events returns a copy of the events, in order.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// Rel formats t relative to the history's start (and in UTC).
func (h *History) Rel(t time.Time) string {
	return fmt.Sprintf("+%7.3fs (%s)", t.Sub(h.Start).Seconds(), t.UTC().Format("15:04:05.000"))
}

func (h *History) format(e Event) string {
	s := h.Rel(e.At) + " " + e.What
	if e.Fault != "" {
		s += " " + string(e.Fault)
	}
	if e.Broker > 0 {
		s += fmt.Sprintf(" broker %d", e.Broker)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// String is the whole history, one event a line.
func (h *History) String() string {
	var b strings.Builder
	for _, e := range h.Events() {
		b.WriteString("  " + h.format(e) + "\n")
	}
	return b.String()
}

// Around is the history from the last injection before `before` ahead of
// t until `after` past t (at least the fault in force at t, if any, and
// what followed shortly), with a marker line at t.
func (h *History) Around(t time.Time, mark string, before, after time.Duration) string {
	evs := h.Events()
	from := t.Add(-before)
	// Widen the window back to the injection of the fault that was in
	// force (or last injected) before t.
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].At.Before(t) && evs[i].What == "inject" {
			if evs[i].At.Before(from) {
				from = evs[i].At
			}
			break
		}
	}
	var b strings.Builder
	marked := false
	for _, e := range evs {
		if e.At.Before(from) || e.At.After(t.Add(after)) {
			continue
		}
		if !marked && e.At.After(t) {
			b.WriteString("  " + h.Rel(t) + " >>> " + mark + "\n")
			marked = true
		}
		b.WriteString("  " + h.format(e) + "\n")
	}
	if !marked {
		b.WriteString("  " + h.Rel(t) + " >>> " + mark + "\n")
	}
	return b.String()
}

// Read is one record the live consumer read.
type Read struct {
	Partition int32
	Offset    int64
	Value     string
	At        time.Time
}

// HighWatermark is one partition's high watermark as a fetch response
// from the partition's leader told the consumer.
type HighWatermark struct {
	Partition int32
	HW        int64
	At        time.Time
}

// Consumer reads assigned partitions of a topic from their start while a
// campaign runs, recording every record with its offset and time, and
// every high watermark the fetch responses carry.
type Consumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	reads  []Read
	hws    []HighWatermark
	errs   int
	last   error
}

// StartConsumer starts reading partitions 0..partitions-1 of topic from
// their start (no group: assigned partitions) until Stop, with the client
// options opts (such as an isolation level).
func (c *Cluster) StartConsumer(topic string, partitions int32, opts ...kgo.Opt) *Consumer {
	c.t.Helper()
	assign := map[int32]kgo.Offset{}
	for p := range partitions {
		assign[p] = kgo.NewOffset().AtStart()
	}
	ctx, cancel := context.WithCancel(context.Background())
	co := &Consumer{
		cl:     c.Client(append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign})}, opts...)...),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go co.run(ctx)
	return co
}

func (co *Consumer) run(ctx context.Context) {
	defer close(co.done)
	for ctx.Err() == nil {
		fs := co.cl.PollFetches(ctx)
		now := time.Now()
		co.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				co.errs++
				co.last = err
			}
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Err == nil && p.HighWatermark >= 0 {
				co.hws = append(co.hws, HighWatermark{Partition: p.Partition, HW: p.HighWatermark, At: now})
			}
			for _, r := range p.Records {
				co.reads = append(co.reads, Read{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: now})
			}
		})
		co.mu.Unlock()
	}
}

// Count is the number of records read so far.
func (co *Consumer) Count() int {
	co.mu.Lock()
	defer co.mu.Unlock()
	return len(co.reads)
}

// Stop stops the consumer and returns what it read, in order, with the
// number of fetch errors it saw and the last one.
func (co *Consumer) Stop() (reads []Read, errs int, last error) {
	co.cancel()
	<-co.done
	co.mu.Lock()
	defer co.mu.Unlock()
	return append([]Read(nil), co.reads...), co.errs, co.last
}

// HighWatermarks returns the high watermarks the consumer was told, in
// order.
func (co *Consumer) HighWatermarks() []HighWatermark {
	co.mu.Lock()
	defer co.mu.Unlock()
	return append([]HighWatermark(nil), co.hws...)
}

// CheckHighWatermarks reports "hw-regressed" when a partition's high
// watermark, as fetch responses told a client, went below one the client
// was told before: what was committed must stay committed (a new leader
// must not answer with a high watermark below its predecessor's).
func CheckHighWatermarks(hws []HighWatermark) []Anomaly {
	var out []Anomaly
	top := map[int32]HighWatermark{}
	for _, h := range hws {
		if prev, ok := top[h.Partition]; ok && h.HW < prev.HW {
			out = append(out, Anomaly{"hw-regressed", h.At, fmt.Sprintf("partition %d high watermark %d after %d (told at %s)",
				h.Partition, h.HW, prev.HW, prev.At.UTC().Format("15:04:05.000"))})
			continue
		}
		top[h.Partition] = h
	}
	return out
}

// Anomaly is one violated check.
type Anomaly struct {
	// Check is "lost", "duplicate", "offset-conflict", "non-monotonic"
	// or "read-truncated".
	Check string
	// At is the time the evidence relates to (the acknowledgement or the
	// read).
	At     time.Time
	Detail string
}

// Check checks a campaign's outcome: acked is every acknowledgement,
// final every partition's log read back after healing, reads what the
// live consumer read. It reports
//   - lost: an acknowledged value not in the final log at its offset;
//   - duplicate: a value stored at more than one offset (every value is
//     written once; acknowledged or not);
//   - offset-conflict: two values acknowledged at one offset;
//   - non-monotonic: the consumer read a partition's offsets out of
//     (strictly increasing) order;
//   - read-truncated: the consumer read a value at an offset where the
//     final log has another value or none (it read data that was later
//     truncated away).
func Check(acked map[string]Ack, final map[int32]map[int64]string, reads []Read) []Anomaly {
	var out []Anomaly
	// Where each value is stored in the final log.
	stored := map[string][]Ack{}
	for p, byOff := range final {
		for o, v := range byOff {
			stored[v] = append(stored[v], Ack{Partition: p, Offset: o})
		}
	}
	byPos := map[Ack]string{}
	for _, v := range slices.Sorted(maps.Keys(acked)) {
		a := acked[v]
		pos := Ack{Partition: a.Partition, Offset: a.Offset}
		if other, ok := byPos[pos]; ok {
			out = append(out, Anomaly{"offset-conflict", a.At, fmt.Sprintf("%s and %s both acknowledged at partition %d offset %d (final log: %q)",
				other, v, a.Partition, a.Offset, final[a.Partition][a.Offset])})
		}
		byPos[pos] = v
		if got, ok := final[a.Partition][a.Offset]; !ok || got != v {
			where := "nothing"
			if ok {
				where = fmt.Sprintf("%q", got)
			}
			out = append(out, Anomaly{"lost", a.At, fmt.Sprintf("%s acknowledged at partition %d offset %d, final log has %s there; stored at %s",
				v, a.Partition, a.Offset, where, positions(stored[v]))})
		}
	}
	// Every value is written once: one stored twice was duplicated,
	// acknowledged or not.
	var dups []string
	for v, at := range stored {
		if len(at) > 1 {
			dups = append(dups, v)
		}
	}
	sort.Strings(dups)
	for _, v := range dups {
		note, at := "not acknowledged", time.Time{}
		if a, ok := acked[v]; ok {
			note, at = fmt.Sprintf("acknowledged at partition %d offset %d", a.Partition, a.Offset), a.At
		}
		out = append(out, Anomaly{"duplicate", at, fmt.Sprintf("%s (%s) stored %d times: at %s", v, note, len(stored[v]), positions(stored[v]))})
	}
	last := map[int32]Read{}
	for _, r := range reads {
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev.Offset {
			out = append(out, Anomaly{"non-monotonic", r.At, fmt.Sprintf("consumer read partition %d offset %d (%s) after offset %d (%s, read at %s)",
				r.Partition, r.Offset, r.Value, prev.Offset, prev.Value, prev.At.UTC().Format("15:04:05.000"))})
		}
		last[r.Partition] = r
		if m := readMismatch(acked, final, r.Partition, r.Offset, r.Value); m != "" {
			out = append(out, Anomaly{"read-truncated", r.At, fmt.Sprintf("consumer read %s at partition %d offset %d %s",
				r.Value, r.Partition, r.Offset, m)})
		}
	}
	return out
}

// readMismatch describes how the final log contradicts a read of value v
// at partition p, offset o ("" if it holds v there).
func readMismatch(acked map[string]Ack, final map[int32]map[int64]string, p int32, o int64, v string) string {
	got, ok := final[p][o]
	if ok && got == v {
		return ""
	}
	where := "nothing"
	if ok {
		where = fmt.Sprintf("%q", got)
	}
	ackNote := "not acknowledged"
	if a, ok := acked[v]; ok {
		ackNote = fmt.Sprintf("acknowledged at partition %d offset %d", a.Partition, a.Offset)
	}
	return fmt.Sprintf("(%s), final log has %s there", ackNote, where)
}

// CheckFailedWrites reports "failed-write-visible": a write the producer
// was told definitely failed (a non-retriable Kafka error: the broker
// refused the record) that the final log holds or a consumer read. Other
// failures (timeouts, retries exhausted) are indeterminate: the record may
// or may not be stored; their number stored is returned.
func CheckFailedWrites(failed map[string]error, final map[int32]map[int64]string, reads []Read) (out []Anomaly, indeterminateStored int) {
	where := map[string]string{}
	for p, byOff := range final {
		for o, v := range byOff {
			if _, ok := failed[v]; ok {
				where[v] = fmt.Sprintf("in the final log at partition %d offset %d", p, o)
			}
		}
	}
	readAt := map[string]Read{}
	for _, r := range reads {
		if _, ok := failed[r.Value]; ok {
			readAt[r.Value] = r
		}
	}
	for _, v := range slices.Sorted(maps.Keys(failed)) {
		var ke *kerr.Error
		definite := errors.As(failed[v], &ke) && !ke.Retriable
		r, read := readAt[v]
		stored, inLog := where[v]
		if !definite {
			if inLog {
				indeterminateStored++
			}
			continue
		}
		switch {
		case read:
			out = append(out, Anomaly{"failed-write-visible", r.At, fmt.Sprintf("%s failed (%v) but the consumer read it at partition %d offset %d", v, failed[v], r.Partition, r.Offset)})
		case inLog:
			out = append(out, Anomaly{"failed-write-visible", time.Time{}, fmt.Sprintf("%s failed (%v) but is %s", v, failed[v], stored)})
		}
	}
	return out, indeterminateStored
}

// WriteOps writes every operation of a run, one a line, ordered by time,
// tab-separated: time (since the history's start), who, what, partition,
// offset, value, outcome. "producer ack" and "producer fail" are the
// writes' outcomes (a failed write has no offset, -1, and is listed at the
// start: its time is not recorded), "keyed ack" the keyed producer's
// acknowledgements (compacted topic), "consumer read" the
// assigned consumer's reads, "member N read|commit|assigned|revoked|lost"
// the group's.
func WriteOps(path string, h *History, acked map[string]Ack, failed map[string]error, reads []Read, g GroupHistory, keyed map[string]Ack) error {
	type op struct {
		at   time.Time
		line string
	}
	var ops []op
	add := func(at time.Time, who, what string, p int32, o int64, v, outcome string) {
		ops = append(ops, op{at, fmt.Sprintf("%.3f\t%s\t%s\t%d\t%d\t%s\t%s", at.Sub(h.Start).Seconds(), who, what, p, o, v, outcome)})
	}
	for v, a := range acked {
		add(a.At, "producer", "ack", a.Partition, a.Offset, v, "ok")
	}
	for v, err := range failed {
		add(h.Start, "producer", "fail", -1, -1, v, err.Error())
	}
	for v, a := range keyed {
		add(a.At, "keyed", "ack", a.Partition, a.Offset, v, "ok")
	}
	for _, r := range reads {
		add(r.At, "consumer", "read", r.Partition, r.Offset, r.Value, "ok")
	}
	for _, r := range g.Reads {
		add(r.At, fmt.Sprintf("member %d", r.Member), "read", r.Partition, r.Offset, r.Value, fmt.Sprintf("generation %d", r.Generation))
	}
	for _, c := range g.Commits {
		outcome := "ok"
		if c.Err != nil {
			outcome = c.Err.Error()
		}
		add(c.At, fmt.Sprintf("member %d", c.Member), "commit", c.Partition, c.Offset, "", fmt.Sprintf("generation %d: %s", c.Generation, outcome))
	}
	for _, ch := range g.Changes {
		for _, p := range ch.Partitions {
			add(ch.At, fmt.Sprintf("member %d", ch.Member), ch.What, p, -1, "", fmt.Sprintf("generation %d", ch.Generation))
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].at.Before(ops[j].at) })
	var b strings.Builder
	b.WriteString("# seconds\twho\twhat\tpartition\toffset\tvalue\toutcome\n")
	for _, o := range ops {
		b.WriteString(o.line + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func positions(as []Ack) string {
	if len(as) == 0 {
		return "nowhere"
	}
	sort.Slice(as, func(i, j int) bool {
		if as[i].Partition != as[j].Partition {
			return as[i].Partition < as[j].Partition
		}
		return as[i].Offset < as[j].Offset
	})
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%d/%d", a.Partition, a.Offset))
	}
	return strings.Join(s, ", ")
}

// Report formats anomalies for a failed campaign: a count per check, then
// each of the first few anomalies of each check with the history around
// its time.
func Report(h *History, anomalies []Anomaly, perCheck int) string {
	if len(anomalies) == 0 {
		return "no anomalies"
	}
	count := map[string]int{}
	for _, a := range anomalies {
		count[a.Check]++
	}
	var checks []string
	for c := range count {
		checks = append(checks, fmt.Sprintf("%s: %d", c, count[c]))
	}
	sort.Strings(checks)
	var b strings.Builder
	fmt.Fprintf(&b, "%d anomalies (%s)\n", len(anomalies), strings.Join(checks, ", "))
	shown := map[string]int{}
	for _, a := range anomalies {
		if shown[a.Check] >= perCheck {
			continue
		}
		shown[a.Check]++
		if a.At.IsZero() {
			fmt.Fprintf(&b, "\nVIOLATED %s: %s\n", a.Check, a.Detail)
			continue
		}
		fmt.Fprintf(&b, "\nVIOLATED %s at %s: %s\nhistory around it:\n%s", a.Check, h.Rel(a.At), a.Detail,
			h.Around(a.At, a.Check+" ("+a.Detail+")", 15*time.Second, 5*time.Second))
	}
	return b.String()
}

// Nemesis injects random faults into a cluster, one at a time, recording
// each injection and heal in a history. Its methods must be called from
// the test's goroutine.
type Nemesis struct {
	c     *Cluster
	h     *History
	rnd   *rand.Rand
	topic string
	parts int32
	// Group is the campaign group's name, for FaultKillCoordinator and
	// FaultControlledRestart.
	Group string
	// Compacted is the campaign's compacted topic (one partition), for
	// FaultCompactedFollower; "" if none. WaitHealthy waits for its full
	// ISR too.
	Compacted string
	// RebalanceInterval is the cluster's
	// leader.imbalance.check.interval.seconds (0: no automatic
	// rebalance), for FaultAutoRebalance.
	RebalanceInterval time.Duration
	// TxnTopic is the transactional workload's topic, of TxnPartitions
	// partitions, and TxnIDs its transactional ids, for
	// FaultKillTxnCoordinator and FaultKillTxnLeader; "" if none.
	// WaitHealthy waits for the full ISRs of the topic and of
	// __transaction_state too.
	TxnTopic      string
	TxnPartitions int32
	TxnIDs        []string
	// Latency, if set, describes the workload's acknowledgement latencies
	// between two times (Producer.Latency), for the history of
	// FaultSlowFollower.
	Latency func(from, to time.Time) string
	faults  []FaultKind
	Counts  map[FaultKind]int
	healthy time.Duration
}

// NewNemesis returns a nemesis drawing faults from kinds with rnd; topic
// and its partition count choose partition leaders for FaultKillLeader and
// decide when the cluster is healthy again (every partition with its full
// ISR).
func NewNemesis(c *Cluster, h *History, rnd *rand.Rand, topic string, partitions int32, kinds []FaultKind) *Nemesis {
	c.OnRestart(func(id int32, exit, lastLines string) {
		h.Add("restarted", "", id, "exited on its own (status %s), the supervisor started it again; its last lines:\n      %s",
			exit, strings.ReplaceAll(lastLines, "\n", "\n      "))
	})
	return &Nemesis{c: c, h: h, rnd: rnd, topic: topic, parts: partitions, faults: kinds,
		Counts: map[FaultKind]int{}, healthy: 45 * time.Second}
}

// Run injects faults until d has passed: each is held for a random time,
// healed, and followed by a wait for every ISR to be full again and a
// short quiet spell. It returns an error if the cluster did not heal.
func (nm *Nemesis) Run(d time.Duration) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		kind := nm.faults[nm.rnd.IntN(len(nm.faults))]
		nm.Counts[kind]++
		if err := nm.inject(kind); err != nil {
			return err
		}
		if err := nm.WaitHealthy(nm.healthy); err != nil {
			return err
		}
		quiet := time.Duration(500+nm.rnd.IntN(1500)) * time.Millisecond
		if time.Now().Add(quiet).After(end) {
			break
		}
		time.Sleep(quiet)
	}
	return nil
}

// hold is how long a fault lasts: 1.5 to 5 s.
func (nm *Nemesis) hold() time.Duration {
	return time.Duration(1500+nm.rnd.IntN(3500)) * time.Millisecond
}

// partitionHold is how long a network fault lasts: hold, and half the time
// the session timeout more (the cut-off brokers lose their registrations).
func (nm *Nemesis) partitionHold() time.Duration {
	h := nm.hold()
	if nm.rnd.IntN(2) == 0 {
		h += nm.c.SessionTimeout
	}
	return h
}

func (nm *Nemesis) randomBroker() *Node { return nm.c.Nodes[nm.rnd.IntN(len(nm.c.Nodes))] }

func (nm *Nemesis) inject(kind FaultKind) error {
	switch kind {
	case FaultKillLeader, FaultKillRandom, FaultKillController, FaultKillCoordinator, FaultKillTxnCoordinator, FaultKillTxnLeader:
		var victim *Node
		detail := "random broker"
		switch kind {
		case FaultKillLeader, FaultKillTxnLeader:
			topic, parts := nm.topic, nm.parts
			if kind == FaultKillTxnLeader && nm.TxnTopic != "" {
				topic, parts = nm.TxnTopic, nm.TxnPartitions
			}
			p := nm.rnd.Int32N(parts)
			if st, err := nm.c.partitionState(topic, p); err == nil && st.Leader > 0 {
				victim = nm.c.Node(st.Leader)
				detail = fmt.Sprintf("leader of %s/%d (epoch %d)", topic, p, st.LeaderEpoch)
			} else {
				nm.h.Add("note", kind, 0, "leader of %s/%d unknown (%v), killing a random broker", topic, p, err)
			}
		case FaultKillTxnCoordinator:
			if len(nm.TxnIDs) == 0 {
				break
			}
			id := nm.TxnIDs[nm.rnd.IntN(len(nm.TxnIDs))]
			if node, err := nm.c.txnCoordinator(id); err == nil && node > 0 {
				victim = nm.c.Node(node)
				detail = "transaction coordinator of " + id
			} else {
				nm.h.Add("note", kind, 0, "transaction coordinator of %s unknown (%v), killing a random broker", id, err)
			}
		case FaultKillController:
			if id, err := nm.controller(); err == nil && id > 0 {
				victim = nm.c.Node(id)
				detail = "controller"
			} else {
				nm.h.Add("note", kind, 0, "controller unknown (%v), killing a random broker", err)
			}
		case FaultKillCoordinator:
			if nm.Group == "" {
				break
			}
			if id, err := nm.c.GroupCoordinator(nm.Group); err == nil && id > 0 {
				victim = nm.c.Node(id)
				detail = "coordinator of group " + nm.Group
			} else {
				nm.h.Add("note", kind, 0, "coordinator of %s unknown (%v), killing a random broker", nm.Group, err)
			}
		}
		if victim == nil {
			victim = nm.randomBroker()
		}
		hold := nm.hold()
		nm.h.Add("inject", kind, victim.ID, "kill -9 of the %s, for %v", detail, hold)
		victim.Kill()
		time.Sleep(hold)
		victim.Start()
		nm.h.Add("heal", kind, victim.ID, "started again")
	case FaultPause:
		victim := nm.randomBroker()
		hold := nm.c.SessionTimeout + nm.hold()
		nm.h.Add("inject", kind, victim.ID, "paused (SIGSTOP of every process) for %v (session timeout %v)", hold, nm.c.SessionTimeout)
		victim.Pause()
		time.Sleep(hold)
		victim.Unpause()
		nm.h.Add("heal", kind, victim.ID, "unpaused")
	case FaultIsolate:
		victim := nm.randomBroker()
		hold := nm.hold()
		if nm.rnd.IntN(2) == 0 {
			// Sometimes longer than the session timeout: the broker
			// loses its registration and exits; the supervisor starts
			// it again once it is reconnected.
			hold += nm.c.SessionTimeout
		}
		nm.h.Add("inject", kind, victim.ID, "disconnected from the network for %v", hold)
		victim.Disconnect()
		time.Sleep(hold)
		victim.Connect()
		nm.h.Add("heal", kind, victim.ID, "reconnected")
	case FaultRollingRestart:
		order := nm.rnd.Perm(len(nm.c.Nodes))
		nm.h.Add("inject", kind, 0, "SIGTERM restart of brokers in order %v", ids(nodes(nm.c, order)))
		for _, i := range order {
			n := nm.c.Nodes[i]
			nm.h.Add("note", kind, n.ID, "restarting (SIGTERM)")
			n.Restart()
			nm.h.Add("note", kind, n.ID, "restarted")
			if err := nm.WaitHealthy(nm.healthy); err != nil {
				return err
			}
		}
		nm.h.Add("heal", kind, 0, "every broker restarted")
	case FaultPartitionHalves, FaultPartitionBridge:
		order := nm.rnd.Perm(len(nm.c.Nodes))
		var a, b []*Node
		what := ""
		if kind == FaultPartitionHalves {
			k := len(order) / 2
			a, b = nodes(nm.c, order[:k]), nodes(nm.c, order[k:])
			what = fmt.Sprintf("brokers %v cut from %v", ids(a), ids(b))
		} else {
			bridge, rest := nm.c.Nodes[order[0]], order[1:]
			k := len(rest) / 2
			a, b = nodes(nm.c, rest[:k]), nodes(nm.c, rest[k:])
			what = fmt.Sprintf("brokers %v cut from %v, broker %d reaching both", ids(a), ids(b), bridge.ID)
		}
		hold := nm.partitionHold()
		nm.h.Add("inject", kind, 0, "%s (every port) for %v", what, hold)
		for _, x := range a {
			for _, y := range b {
				nm.c.Cut(x, y, 0)
			}
		}
		time.Sleep(hold)
		nm.c.HealCuts()
		nm.h.Add("heal", kind, 0, "cuts removed")
	case FaultIsolateLeaderKafka:
		p := nm.rnd.Int32N(nm.parts)
		st, err := nm.partition(p)
		if err != nil || st.Leader <= 0 {
			nm.h.Add("note", kind, 0, "leader of %s/%d unknown (%v), skipped", nm.topic, p, err)
			break
		}
		leader := nm.c.Node(st.Leader)
		hold := nm.partitionHold()
		nm.h.Add("inject", kind, leader.ID, "leader of %s/%d (epoch %d) cut from the other brokers on port %d only, for %v", nm.topic, p, st.LeaderEpoch, KafkaPort, hold)
		for _, n := range nm.c.Nodes {
			if n != leader {
				nm.c.Cut(leader, n, KafkaPort)
			}
		}
		time.Sleep(hold)
		nm.c.HealCuts()
		nm.h.Add("heal", kind, leader.ID, "cuts removed")
	case FaultIsolateEtcd:
		victim := nm.randomBroker()
		hold := nm.partitionHold()
		nm.h.Add("inject", kind, victim.ID, "cut from the other etcd members (port %d) only, for %v", etcdPeerPort, hold)
		for _, n := range nm.c.Nodes {
			if n != victim {
				nm.c.Cut(victim, n, etcdPeerPort)
			}
		}
		time.Sleep(hold)
		nm.c.HealCuts()
		nm.h.Add("heal", kind, victim.ID, "cuts removed")
	case FaultFlapping:
		hold := nm.partitionHold()
		nm.h.Add("inject", kind, 0, "random pairs of brokers cut and healed every 0.2-1 s for %v", hold)
		end := time.Now().Add(hold)
		toggles := 0
		for time.Now().Before(end) {
			nm.c.HealCuts()
			if nm.rnd.IntN(2) == 0 {
				pair := nm.rnd.Perm(len(nm.c.Nodes))
				nm.c.Cut(nm.c.Nodes[pair[0]], nm.c.Nodes[pair[1]], 0)
				toggles++
			}
			time.Sleep(time.Duration(200+nm.rnd.IntN(800)) * time.Millisecond)
		}
		nm.c.HealCuts()
		nm.h.Add("heal", kind, 0, "cuts removed after %d cuts", toggles)
	case FaultPreferredElection:
		return nm.preferredElection()
	case FaultAutoRebalance:
		return nm.autoRebalance()
	case FaultControlledRestart:
		nm.controlledRestart()
	case FaultSlowFollower:
		nm.slowFollower()
	case FaultCompactedFollower:
		nm.compactedFollower()
	case FaultLoseTail:
		victim := nm.randomBroker()
		hold := nm.hold()
		victim.Kill()
		lost := victim.LoseTail(nm.rnd, 64<<10)
		nm.h.Add("inject", kind, victim.ID, "kill -9, then log tails cut (%s), down for %v", lost, hold)
		time.Sleep(hold)
		victim.Start()
		nm.h.Add("heal", kind, victim.ID, "started again")
	default:
		return fmt.Errorf("unknown fault %q", kind)
	}
	return nil
}

func nodes(c *Cluster, idx []int) []*Node {
	var out []*Node
	for _, i := range idx {
		out = append(out, c.Nodes[i])
	}
	return out
}

func ids(ns []*Node) []int32 {
	var out []int32
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// partition asks the brokers in turn for partition p's state.
func (nm *Nemesis) partition(p int32) (PartitionState, error) {
	return nm.c.partitionState(nm.topic, p)
}

// partitionState asks the brokers in turn for topic's partition p's
// state.
func (c *Cluster) partitionState(topic string, p int32) (PartitionState, error) {
	var last error
	for _, n := range c.Nodes {
		st, err := n.Partition(topic, p)
		if err == nil {
			return st, nil
		}
		last = err
	}
	return PartitionState{}, last
}

// controller asks the brokers in turn for the controller's id.
func (nm *Nemesis) controller() (int32, error) {
	var last error
	for _, n := range nm.c.Nodes {
		md, err := n.metadata()
		if err == nil && md.ControllerID > 0 {
			return md.ControllerID, nil
		}
		if err == nil {
			err = fmt.Errorf("broker %d: no controller", n.ID)
		}
		last = err
	}
	return 0, last
}

// WaitHealthy waits until every broker sees every partition of the
// workload topic, of the compacted topic (if any), of __consumer_offsets
// (with a group) and of the transactional topic and __transaction_state
// (with transactions) led and with its full replica set in the ISR,
// recording the outcome.
func (nm *Nemesis) WaitHealthy(timeout time.Duration) error {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := nm.c.fullISRs(nm.topic)
		if err == nil && nm.Compacted != "" {
			err = nm.c.fullISRs(nm.Compacted)
		}
		if err == nil && nm.Group != "" {
			err = nm.c.fullISRs(offsetsTopic)
		}
		if err == nil && nm.TxnTopic != "" {
			err = nm.c.fullISRs(nm.TxnTopic)
			if err == nil {
				err = nm.c.fullISRs(txnStateTopic)
			}
		}
		if err == nil {
			nm.h.Add("healthy", "", 0, "every ISR full after %v", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			nm.h.Add("unhealthy", "", 0, "ISRs not full after %v: %v", timeout, err)
			return fmt.Errorf("cluster not healthy %v after healing: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Summary is the per-kind fault count, e.g. "kill-leader=2 pause=1".
func (nm *Nemesis) Summary() string {
	var s []string
	total := 0
	for _, k := range AllFaults {
		if n := nm.Counts[k]; n > 0 {
			s = append(s, fmt.Sprintf("%s=%d", k, n))
			total += n
		}
	}
	return fmt.Sprintf("%d faults (%s)", total, strings.Join(s, " "))
}
