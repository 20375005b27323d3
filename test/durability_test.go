package test

// Durability across crashes of the real binary (DESIGN.md §6, INVARIANTS.md
// invariant 1): a franz-go producer writes as fast as it can, the server is
// killed with SIGKILL while requests are in flight, and after a restart on
// the same data directory every acknowledged record must be there, once, at
// the offset it was acknowledged with.
//
// SIGKILL kills the process, not the machine: the kernel's page cache
// survives, so these tests cannot tell an fsync'd write from one that only
// reached the page cache. They check what a process crash must preserve in
// both durability modes; losing unflushed data on power loss, and keeping
// flushed data, is covered by the log package's MemFS tests, which can drop
// everything not yet synced.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// durPartitions is the partition count of the durability topic.
	durPartitions = 3
	// durProducers is how many goroutines produce concurrently.
	durProducers = 4
	// durTestTimeout bounds each durability test.
	durTestTimeout = 150 * time.Second
	// durSessionTimeout shortens the broker's etcd session: a server
	// restarted after SIGKILL waits for its previous registration to expire
	// (TestProcessRestartAfterKill9 covers the default of 9 s).
	durSessionTimeout = "broker.session.timeout.ms=4000"
)

// durValue identifies one produced record: the kill cycle, the producing
// goroutine and that goroutine's sequence number. Goroutine g sends its
// record seq to partition (g+seq) % durPartitions.
type durValue struct{ iter, g, seq int }

func (v durValue) encode() []byte {
	return fmt.Appendf(nil, "it%d-g%d-s%07d", v.iter, v.g, v.seq)
}

func (v durValue) partition() int32 { return int32((v.g + v.seq) % durPartitions) }

// parseDurValue accepts exactly what encode produces; anything else is a
// corrupt record.
func parseDurValue(b []byte) (durValue, error) {
	var v durValue
	if _, err := fmt.Sscanf(string(b), "it%d-g%d-s%d", &v.iter, &v.g, &v.seq); err != nil {
		return v, fmt.Errorf("value %q: %v", b, err)
	}
	if string(v.encode()) != string(b) {
		return v, fmt.Errorf("value %q is not canonical", b)
	}
	return v, nil
}

// durAck is one acknowledged record.
type durAck struct {
	partition int32
	offset    int64
	v         durValue
}

// durLedger records what was sent and acknowledged across kill cycles.
type durLedger struct {
	mu sync.Mutex
	// acked lists acknowledged records in the order their promises ran.
	acked []durAck
	// lastAcked is, per partition, the highest acknowledged offset so far
	// (-1 before any); promises must see offsets strictly increase.
	lastAcked map[int32]int64
	// orderErrs describes acknowledgements that went backwards.
	orderErrs []string
	// sent[iter][g] is how many records goroutine g handed to Produce in
	// cycle iter (seqs 0..sent-1).
	sent map[int][]int
}

func newDurLedger() *durLedger {
	l := &durLedger{lastAcked: map[int32]int64{}, sent: map[int][]int{}}
	for p := range int32(durPartitions) {
		l.lastAcked[p] = -1
	}
	return l
}

func (l *durLedger) ack(r *kgo.Record, v durValue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Offset <= l.lastAcked[r.Partition] {
		l.orderErrs = append(l.orderErrs, fmt.Sprintf("partition %d: %v acknowledged at offset %d after offset %d",
			r.Partition, v, r.Offset, l.lastAcked[r.Partition]))
	}
	l.lastAcked[r.Partition] = r.Offset
	l.acked = append(l.acked, durAck{r.Partition, r.Offset, v})
}

// durSeed returns the seed of the kill points: SAMSA_DURABILITY_SEED if
// set, else the clock. It is logged so a failure can be replayed.
func durSeed(t *testing.T) uint64 {
	if s := os.Getenv("SAMSA_DURABILITY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SAMSA_DURABILITY_SEED=%q: %v", s, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestDurabilityKill9 is the default durability mode (flush.messages=1):
// three kill -9 cycles at random points of a busy produce stream.
func TestDurabilityKill9(t *testing.T) {
	t.Parallel() // mostly waits for restarts; runs beside the other process tests
	runKillCycles(t, 3, durSessionTimeout)
}

// TestDurabilityKill9PageCache is Kafka's page-cache mode: nothing is
// fsync'd before the acknowledgement. A SIGKILL leaves the page cache
// intact, so every acknowledged record must survive it all the same. (Power
// loss would lose the unflushed tail; this test cannot simulate that, see
// the file comment.)
func TestDurabilityKill9PageCache(t *testing.T) {
	t.Parallel() // mostly waits for restarts; runs beside the other process tests
	runKillCycles(t, 2, durSessionTimeout, "log.flush.interval.messages=1000000")
}

// runKillCycles runs cycles of: produce from durProducers goroutines until
// a random number of acknowledgements, SIGKILL the server with requests in
// flight, restart it, and check the whole topic against everything
// acknowledged so far.
func runKillCycles(t *testing.T, cycles int, overrides ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), durTestTimeout)
	defer cancel()
	seed := durSeed(t)
	t.Logf("seed %d (replay with SAMSA_DURABILITY_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	p := StartProc(t, overrides...)
	const topic = "durable"
	e2eCreateTopic(ctx, t, p.Addr, topic, durPartitions, nil)

	ledger := newDurLedger()
	for iter := range cycles {
		killAfter := 1500 + rng.IntN(3000)
		killDelay := time.Duration(rng.IntN(20_000)) * time.Microsecond
		start := time.Now()
		produceAndKill(ctx, t, p, topic, iter, killAfter, killDelay, ledger)
		t.Logf("cycle %d: killed %v after %d acknowledgements: %d acknowledged in all, in %v",
			iter, killDelay, killAfter, len(ledger.acked), time.Since(start).Round(time.Millisecond))
		p.Restart(t)
		logs := durReadPartitions(ctx, t, p.Addr, topic, durPartitions)
		problems, summary := checkDurable(logs, ledger, iter)
		t.Logf("after cycle %d: %s", iter, summary)
		for _, pr := range problems {
			t.Error(pr)
		}
		if len(problems) > 0 {
			return
		}
	}
	p.Stop(t)
}

// produceAndKill produces cycle iter's records until killAfter of them are
// acknowledged, kills the server, and waits until every record's promise has
// run, recording the acknowledged ones in ledger.
func produceAndKill(ctx context.Context, t *testing.T, p *Proc, topic string, iter, killAfter int, killDelay time.Duration, ledger *durLedger) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(p.Addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond),
		// Small batches: many produce requests, so that the kill lands
		// between and inside them rather than after a few huge ones.
		kgo.ProducerBatchMaxBytes(16<<10),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	produceCtx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	var (
		acks     atomic.Int64
		promises sync.WaitGroup // one per record handed to Produce
		killNow  = make(chan struct{})
		failed   atomic.Int64
	)
	sent := make([]int, durProducers)
	var producers sync.WaitGroup
	for g := range durProducers {
		producers.Go(func() {
			for seq := 0; produceCtx.Err() == nil; seq++ {
				v := durValue{iter, g, seq}
				r := &kgo.Record{Topic: topic, Partition: v.partition(), Value: v.encode()}
				sent[g] = seq + 1
				promises.Add(1)
				cl.Produce(produceCtx, r, func(r *kgo.Record, err error) {
					defer promises.Done()
					if err != nil {
						failed.Add(1)
						return
					}
					ledger.ack(r, v)
					if acks.Add(1) == int64(killAfter) {
						close(killNow)
					}
				})
			}
		})
	}

	select {
	case <-killNow:
	case <-ctx.Done():
		t.Fatalf("cycle %d: only %d of %d acknowledgements before the deadline", iter, acks.Load(), killAfter)
	}
	// A random moment later, so that the kill does not always follow an
	// acknowledgement at once.
	select {
	case <-time.After(killDelay):
	case <-ctx.Done():
	}
	// The kill lands while the producers keep sending: requests are in
	// flight in both directions.
	p.Kill9(t)
	stopProducing()
	producers.Wait()
	// Close fails every record the dead server did not answer.
	closed := make(chan struct{})
	go func() { // ends when Close returns; waited for below
		cl.Close()
		promises.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatalf("cycle %d: producer promises still pending at the deadline", iter)
	}
	ledger.mu.Lock()
	ledger.sent[iter] = sent
	ledger.mu.Unlock()
	total := 0
	for _, n := range sent {
		total += n
	}
	t.Logf("cycle %d: %d records sent, %d acknowledged, %d failed", iter, total, acks.Load(), failed.Load())
}

// durRecord is one record read back.
type durRecord struct {
	offset int64
	value  []byte
}

// durReadPartitions reads every partition of topic from offset 0 to its end
// offset (as ListOffsets reports it), in order.
func durReadPartitions(ctx context.Context, t *testing.T, addr, topic string, partitions int) [][]durRecord {
	t.Helper()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ends := make([]int64, partitions)
	WaitFor(t, 30*time.Second, func() error {
		lo, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if err := lo.Error(); err != nil {
			return err
		}
		for p := range partitions {
			o, ok := lo.Lookup(topic, int32(p))
			if !ok {
				return fmt.Errorf("no end offset for partition %d", p)
			}
			ends[p] = o.Offset
		}
		return nil
	})

	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := make([][]durRecord, partitions)
	done := func() bool {
		for p := range partitions {
			if int64(len(out[p])) < ends[p] {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: deadline with %d of %v records per partition read", topic, durLens(out), ends)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], durRecord{r.Offset, r.Value})
		})
	}
	for p := range partitions {
		if int64(len(out[p])) != ends[p] {
			t.Fatalf("partition %d: read %d records, end offset %d", p, len(out[p]), ends[p])
		}
	}
	return out
}

func durLens(recs [][]durRecord) []int {
	n := make([]int, len(recs))
	for i, r := range recs {
		n[i] = len(r)
	}
	return n
}

// checkDurable checks the topic read back after cycle lastIter against the
// ledger and returns every violation found, and a summary.
func checkDurable(logs [][]durRecord, ledger *durLedger, lastIter int) (problems []string, summary string) {
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	for _, e := range ledger.orderErrs {
		errorf("acknowledgement order: %s", e)
	}
	seen := map[durValue]string{}
	// values[p][offset] is the parsed record; every record must parse.
	values := make([][]durValue, len(logs))
	for p, recs := range logs {
		values[p] = make([]durValue, len(recs))
		type stream struct{ iter, g int }
		lastSeq := map[stream]int{}
		prevIter := 0
		for i, r := range recs {
			where := fmt.Sprintf("partition %d offset %d", p, r.offset)
			if r.offset != int64(i) {
				errorf("partition %d: record %d has offset %d; offsets must be contiguous from 0", p, i, r.offset)
				return problems, "offsets not contiguous"
			}
			v, err := parseDurValue(r.value)
			if err != nil {
				errorf("%s: corrupt record: %v", where, err)
				continue
			}
			values[p][i] = v
			if prev, dup := seen[v]; dup {
				errorf("%s: %v is also at %s", where, v, prev)
			}
			seen[v] = where
			sent := ledger.sent[v.iter]
			if v.iter < 0 || v.g < 0 || v.seq < 0 || v.iter > lastIter || v.g >= durProducers || v.seq >= sent[v.g] {
				errorf("%s: %v was never produced", where, v)
				continue
			}
			if v.partition() != int32(p) {
				errorf("%s: %v was produced to partition %d", where, v, v.partition())
			}
			// Each cycle's records follow all earlier cycles' records,
			// and one goroutine's records to one partition keep the
			// order it produced them in.
			if v.iter < prevIter {
				errorf("%s: %v of cycle %d after a record of cycle %d", where, v, v.iter, prevIter)
			}
			prevIter = v.iter
			s := stream{v.iter, v.g}
			if last, ok := lastSeq[s]; ok && v.seq <= last {
				errorf("%s: %v after seq %d of the same producer goroutine", where, v, last)
			}
			lastSeq[s] = v.seq
		}
	}
	// Every acknowledged record is where it was acknowledged.
	firstUnacked := map[[2]int]int64{} // (partition, iter) -> lowest unacked offset
	ackedAt := map[[2]int64]bool{}
	for _, a := range ledger.acked {
		where := fmt.Sprintf("partition %d offset %d", a.partition, a.offset)
		if a.offset >= int64(len(values[a.partition])) {
			errorf("acknowledged %v at %s is lost: the partition ends at %d", a.v, where, len(values[a.partition]))
			continue
		}
		if got := values[a.partition][a.offset]; got != a.v {
			errorf("acknowledged %v at %s, found %v there", a.v, where, got)
		}
		ackedAt[[2]int64{int64(a.partition), a.offset}] = true
	}
	// An acknowledgement covers everything the same producer sent to the
	// partition before: acknowledged records form a prefix of each cycle's
	// records in each partition.
	for p, vs := range values {
		for off, v := range vs {
			key := [2]int{p, v.iter}
			acked := ackedAt[[2]int64{int64(p), int64(off)}]
			first, haveGap := firstUnacked[key]
			switch {
			case !acked && !haveGap:
				firstUnacked[key] = int64(off)
			case acked && haveGap:
				errorf("partition %d: %v acknowledged at offset %d, but the record at offset %d of the same cycle was not",
					p, v, off, first)
			}
		}
	}
	total := 0
	for _, vs := range values {
		total += len(vs)
	}
	summary = fmt.Sprintf("%d records in the topic (%v per partition), %d of them acknowledged",
		total, durLens(logs), len(ackedAt))
	return problems, summary
}

// e2eCreateTopic creates a topic with replication factor 1 and waits until
// every partition accepts a produce.
func e2eCreateTopic(ctx context.Context, t testing.TB, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	// Leadership is taken asynchronously after the topic appears in the
	// metadata: wait until ListOffsets answers for every partition.
	WaitFor(t, 30*time.Second, func() error {
		lo, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if err := lo.Error(); err != nil {
			return err
		}
		if n := len(lo[topic]); n != int(partitions) {
			return fmt.Errorf("%d of %d partitions listed", n, partitions)
		}
		return nil
	})
}

// TestDurabilitySIGTERM produces, stops the server with SIGTERM (exit status
// 0), and restarts it: every record is there, each log's recovery point
// was checkpointed at its end so the restart skips recovery scanning, and
// the restarted server logs no warnings (recovery logs a warning whenever
// it cuts data or rebuilds an index).
func TestDurabilitySIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), durTestTimeout)
	defer cancel()
	p := StartProc(t)
	const topic = "clean"
	e2eCreateTopic(ctx, t, p.Addr, topic, durPartitions, nil)

	// A long linger puts each partition's records in one batch of about
	// 25 KB: a segment whose offset index is rightly empty (the batch at
	// position 0 is never indexed) although it is larger than two
	// index.interval.bytes. The layout is fixed so that every run checks
	// the same case.
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	var (
		mu    sync.Mutex
		acked = make([][]durRecord, durPartitions)
		errs  []error
	)
	for seq := range n {
		v := durValue{0, 0, seq}
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: v.partition(), Value: v.encode()}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			acked[r.Partition] = append(acked[r.Partition], durRecord{r.Offset, r.Value})
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	cl.Close()
	if len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}

	p.Stop(t)
	for part := range durPartitions {
		path := filepath.Join(p.DataDir, "logs", fmt.Sprintf("%s-%d", topic, part), "recovery-point")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("recovery point checkpoint: %v", err)
		}
		want := fmt.Sprintf("0\n%d\n", len(acked[part]))
		if string(b) != want {
			t.Errorf("%s after a clean shutdown = %q, want %q (the log end)", path, b, want)
		}
	}

	p.Restart(t)
	logs := durReadPartitions(ctx, t, p.Addr, topic, durPartitions)
	for part := range durPartitions {
		got, want := logs[part], acked[part]
		if len(got) != len(want) {
			t.Errorf("partition %d: %d records after restart, want %d", part, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i].offset != want[i].offset || string(got[i].value) != string(want[i].value) {
				t.Errorf("partition %d record %d: got offset %d %q, want offset %d %q",
					part, i, got[i].offset, got[i].value, want[i].offset, want[i].value)
				break
			}
		}
	}
	t.Run("restart logs no recovery warnings", func(t *testing.T) {
		// Recovery warns whenever it rebuilds an index or cuts data; a
		// log closed cleanly must open without either.
		for _, line := range strings.Split(p.Stderr(t), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Errorf("restart after a clean shutdown logged: %s", line)
			}
		}
	})
	p.Stop(t)
}

// TestCheckDurableDetects feeds checkDurable a clean topic and topics with
// one fault each: it must pass the first and name the fault in the others.
func TestCheckDurableDetects(t *testing.T) {
	// Cycle 0: goroutine 0 sent seqs 0..5 (partitions 0,1,2,0,1,2) and
	// goroutine 1 sent seqs 0..2 (partitions 1,2,0). All but g0 s5 and g1 s2
	// were acknowledged.
	clean := func() ([][]durRecord, *durLedger) {
		l := newDurLedger()
		l.sent[0] = []int{6, 3, 0, 0}
		logs := make([][]durRecord, durPartitions)
		put := func(v durValue, acked bool) {
			p := v.partition()
			off := int64(len(logs[p]))
			logs[p] = append(logs[p], durRecord{off, v.encode()})
			if acked {
				l.acked = append(l.acked, durAck{p, off, v})
			}
		}
		put(durValue{0, 0, 0}, true)
		put(durValue{0, 1, 0}, true)
		put(durValue{0, 0, 1}, true)
		put(durValue{0, 0, 2}, true)
		put(durValue{0, 1, 1}, true)
		put(durValue{0, 0, 3}, true)
		put(durValue{0, 0, 4}, true)
		put(durValue{0, 0, 5}, false) // partition 2, unacknowledged
		put(durValue{0, 1, 2}, false) // partition 0, unacknowledged
		return logs, l
	}
	logs, l := clean()
	if problems, _ := checkDurable(logs, l, 0); len(problems) > 0 {
		t.Fatalf("clean topic: %q", problems)
	}
	for _, tt := range []struct {
		name  string
		fault func(logs [][]durRecord, l *durLedger) [][]durRecord
		want  string
	}{
		{"acknowledged record lost", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			logs[1] = logs[1][:1] // partition 1: g1 s0 stays; g0 s1 and g1 s1 are lost
			return logs
		}, "is lost"},
		{"duplicate", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			logs[0] = append(logs[0], durRecord{int64(len(logs[0])), durValue{0, 0, 0}.encode()})
			return logs
		}, "is also at"},
		{"corrupt value", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			logs[2][len(logs[2])-1].value = []byte("it0-g0-s00000x5")
			return logs
		}, "corrupt record"},
		{"offset gap", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			logs[0][1].offset = 7
			return logs
		}, "contiguous"},
		{"never produced", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			logs[0] = append(logs[0], durRecord{int64(len(logs[0])), durValue{0, 0, 6}.encode()})
			return logs
		}, "never produced"},
		{"reordered", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			// Swap g0 s0 and g0 s3 in partition 0; the ledger then finds
			// the wrong record at both acknowledged offsets, too.
			logs[0][0].value, logs[0][1].value = logs[0][1].value, logs[0][0].value
			return logs
		}, "after seq"},
		{"wrong partition", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			logs[0] = append(logs[0], durRecord{int64(len(logs[0])), durValue{0, 0, 5}.encode()})
			logs[2] = logs[2][:len(logs[2])-1]
			return logs
		}, "was produced to partition 2"},
		{"acknowledged after unacknowledged", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			for i, a := range l.acked {
				if a.v == (durValue{0, 0, 0}) {
					l.acked = append(l.acked[:i], l.acked[i+1:]...)
					break
				}
			}
			return logs
		}, "was not"},
		{"acknowledgement order", func(logs [][]durRecord, l *durLedger) [][]durRecord {
			l.orderErrs = append(l.orderErrs, "partition 0: went backwards")
			return logs
		}, "went backwards"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logs, l := clean()
			logs = tt.fault(logs, l)
			problems, _ := checkDurable(logs, l, 0)
			for _, p := range problems {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Errorf("problems = %q, want one containing %q", problems, tt.want)
		})
	}
}
