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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	samsatest "github.com/samsa-io/samsa/test"
)

// The transactional workload: producers with transactional ids (franz-go,
// acks=all) each run transactions one after another, every transaction
// writing one to four records to random partitions of a topic; about one
// in five is aborted on purpose. Each transaction's outcome is recorded:
// committed (EndTxn commit acknowledged), aborted (the producer never asked
// to commit: an intended abort, a failed produce, or a commit the client
// refused to send) or indeterminate (a commit was sent and no answer came
// back: the coordinator may or may not have committed it). CheckTxns checks
// the outcomes against the topic read back with isolation level
// read_committed, and Cluster.WaitStable that no transaction is left hanging
// once the faults heal.

const (
	// txnTimeout is the workload's transaction.timeout.ms: short, so that
	// a transaction a killed coordinator or a dropped client left open is
	// aborted soon, and a hanging one shows within the campaign.
	txnTimeout = 10 * time.Second
	// txnOpTimeout bounds one flush or EndTransaction call.
	txnOpTimeout = 30 * time.Second
	// txnStableTimeout bounds the wait, after the faults heal and the
	// workload stops, for every partition's last stable offset to reach
	// its high watermark: the transaction timeout, the coordinator's
	// abort interval (campaigns set it to a second), the markers, and
	// room to spare.
	txnStableTimeout = 60 * time.Second
	// txnSentinel prefixes the non-transactional records ReadCommitted
	// writes to find the end of each partition.
	txnSentinel = "sentinel-"
	// txnStateTopic is the transaction coordinators' topic.
	txnStateTopic = "__transaction_state"
)

// TxnOutcome is what a transaction's producer knows of its end.
type TxnOutcome string

// The outcomes.
const (
	TxnCommitted     TxnOutcome = "committed"
	TxnAborted       TxnOutcome = "aborted"
	TxnIndeterminate TxnOutcome = "indeterminate"
)

// Txn is one transaction of the workload.
type Txn struct {
	// ID names it: "<transactional id>-<sequence>"; its records' values
	// are "<ID>-<k>/<Records>" for k in [0, Records).
	ID      string
	Records int
	// Partitions are its records' partitions, in order.
	Partitions []int32
	Outcome    TxnOutcome
	// Intended is true when the producer chose to abort it (not because
	// of an error).
	Intended bool
	// Err is the error that decided an aborted or indeterminate outcome.
	Err string
	At  time.Time
}

// TxnWorkload is the transactional producers of a campaign.
type TxnWorkload struct {
	c     *Cluster
	topic string
	parts int32
	ids   []string
	stop  chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	txns map[string]Txn
	// clients counts the clients made (one per producer, and one more
	// each time a producer had to start over with InitProducerId).
	clients int
	lastErr error
}

// StartTxnWorkload starts producers transactional producers (ids
// "<topic>-tx<i>") on topic, until Stop.
func (c *Cluster) StartTxnWorkload(topic string, partitions int32, producers int, seed uint64) *TxnWorkload {
	c.t.Helper()
	w := &TxnWorkload{c: c, topic: topic, parts: partitions, stop: make(chan struct{}), txns: map[string]Txn{}}
	for i := range producers {
		id := fmt.Sprintf("%s-tx%d", topic, i)
		w.ids = append(w.ids, id)
		w.wg.Add(1)
		go w.run(id, rand.New(rand.NewPCG(seed, uint64(i))))
	}
	return w
}

// IDs are the workload's transactional ids.
func (w *TxnWorkload) IDs() []string { return w.ids }

func (w *TxnWorkload) client(id string) *kgo.Client {
	w.mu.Lock()
	w.clients++
	w.mu.Unlock()
	return w.c.Client(
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(txnTimeout),
		kgo.DefaultProduceTopic(w.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RecordDeliveryTimeout(20*time.Second),
	)
}

func (w *TxnWorkload) run(id string, rnd *rand.Rand) {
	defer w.wg.Done()
	cl := w.client(id)
	defer func() { cl.Close() }()
	// restart closes the client and makes a new one, whose
	// InitProducerId fences the old producer and aborts what it left
	// open.
	restart := func(err error) {
		w.mu.Lock()
		w.lastErr = fmt.Errorf("%s: %w", id, err)
		w.mu.Unlock()
		cl.Close()
		cl = w.client(id)
	}
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			return
		case <-time.After(time.Duration(5+rnd.IntN(20)) * time.Millisecond):
		}
		if err := cl.BeginTransaction(); err != nil {
			restart(fmt.Errorf("begin: %w", err))
			continue
		}
		t := Txn{ID: fmt.Sprintf("%s-%06d", id, seq), Records: 1 + rnd.IntN(4)}
		var (
			pmu  sync.Mutex
			perr error
			pwg  sync.WaitGroup
		)
		for k := range t.Records {
			p := rnd.Int32N(w.parts)
			t.Partitions = append(t.Partitions, p)
			pwg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s-%d/%d", t.ID, k, t.Records)},
				func(_ *kgo.Record, err error) {
					defer pwg.Done()
					if err != nil {
						pmu.Lock()
						perr = err
						pmu.Unlock()
					}
				})
		}
		ctx, cancel := context.WithTimeout(context.Background(), txnOpTimeout)
		ferr := cl.Flush(ctx)
		cancel()
		if ferr == nil {
			pwg.Wait()
		}
		pmu.Lock()
		if ferr == nil {
			ferr = perr
		}
		pmu.Unlock()
		commit := ferr == nil && rnd.IntN(5) != 0
		t.Intended = ferr == nil && !commit
		var err error
		if commit {
			ctx, cancel := context.WithTimeout(context.Background(), txnOpTimeout)
			err = cl.EndTransaction(ctx, kgo.TryCommit)
			cancel()
			switch {
			case err == nil:
				t.Outcome = TxnCommitted
			case errors.Is(err, kerr.OperationNotAttempted):
				// The client did not send the commit.
				t.Outcome, t.Err = TxnAborted, "commit not attempted: "+err.Error()
			default:
				t.Outcome, t.Err = TxnIndeterminate, "commit: "+err.Error()
			}
		} else {
			// Never asked to commit: whatever happens next, only an
			// abort can end it.
			t.Outcome = TxnAborted
			if ferr != nil {
				t.Err = "produce: " + ferr.Error()
			}
		}
		if t.Outcome != TxnCommitted {
			ctx, cancel := context.WithTimeout(context.Background(), txnOpTimeout)
			aerr := cl.AbortBufferedRecords(ctx)
			if aerr == nil {
				aerr = cl.EndTransaction(ctx, kgo.TryAbort)
			}
			cancel()
			if aerr != nil {
				t.At = time.Now()
				w.record(t)
				restart(fmt.Errorf("abort: %w", aerr))
				continue
			}
		}
		t.At = time.Now()
		w.record(t)
	}
}

func (w *TxnWorkload) record(t Txn) {
	w.mu.Lock()
	w.txns[t.ID] = t
	w.mu.Unlock()
}

// Committed is the number of committed transactions so far.
func (w *TxnWorkload) Committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return countOutcome(w.txns, TxnCommitted)
}

func countOutcome(txns map[string]Txn, o TxnOutcome) int {
	n := 0
	for _, t := range txns {
		if t.Outcome == o {
			n++
		}
	}
	return n
}

// WaitCommitted waits until n more transactions than now are committed.
func (w *TxnWorkload) WaitCommitted(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	start := w.Committed()
	samsatest.WaitFor(t, timeout, func() error {
		if got := w.Committed() - start; got < n {
			w.mu.Lock()
			last := w.lastErr
			w.mu.Unlock()
			return fmt.Errorf("%d of %d more transactions committed (last error: %v)", got, n, last)
		}
		return nil
	})
}

// Stop stops the producers after their current transactions and returns
// every transaction's outcome by ID, and the producers that did not stop
// within the bound (left behind: their transactions then end by timeout).
func (w *TxnWorkload) Stop() (map[string]Txn, []string) {
	close(w.stop)
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	var problems []string
	select {
	case <-done:
	case <-time.After(3 * txnOpTimeout):
		problems = append(problems, fmt.Sprintf("transactional producers did not stop within %v", 3*txnOpTimeout))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]Txn, len(w.txns))
	for k, v := range w.txns {
		out[k] = v
	}
	return out, problems
}

// TxnSummary is a one-line account of the outcomes.
func TxnSummary(txns map[string]Txn) string {
	n := map[TxnOutcome]int{}
	intended, records := 0, 0
	for _, t := range txns {
		n[t.Outcome]++
		records += t.Records
		if t.Intended {
			intended++
		}
	}
	return fmt.Sprintf("%d transactions (%d records): %d committed, %d aborted (%d on purpose), %d indeterminate",
		len(txns), records, n[TxnCommitted], n[TxnAborted], intended, n[TxnIndeterminate])
}

// Clients is the number of producer clients made (each a new
// InitProducerId of its transactional id).
func (w *TxnWorkload) Clients() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clients
}

// WaitStable waits until every partition of topic has its last stable
// offset (ListOffsets, read_committed) at its high watermark: no
// transaction left open. It returns an error naming the partitions still
// held back, with the producers the leaders report open transactions for.
func (c *Cluster) WaitStable(topic string, timeout time.Duration) error {
	adm := c.Admin()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		stuck, err := unstable(ctx, adm, topic)
		cancel()
		if err == nil && len(stuck) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			desc := ""
			if ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: stuckSet(stuck)}); err != nil {
				desc = "describe producers: " + err.Error()
			} else {
				var open []string
				ps.EachProducer(func(p kadm.DescribedProducer) {
					if p.CurrentTxnStartOffset >= 0 {
						open = append(open, fmt.Sprintf("%s/%d producer %d epoch %d from offset %d", p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch, p.CurrentTxnStartOffset))
					}
				})
				sort.Strings(open)
				desc = "open transactions: " + strings.Join(open, "; ")
			}
			return fmt.Errorf("%s: last stable offset below the high watermark %v after %v; %s", topic, stuck, timeout, desc)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unstable lists topic's partitions whose last stable offset is below the
// high watermark, as "p: lso<hw".
func unstable(ctx context.Context, adm *kadm.Client, topic string) (map[int32]string, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, err
	}
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]string{}
	ends.Each(func(o kadm.ListedOffset) {
		s, ok := stable.Lookup(topic, o.Partition)
		if !ok || s.Offset < o.Offset {
			out[o.Partition] = fmt.Sprintf("%d<%d", s.Offset, o.Offset)
		}
	})
	return out, nil
}

func stuckSet(m map[int32]string) map[int32]struct{} {
	out := map[int32]struct{}{}
	for p := range m {
		out[p] = struct{}{}
	}
	return out
}

// ReadCommitted reads every partition of topic, with isolation level
// read_committed, up to a sentinel record it first writes (without a
// transaction) to each partition, and returns the values by offset,
// sentinels included. Call it once the topic is stable (WaitStable): a
// read_committed read cannot pass an open transaction.
func (c *Cluster) ReadCommitted(topic string, partitions int32) map[int32]map[int64]string {
	c.t.Helper()
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	want := map[int32]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := range partitions {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(txnSentinel + strconv.Itoa(int(p)))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			c.t.Fatalf("write the sentinel of %s/%d: %v", topic, p, err)
		}
		want[p] = r.Offset + 1
	}
	return c.readUntil(topic, want, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
}

// CheckTxns checks the transactional workload's outcomes against the topic
// read back with read_committed (final, from ReadCommitted) and what a
// read_committed consumer read during the campaign. It reports
//   - txn-committed-lost: a committed transaction none of whose records
//     are in the final log;
//   - txn-partial: a transaction some but not all of whose records are in
//     the final log (committed, aborted or indeterminate: transactions are
//     atomic);
//   - txn-aborted-visible: a record of an aborted transaction in the final
//     log or read by the read_committed consumer;
//   - txn-duplicate: a record in the final log more than once;
//   - txn-unknown: a record of a transaction the workload did not record;
//
// and, through Check, txn-non-monotonic and txn-read-truncated for the
// consumer's reads.
func CheckTxns(txns map[string]Txn, final map[int32]map[int64]string, reads []Read) []Anomaly {
	var out []Anomaly
	type place struct {
		p int32
		o int64
	}
	seen := map[string][]place{}
	for p, byOff := range final {
		for o, v := range byOff {
			if !strings.HasPrefix(v, txnSentinel) {
				seen[v] = append(seen[v], place{p, o})
			}
		}
	}
	visible := map[string]int{}
	for v, at := range seen {
		id, ok := txnOf(v)
		t, known := txns[id]
		if !ok || !known {
			out = append(out, Anomaly{"txn-unknown", time.Time{}, fmt.Sprintf("%q at %d/%d: no such transaction recorded", v, at[0].p, at[0].o)})
			continue
		}
		visible[id]++
		if len(at) > 1 {
			out = append(out, Anomaly{"txn-duplicate", t.At, fmt.Sprintf("%q stored %d times (%v)", v, len(at), at)})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		t := txns[id]
		n := visible[id]
		desc := fmt.Sprintf("transaction %s (%s, %d records to partitions %v%s): %d records in the read_committed log",
			id, t.Outcome, t.Records, t.Partitions, errNote(t.Err), n)
		switch {
		case n > 0 && n < t.Records:
			out = append(out, Anomaly{"txn-partial", t.At, desc})
		case t.Outcome == TxnCommitted && n == 0:
			out = append(out, Anomaly{"txn-committed-lost", t.At, desc})
		case t.Outcome == TxnAborted && n > 0:
			out = append(out, Anomaly{"txn-aborted-visible", t.At, desc})
		}
	}
	for _, r := range reads {
		if id, ok := txnOf(r.Value); ok && txns[id].Outcome == TxnAborted {
			out = append(out, Anomaly{"txn-aborted-visible", r.At, fmt.Sprintf("the read_committed consumer read %q (transaction %s aborted) at %d/%d", r.Value, id, r.Partition, r.Offset)})
		}
	}
	for _, a := range Check(nil, final, reads) {
		a.Check = "txn-" + a.Check
		if a.Check != "txn-duplicate" { // reported above, with the transaction
			out = append(out, a)
		}
	}
	return out
}

func errNote(err string) string {
	if err == "" {
		return ""
	}
	return "; " + err
}

// txnOf is the transaction ID of a workload record's value
// ("<ID>-<k>/<n>").
func txnOf(v string) (string, bool) {
	i := strings.LastIndexByte(v, '-')
	if i < 0 || !strings.Contains(v[i:], "/") {
		return "", false
	}
	return v[:i], true
}

// WriteTxns writes every transaction's outcome to path, one per line.
func WriteTxns(path string, txns map[string]Txn) error {
	var b strings.Builder
	b.WriteString("id\toutcome\tintended_abort\trecords\tpartitions\tat\terror\n")
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		t := txns[id]
		fmt.Fprintf(&b, "%s\t%s\t%v\t%d\t%v\t%s\t%s\n", id, t.Outcome, t.Intended, t.Records, t.Partitions, t.At.UTC().Format(time.RFC3339Nano), t.Err)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// txnCoordinator is the broker coordinating transactional id id.
func (c *Cluster) txnCoordinator(id string) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	res := c.Admin().FindTxnCoordinators(ctx, id)
	r, ok := res[id]
	if !ok {
		return 0, fmt.Errorf("no answer for transactional id %s", id)
	}
	if r.Err != nil {
		return 0, r.Err
	}
	return r.NodeID, nil
}
