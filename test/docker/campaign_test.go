package docker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDockerCampaign runs fault campaigns (one by default, CI-sized): random
// faults from a fault mix (AllFaults by default: kills of a partition
// leader, a random broker, the controller and the group coordinator; a
// pause longer than the session timeout; a broker off the network; a
// rolling SIGTERM restart; packet-filter partitions: halves, a bridge, the
// leader cut from its followers on the Kafka port only, a broker cut from
// etcd only, flapping; a crash that loses log tails; and leadership moved
// while the brokers stay alive: a preferred-leader election, an automatic
// rebalance, a controlled shutdown and restart, a slowed follower, a
// compacted topic's follower stopped through compactions; kills of a
// transaction coordinator and of a transactional partition's leader), one
// at a time,
// each held for a random time and healed, while an idempotent acks=all
// producer writes unique values to a topic replicated three times
// (min.insync.replicas=2), a consumer reads along (assigned partitions), a
// consumer group of two members reads and commits, a keyed producer
// writes to a compacted topic, and two transactional producers run
// transactions of one to four records on a third topic (RF 3, min ISR 2),
// one in five aborted on purpose, read along by a read_committed consumer.
// Then it heals, waits for full ISRs, reads everything back and checks
// (Check, CheckHighWatermarks, CheckGroup, Cluster.CheckReplicas,
// CheckCompacted, Cluster.CheckCompactedReplicas, Cluster.WaitStable,
// CheckTxns):
//   - every acknowledged value stored exactly once, at its acknowledged
//     offset; no two values acknowledged at one offset;
//   - the consumer's offsets strictly increasing per partition, and
//     nothing any consumer read later replaced or truncated;
//   - the high watermarks the fetch responses told never going back;
//   - every acknowledged value read by the group; no acknowledged commit
//     lost; committed offsets within the log;
//   - on every replica, leader epochs never decreasing and offsets
//     contiguous, and the ISR members' logs byte-identical below the high
//     watermark;
//   - on the compacted topic, every acknowledged value kept at its offset
//     unless a later record of its key is kept, none stored twice, and the
//     ISR members agreeing on every key's latest value below the high
//     watermark;
//   - on the transactional topic, no transaction left open once the
//     faults healed (the last stable offset reaches the high watermark);
//     every committed transaction whole in the read_committed log, exactly
//     once; no aborted record there or read by the read_committed
//     consumer; an indeterminate one (a commit without an answer) whole or
//     absent.
//
// Each run writes its history (every injection and heal, what the
// workloads saw, the checker's report) to a file in SAMSA_CAMPAIGN_OUT
// (default: the system's temporary directory), named in the test log.
//
// Settings, all optional:
//   - SAMSA_CAMPAIGN_DURATION: how long faults are injected per run (a Go
//     duration, default 45s);
//   - SAMSA_CAMPAIGN_RUNS: how many runs (default 1), each on a fresh
//     cluster with the next seed;
//   - SAMSA_CAMPAIGN_SEED: the first run's seed (default: time-based,
//     logged), so a failing run's schedule can be replayed (its timing
//     depends on the machine);
//   - SAMSA_CAMPAIGN_FAULTS: the fault mix, comma-separated FaultKinds
//     (default all);
//   - SAMSA_CAMPAIGN_SECURITY=0: run without security; by default the
//     brokers talk SASL SCRAM to each other and to the workloads, whose
//     user goes through ACL authorization (WithSecurity).
//   - SAMSA_CAMPAIGN_ALLOW_UNHEALED=1: a cluster that does not heal is
//     logged instead of failing the run (to look at safety alone).
func TestDockerCampaign(t *testing.T) {
	duration := 45 * time.Second
	if s := os.Getenv("SAMSA_CAMPAIGN_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SAMSA_CAMPAIGN_DURATION=%q: %v", s, err)
		}
		duration = d
	}
	runs := 1
	if s := os.Getenv("SAMSA_CAMPAIGN_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SAMSA_CAMPAIGN_RUNS=%q: want a positive number", s)
		}
		runs = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SAMSA_CAMPAIGN_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SAMSA_CAMPAIGN_SEED=%q: %v", s, err)
		}
		seed = v
	}
	faults, err := ParseFaults(os.Getenv("SAMSA_CAMPAIGN_FAULTS"))
	if err != nil {
		t.Fatalf("SAMSA_CAMPAIGN_FAULTS: %v", err)
	}
	out := os.Getenv("SAMSA_CAMPAIGN_OUT")
	if out == "" {
		out = filepath.Join(os.TempDir(), "samsa-campaign")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		s := seed + uint64(i)
		t.Run(fmt.Sprintf("seed-%d", s), func(t *testing.T) { runCampaign(t, s, duration, faults, out) })
	}
}

// runCampaign is one campaign run on a fresh cluster.
func runCampaign(t *testing.T, seed uint64, duration time.Duration, faults []FaultKind, outDir string) {
	t.Logf("campaign: %v of faults %v, seed %d (replay: SAMSA_CAMPAIGN_SEED=%d SAMSA_CAMPAIGN_DURATION=%v)", duration, faults, seed, seed, duration)
	const (
		topic      = "campaign"
		group      = "campaign-group"
		partitions = 4
		// compacted is a compacted topic (one partition, small
		// segments) written with keys, for FaultCompactedFollower.
		compacted = "campaign-compacted"
		// txnTopic is written by transactional producers and read
		// with read_committed (txns.go).
		txnTopic     = "campaign-txn"
		txnProducers = 2
	)
	began := time.Now()
	opts := []Option{WithOverrides(CampaignOverrides...)}
	secure := os.Getenv("SAMSA_CAMPAIGN_SECURITY") != "0"
	if secure {
		opts = append(opts, WithSecurity())
	}
	c := Start(t, 3, opts...)
	c.CreateTopic(topic, partitions, 3, rf3)
	c.CreateTopic(compacted, 1, 3, CompactedTopicConfig)
	c.CreateTopic(txnTopic, partitions, 3, rf3)
	t.Logf("3 brokers up (%v, secured: %v), topic %s (%d partitions, RF 3, min.insync.replicas 2) and compacted topic %s ready in %v",
		CampaignOverrides, secure, topic, partitions, compacted, time.Since(began).Round(time.Millisecond))

	h := NewHistory()
	nm := NewNemesis(c, h, rand.New(rand.NewPCG(seed, seed^0x5a3a5a3a)), topic, partitions, faults)
	nm.Group = group
	nm.Compacted = compacted
	nm.RebalanceInterval = CampaignRebalanceInterval
	nm.TxnTopic, nm.TxnPartitions = txnTopic, partitions
	p := c.StartProducer(topic, 4*time.Millisecond)
	nm.Latency = p.Latency
	kp := c.StartKeyedProducer(compacted, 10*time.Millisecond, 64)
	co := c.StartConsumer(topic, partitions)
	g := c.StartGroup(topic, group, 2)
	tw := c.StartTxnWorkload(txnTopic, partitions, txnProducers, seed)
	nm.TxnIDs = tw.IDs()
	tco := c.StartConsumer(txnTopic, partitions, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	h.Add("note", "", 0, "producer, keyed producer (%s, 64 keys), consumer, group of 2, %d transactional producers (%s) and a read_committed consumer started",
		compacted, txnProducers, txnTopic)
	p.WaitAcked(t, -1, 200, 30*time.Second)
	kp.WaitAcked(t, -1, 100, 30*time.Second)
	tw.WaitCommitted(t, 20, 60*time.Second)
	// The group created __consumer_offsets and the transactional
	// producers __transaction_state; the nemesis waits for their full
	// ISRs too.
	c.WaitFor(60*time.Second, func() error { return c.fullISRs(offsetsTopic) })
	c.WaitFor(60*time.Second, func() error { return c.fullISRs(txnStateTopic) })
	h.Add("note", "", 0, "campaign starts (%d acknowledged so far)", p.Acked(-1))

	// A cluster that does not heal (full ISRs) is a liveness failure
	// (INVARIANTS.md 14): it ends the fault schedule, the safety checks
	// still run, and the test fails, unless SAMSA_CAMPAIGN_ALLOW_UNHEALED=1.
	liveness := t.Errorf
	if os.Getenv("SAMSA_CAMPAIGN_ALLOW_UNHEALED") == "1" {
		liveness = t.Logf
	}
	runErr := nm.Run(duration)
	if runErr != nil {
		liveness("LIVENESS FAILURE (nemesis): %v", runErr)
	}
	h.Add("note", "", 0, "campaign ends: %s", nm.Summary())

	// Heal everything (the nemesis heals each fault before the next; this
	// is for a run it ended early) and wait until the cluster is whole.
	c.HealCuts()
	for _, n := range c.Nodes {
		n.mu.Lock()
		down, disconnected, paused := n.down, n.disconnected, n.paused
		n.mu.Unlock()
		if paused {
			n.Unpause()
		}
		if disconnected {
			n.Connect()
		}
		if down {
			n.Start()
		}
	}
	wait := 2 * time.Minute
	if runErr != nil {
		// It already waited in vain.
		wait = 20 * time.Second
	}
	healthyErr := nm.WaitHealthy(wait)
	if healthyErr != nil {
		liveness("LIVENESS FAILURE (after the campaign): %v", healthyErr)
	}
	// Some writes after the campaign, to see the cluster take writes.
	if healthyErr == nil {
		p.WaitAcked(t, -1, 100, 60*time.Second)
	}
	acked, sent, failed := p.Stop(t)
	h.Add("note", "", 0, "producer stopped: %d sent, %d acknowledged, %d failed", sent, len(acked), failed)
	kacked, ksent, kfailed := kp.Stop(t)
	h.Add("note", "", 0, "keyed producer stopped: %d sent, %d acknowledged, %d failed", ksent, len(kacked), kfailed)
	txns, txnProblems := tw.Stop()
	h.Add("note", "", 0, "transactional producers stopped: %s; %d clients made (InitProducerId each) %s", TxnSummary(txns), tw.Clients(), strings.Join(txnProblems, "; "))
	// Let the consumer and the group catch up with the acknowledged
	// records (what they miss is reported below).
	deadline := time.Now().Add(60 * time.Second)
	for (co.Count() < len(acked) || g.Unread(acked) > 0) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	reads, fetchErrs, lastErr := co.Stop()
	hws := co.HighWatermarks()
	h.Add("note", "", 0, "consumer stopped: %d records read, %d fetch errors (last: %v), %d high watermarks seen", len(reads), fetchErrs, lastErr, len(hws))
	gh := g.Stop()
	h.Add("note", "", 0, "group stopped: %s", gh.Summary())
	var committed map[int32]int64
	c.WaitFor(30*time.Second, func() (err error) {
		committed, err = c.CommittedOffsets(group, topic)
		return err
	})

	final := c.ReadAll(topic)
	stored := 0
	for _, byOff := range final {
		stored += len(byOff)
	}
	anomalies := Check(acked, final, reads)
	anomalies = append(anomalies, CheckHighWatermarks(hws)...)
	failedVisible, failedStored := CheckFailedWrites(p.Failed(), final, reads)
	anomalies = append(anomalies, failedVisible...)
	if failed > 0 {
		h.Add("note", "", 0, "%d of %d failed writes are in the final log (indeterminate failures)", failedStored, failed)
	}
	anomalies = append(anomalies, CheckGroup(acked, final, gh, committed)...)
	if err := c.CheckReplicas(topic, partitions, 60*time.Second); err != nil {
		anomalies = append(anomalies, Anomaly{Check: "replicas", Detail: err.Error()})
	}
	kfinal := c.ReadAll(compacted)
	kstored := 0
	for _, byOff := range kfinal {
		kstored += len(byOff)
	}
	kAnomalies, kdups := CheckCompacted(kacked, kfinal)
	anomalies = append(anomalies, kAnomalies...)
	if len(kdups) > 0 {
		h.Add("note", "", 0, "compacted topic: %d values stored twice (the keyed producer is not idempotent; retried writes), e.g. %s",
			len(kdups), strings.Join(kdups[:min(5, len(kdups))], "; "))
	}
	kFailedVisible, _ := CheckFailedWrites(kp.Failed(), kfinal, nil)
	anomalies = append(anomalies, kFailedVisible...)
	if err := c.CheckCompactedReplicas(compacted, 1, 60*time.Second); err != nil {
		anomalies = append(anomalies, Anomaly{Check: "compacted-replicas", Detail: err.Error()})
	}
	// No transaction may be left open once the faults healed, then the
	// transactional topic is read with read_committed.
	tstored := 0
	if err := c.WaitStable(txnTopic, txnStableTimeout); err != nil {
		anomalies = append(anomalies, Anomaly{Check: "txn-hanging", At: time.Now(), Detail: err.Error()})
		tco.Stop()
	} else {
		tfinal := c.ReadCommitted(txnTopic, partitions)
		for _, byOff := range tfinal {
			tstored += len(byOff)
		}
		deadline := time.Now().Add(30 * time.Second)
		for tco.Count() < tstored && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		treads, terrs, tlast := tco.Stop()
		h.Add("note", "", 0, "read_committed consumer stopped: %d records read, %d fetch errors (last: %v); final read_committed log %d records", len(treads), terrs, tlast, tstored)
		anomalies = append(anomalies, CheckTxns(txns, tfinal, treads)...)
		for _, a := range CheckHighWatermarks(tco.HighWatermarks()) {
			a.Check = "txn-" + a.Check
			anomalies = append(anomalies, a)
		}
	}
	if err := c.CheckReplicas(txnTopic, partitions, 60*time.Second); err != nil {
		anomalies = append(anomalies, Anomaly{Check: "txn-replicas", Detail: err.Error()})
	}
	h.Add("note", "", 0, "final log: %d records, compacted topic %d records (%d acknowledged writes), transactional topic %d records read_committed; %d anomalies",
		stored, kstored, len(kacked), tstored, len(anomalies))

	summary := fmt.Sprintf("seed %d, %v of faults: %s; producer %d sent, %d acknowledged, %d failed; consumer read %d (%d fetch errors); group: %s; final log %d records; keyed producer %d sent, %d acknowledged, %d failed, compacted log %d records; %s, read_committed log %d records; anomalies %d; run took %v",
		seed, duration, nm.Summary(), sent, len(acked), failed, len(reads), fetchErrs, gh.Summary(), stored, ksent, len(kacked), kfailed, kstored, TxnSummary(txns), tstored, len(anomalies), time.Since(began).Round(time.Second))
	for _, n := range c.Nodes {
		if r := n.Restarts(); r > 0 {
			summary += fmt.Sprintf("; broker %d restarted by the supervisor %d times", n.ID, r)
		}
	}
	report := Report(h, anomalies, 5)
	file := filepath.Join(outDir, fmt.Sprintf("campaign-%d.txt", seed))
	text := "summary: " + summary + "\n\nhistory:\n" + h.String() + "\nchecker: " + report + "\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Errorf("write the history: %v", err)
	}
	opsFile := filepath.Join(outDir, fmt.Sprintf("campaign-%d-ops.tsv", seed))
	if err := WriteOps(opsFile, h, acked, p.Failed(), reads, gh, kacked); err != nil {
		t.Errorf("write the operations: %v", err)
	}
	txnsFile := filepath.Join(outDir, fmt.Sprintf("campaign-%d-txns.tsv", seed))
	if err := WriteTxns(txnsFile, txns); err != nil {
		t.Errorf("write the transactions: %v", err)
	}
	t.Logf("history:\n%s", h)
	t.Logf("summary: %s", summary)
	t.Logf("history and report written to %s, every operation to %s, every transaction to %s", file, opsFile, txnsFile)
	if len(anomalies) > 0 {
		t.Errorf("campaign with seed %d failed: %s", seed, report)
	}
	if len(acked) == 0 {
		t.Errorf("no record acknowledged")
	}
	if n := countOutcome(txns, TxnCommitted); n == 0 {
		t.Errorf("no transaction committed")
	}
}

// TestCampaignCheck checks the checker on a made-up history (no Docker).
func TestCampaignCheck(t *testing.T) {
	t0 := time.Now()
	acked := map[string]Ack{
		"a": {0, 0, t0}, "b": {0, 1, t0}, "c": {0, 2, t0}, "d": {1, 0, t0}, "e": {1, 0, t0}, "f": {1, 1, t0},
	}
	final := map[int32]map[int64]string{
		0: {0: "a", 1: "b", 2: "x", 3: "b"},
		1: {0: "d", 1: "f", 2: "g"},
	}
	reads := []Read{
		{0, 0, "a", t0}, {0, 1, "b", t0}, {0, 2, "y", t0}, {0, 1, "b", t0},
		{1, 0, "d", t0}, {1, 1, "f", t0}, {1, 2, "g", t0},
	}
	got := map[string]int{}
	for _, a := range Check(acked, final, reads) {
		got[a.Check]++
	}
	// c lost (x at 0/2), e lost (d at 1/0), d and e both at 1/0, b at 0/1
	// and 0/3, the consumer read 0/1 after 0/2 and y at 0/2.
	want := map[string]int{"lost": 2, "offset-conflict": 1, "duplicate": 1, "non-monotonic": 1, "read-truncated": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("anomalies %v, want %v", got, want)
	}
	if len(Check(map[string]Ack{"a": {0, 0, t0}}, map[int32]map[int64]string{0: {0: "a"}}, []Read{{0, 0, "a", t0}})) != 0 {
		t.Errorf("anomalies in a clean history")
	}
	h := NewHistory()
	h.Add("inject", FaultKillLeader, 2, "kill -9")
	r := Report(h, Check(acked, final, reads), 5)
	for _, s := range []string{"VIOLATED lost", "inject kill-leader broker 2", ">>> lost"} {
		if !strings.Contains(r, s) {
			t.Errorf("report lacks %q:\n%s", s, r)
		}
	}
}

// TestCheckFailedWrites checks the failed-writes check on made-up
// outcomes (no Docker).
func TestCheckFailedWrites(t *testing.T) {
	t0 := time.Now()
	failed := map[string]error{
		"refused":      kerr.MessageTooLarge,
		"refused-read": kerr.InvalidRecord,
		"timed-out":    kerr.RequestTimedOut,
		"gone":         context.DeadlineExceeded,
	}
	final := map[int32]map[int64]string{0: {0: "ok", 1: "refused", 2: "timed-out"}}
	reads := []Read{{0, 0, "ok", t0}, {1, 7, "refused-read", t0}}
	a, stored := CheckFailedWrites(failed, final, reads)
	if stored != 1 {
		t.Errorf("%d indeterminate failures stored, want 1 (timed-out)", stored)
	}
	got := map[string]bool{}
	for _, x := range a {
		if x.Check != "failed-write-visible" {
			t.Errorf("check %q", x.Check)
		}
		for _, v := range []string{"refused-read", "refused"} {
			if strings.HasPrefix(x.Detail, v+" ") {
				got[v] = true
			}
		}
	}
	if len(a) != 2 || !got["refused"] || !got["refused-read"] {
		t.Errorf("anomalies %v, want refused (in the log) and refused-read (read)", a)
	}
	if a, _ := CheckFailedWrites(map[string]error{"x": kerr.InvalidRecord}, final, reads); len(a) != 0 {
		t.Errorf("anomalies for a refused write nobody saw: %v", a)
	}
}

// TestCheckHighWatermarks checks the high-watermark check on made-up
// observations (no Docker).
func TestCheckHighWatermarks(t *testing.T) {
	t0 := time.Now()
	clean := []HighWatermark{{0, 5, t0}, {1, 2, t0}, {0, 5, t0}, {0, 9, t0}, {1, 3, t0}}
	if a := CheckHighWatermarks(clean); len(a) != 0 {
		t.Errorf("anomalies in a clean history: %v", a)
	}
	back := append(clean, HighWatermark{0, 7, t0}, HighWatermark{1, 3, t0})
	a := CheckHighWatermarks(back)
	if len(a) != 1 || a[0].Check != "hw-regressed" || !strings.Contains(a[0].Detail, "partition 0 high watermark 7 after 9") {
		t.Errorf("got %v, want one hw-regressed for partition 0", a)
	}
}

// TestCheckCompacted checks the compacted topic's check on a made-up
// history (no Docker).
func TestCheckCompacted(t *testing.T) {
	t0 := time.Now()
	v := func(k string, n int) string { return keyedValue(k, n) }
	acked := map[string]Ack{
		v("a", 0): {0, 0, t0}, // compacted away, a/3 kept: fine
		v("b", 1): {0, 1, t0}, // kept
		v("c", 2): {0, 2, t0}, // gone, nothing of c kept: lost
		v("a", 3): {0, 3, t0}, // kept
		v("d", 4): {0, 4, t0}, // gone, d's latest kept record is older: lost
		v("e", 5): {0, 5, t0}, // another value there: lost
		v("f", 6): {0, 5, t0}, // acknowledged at e's offset: conflict
	}
	final := map[int32]map[int64]string{0: {1: v("b", 1), 3: v("a", 3), 5: v("x", 9), 7: v("b", 1), 2: v("d", 99)}}
	// d/99 at offset 2 is older than d/4's offset 4.
	got := map[string]int{}
	anomalies, dups := CheckCompacted(acked, final)
	for _, a := range anomalies {
		got[a.Check]++
	}
	want := map[string]int{"compacted-lost": 4, "compacted-offset-conflict": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("anomalies %v, want %v", got, want)
	}
	if len(dups) != 1 || !strings.HasPrefix(dups[0], v("b", 1)+" at 0/1, 0/7") {
		t.Errorf("duplicates %q, want b/1 at 0/1 and 0/7", dups)
	}
	clean := map[string]Ack{v("a", 0): {0, 0, t0}, v("a", 1): {0, 1, t0}}
	if a, d := CheckCompacted(clean, map[int32]map[int64]string{0: {1: v("a", 1)}}); len(a)+len(d) != 0 {
		t.Errorf("anomalies in a clean history: %v %v", a, d)
	}
}
