package test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
)

// consumeAll reads topic from the start until it has want records or the
// context ends, with the given isolation level.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, want int, iso kgo.IsolationLevel, extra ...kgo.Opt) []string {
	t.Helper()
	cl := newKgoClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, extra...)...)
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Anything beyond want (duplicates) is readable at once too: read
	// until a poll finds nothing more.
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)); n++ })
		if n == 0 {
			break
		}
	}
	return got
}

// TestTransactionsCommitAbortFranzGo: a franz-go transactional producer
// commits one transaction and aborts another; a read_committed consumer
// sees exactly the committed records, a read_uncommitted one all of them,
// and neither sees a control record. ListOffsets read_committed ends at
// the last stable offset.
//
// It runs with transactions v1 and v2 (the transaction.version the broker
// finalizes): under v2 every transaction end bumps the producer's epoch.
func TestTransactionsCommitAbortFranzGo(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		t.Run(fmt.Sprintf("transaction.version=%d", tv), func(t *testing.T) { testCommitAbortFranzGo(t, tv) })
	}
}

func testCommitAbortFranzGo(t *testing.T, tv int16) {
	b := StartBroker(t, func(c *broker.Config) { c.TransactionVersion = tv })
	ctx := testContext(t, 60*time.Second)
	const topic = "txn-commit-abort"
	adm := kadm.NewClient(newKgoClient(t, b.Addr))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := newKgoClient(t, b.Addr, kgo.TransactionalID("txn-a"), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(10*time.Second))
	run := func(commit bool, prefix string, n int) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	run(true, "committed", 10)
	run(false, "aborted", 7)
	run(true, "second", 3)
	d, err := adm.DescribeTransactions(ctx, "txn-a")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int16]int16{1: 0, 2: 3}[tv]; d["txn-a"].ProducerEpoch != want {
		t.Fatalf("producer epoch after three transactions %d, want %d (transactions v%d)", d["txn-a"].ProducerEpoch, want, tv)
	}

	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("committed-%d", i))
	}
	for i := range 3 {
		want = append(want, fmt.Sprintf("second-%d", i))
	}
	got := consumeAll(t, ctx, b.Addr, topic, len(want), kgo.ReadCommitted())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed consumer got %q, want %q", got, want)
	}
	all := consumeAll(t, ctx, b.Addr, topic, 20, kgo.ReadUncommitted())
	if len(all) != 20 {
		t.Fatalf("read_uncommitted consumer got %d records, want 20: %q", len(all), all)
	}
	// Both partitions end with a commit marker: the LSO is the end.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committedEnds, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committedEnds.Lookup(o.Topic, o.Partition)
		if c.Offset != o.Offset {
			t.Errorf("partition %d: read_committed end %d, high watermark %d", o.Partition, c.Offset, o.Offset)
		}
	})
}

// TestTransactionsFencing: a second producer with the same transactional
// id fences the first, whose next produce or commit fails; an open
// transaction of the fenced producer is aborted.
func TestTransactionsFencing(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	const topic = "txn-fencing"
	adm := kadm.NewClient(newKgoClient(t, b.Addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	first := newKgoClient(t, b.Addr, kgo.TransactionalID("txn-f"), kgo.DefaultProduceTopic(topic))
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	second := newKgoClient(t, b.Addr, kgo.TransactionalID("txn-f"), kgo.DefaultProduceTopic(topic))
	if err := second.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, kgo.StringRecord("live")).FirstErr(); err != nil {
		t.Fatalf("second producer: %v", err)
	}
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	err := first.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Logf("fenced producer's commit failed with %v", err)
	}
	got := consumeAll(t, ctx, b.Addr, topic, 1, kgo.ReadCommitted())
	if !slices.Equal(got, []string{"live"}) {
		t.Fatalf("read_committed consumer got %q, want [live]", got)
	}
}

// etlWorker runs a franz-go GroupTransactSession that copies records from
// in to out (value prefixed) until ctx is done or stop is closed. After an
// error of Begin or End (which kgo says not to retry) it starts a new
// session with the same transactional id, as an application would restart.
// When crash is closed, it begins a transaction, produces its records and
// closes its client without ending the transaction, as a member that dies
// mid-transaction: the coordinator aborts it after its timeout.
func etlWorker(t *testing.T, ctx context.Context, seeds []string, group, in, out, txnID string, stop, crash <-chan struct{}, extra ...kgo.Opt) error {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(txnID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.DefaultProduceTopic(out),
	}, extra...)
	for restarts := 0; ; restarts++ {
		if restarts > 20 {
			return fmt.Errorf("%s: restarted 20 times", txnID)
		}
		again, err := etlSession(t, ctx, txnID, stop, crash, opts)
		if err != nil || !again {
			return err
		}
	}
}

// clientLogs collects franz-go clients' logs in memory; a failed test
// logs their tail. (A client may log after its test returned, which
// t.Logf does not allow.)
type clientLogs struct {
	mu  sync.Mutex
	buf []byte
}

func newClientLogs(t *testing.T) *clientLogs {
	l := &clientLogs{}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		tail := l.buf[max(0, len(l.buf)-64<<10):]
		t.Logf("--- clients' log, last %d of %d bytes ---\n%s", len(tail), len(l.buf), tail)
	})
	return l
}

func (l *clientLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

// opt is the option that logs a client's messages at info level and above,
// each line prefixed with the time and name.
func (l *clientLogs) opt(name string) kgo.Opt {
	return kgo.WithLogger(kgo.BasicLogger(l, kgo.LogLevelInfo, func() string {
		return time.Now().Format("15:04:05.000 ") + name + " "
	}))
}

// logGoroutines logs the stacks of the test's goroutines that run fn (a
// function name), to show where a stuck worker waits.
func logGoroutines(t *testing.T, fn string) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			t.Logf("goroutine running %s:\n%s", fn, g)
		}
	}
}

// etlSession is one session of etlWorker; again: it failed and a new one
// should start.
func etlSession(t *testing.T, ctx context.Context, txnID string, stop, crash <-chan struct{}, opts []kgo.Opt) (again bool, err error) {
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return false, err
	}
	crashed := false
	defer func() {
		if !crashed {
			sess.Close()
		}
	}()
	for {
		select {
		case <-stop:
			return false, nil
		case <-ctx.Done():
			return false, nil
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := sess.PollFetches(pctx)
		cancel()
		if len(fs.Records()) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Logf("%s: begin: %v; restarting", txnID, err)
			return true, nil
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("etl:"), r.Value...)}, func(_ *kgo.Record, err error) {
				if err != nil && ctx.Err() == nil && !crashed {
					t.Logf("%s: produce: %v", txnID, err)
				}
			})
		})
		select {
		case <-crash:
			if err := sess.Client().Flush(ctx); err != nil {
				t.Logf("%s: flush before the crash: %v", txnID, err)
			}
			crashed = true
			sess.Client().Close()
			return false, nil
		default:
		}
		if _, err := sess.End(ctx, kgo.TryCommit); err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			t.Logf("%s: end: %v; restarting", txnID, err)
			return true, nil
		}
	}
}

// TestTransactionsGroupETL: franz-go GroupTransactSession
// consume-transform-produce with three members, with the range and the
// cooperative-sticky balancers (the latter with static members): once the
// group has committed something, one member dies mid-transaction and
// another leaves; every input record is in the output exactly once
// (read_committed).
func TestTransactionsGroupETL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		static bool
		opts   []kgo.Opt
	}{
		{"range", false, []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"cooperative-sticky-static", true, []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The dead member's transaction is aborted within a second
			// of its timeout.
			b := StartBroker(t, func(c *broker.Config) { c.Txns.AbortInterval = time.Second })
			ctx := testContext(t, 120*time.Second)
			in, out, group := "etl-in", "etl-out", "etl"
			const n = 3000
			adm := kadm.NewClient(newKgoClient(t, b.Addr))
			if _, err := adm.CreateTopic(ctx, 6, 1, nil, in); err != nil {
				t.Fatal(err)
			}
			if _, err := adm.CreateTopic(ctx, 3, 1, nil, out); err != nil {
				t.Fatal(err)
			}
			prod := newKgoClient(t, b.Addr, kgo.DefaultProduceTopic(in))
			for i := range n {
				prod.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, "v%05d", i)}, nil)
			}
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 3)
			stops := make([]chan struct{}, 3)
			crash := make(chan struct{})
			for i := range stops {
				stops[i] = make(chan struct{})
				// A dead member's session ends after 6 s (the group minimum).
				opts := append([]kgo.Opt{kgo.FetchMaxBytes(4096), kgo.FetchMaxPartitionBytes(2048),
					kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond)}, tc.opts...)
				if tc.static {
					opts = append(opts, kgo.InstanceID(fmt.Sprintf("etl-member-%d", i)))
				}
				var crashMe <-chan struct{}
				if i == 2 {
					crashMe = crash
				}
				go func() {
					errs <- etlWorker(t, ctx, []string{b.Addr}, group, in, out, fmt.Sprintf("etl-%d", i), stops[i], crashMe, opts...)
				}()
			}
			WaitFor(t, 60*time.Second, func() error {
				offs, err := adm.FetchOffsets(ctx, group)
				if err != nil || len(offs) == 0 {
					return fmt.Errorf("no committed offsets yet (%v)", err)
				}
				return nil
			})
			close(crash)
			close(stops[0])
			got := consumeAll(t, ctx, b.Addr, out, n, kgo.ReadCommitted())
			for i := 1; i < len(stops); i++ {
				close(stops[i])
			}
			for range stops {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			checkExactlyOnce(t, got, n)
		})
	}
}

// checkExactlyOnce checks that got holds "etl:v%05d" for each i < n once.
func checkExactlyOnce(t *testing.T, got []string, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	missing := 0
	for i := range n {
		switch v := fmt.Sprintf("etl:v%05d", i); seen[v] {
		case 1:
		case 0:
			missing++
		default:
			t.Errorf("%s appears %d times in the output", v, seen[v])
		}
	}
	if missing > 0 || len(got) != n {
		t.Errorf("output has %d records, %d of the %d inputs missing", len(got), missing, n)
	}
}
