package main

// `samsa bench` against a real in-process samsa broker, run through run()
// exactly as main runs it.

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	samsatest "github.com/samsa-io/samsa/test"
)

// benchTestTimeout bounds each bench test against a broker.
const benchTestTimeout = 60 * time.Second

// benchJSON is the JSON line of `bench --json`, decoded strictly.
type benchJSON struct {
	Mode          string       `json:"mode"`
	Topic         string       `json:"topic"`
	RecordSize    int          `json:"record_size"`
	Records       int64        `json:"records"`
	Bytes         int64        `json:"bytes"`
	Seconds       float64      `json:"seconds"`
	RecordsPerSec float64      `json:"records_per_sec"`
	MBPerSec      float64      `json:"mb_per_sec"`
	Errors        int64        `json:"errors"`
	FirstError    string       `json:"first_error"`
	Latency       *benchJSONMs `json:"latency_ms"`
	AckLatency    *benchJSONMs `json:"ack_latency_ms"`
	Lost          *int64       `json:"lost"`
	Duplicates    *int64       `json:"duplicates"`
	FirstRecordMs *float64     `json:"first_record_ms"`
}

type benchJSONMs struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// runBench runs `samsa bench args... --json` and decodes its one line.
func runBench(t *testing.T, c *e2eCLI, args ...string) (benchJSON, string) {
	t.Helper()
	out, errOut, err := c.run("", append([]string{"bench"}, append(args, "--json")...)...)
	if err != nil {
		t.Fatalf("samsa bench %s: %v\nstdout %s\nstderr %s", strings.Join(args, " "), err, out, errOut)
	}
	return decodeBenchJSON(t, out), errOut
}

func decodeBenchJSON(t *testing.T, out string) benchJSON {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("stdout is not exactly one line: %q", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var res benchJSON
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return res
}

// checkLatency checks that a latency summary is present, positive and
// ordered.
func checkLatency(t *testing.T, name string, l *benchJSONMs) {
	t.Helper()
	switch {
	case l == nil:
		t.Errorf("%s missing", name)
	case !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max):
		t.Errorf("%s = %+v, want 0 < p50 <= p99 <= p999 <= max", name, *l)
	}
}

// benchEndOffsets sums the end offsets of topic's partitions.
func benchEndOffsets(ctx context.Context, t *testing.T, addr, topic string) (total int64, partitions int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("%s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.Offset
		partitions++
	})
	return total, partitions
}

// TestBenchProduceConsume produces 20000 records, checks the topic holds
// exactly them, and reads them back with direct assignment and as a group.
func TestBenchProduceConsume(t *testing.T) {
	b := samsatest.StartBroker(t, func(c *broker.Config) { c.Groups.InitialRebalanceDelay = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), benchTestTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}

	res, errOut := runBench(t, c, "produce", "--topic", "b", "--num-records", "20000", "--record-size", "100", "--producers", "2")
	if res.Mode != "produce" || res.Topic != "b" || res.RecordSize != 100 || res.Records != 20000 ||
		res.Bytes != 2_000_000 || res.Errors != 0 || res.FirstError != "" {
		t.Errorf("produce result %+v, want 20000 records of 100 B, no errors", res)
	}
	if res.Seconds <= 0 || res.RecordsPerSec <= 0 || res.MBPerSec <= 0 {
		t.Errorf("produce result %+v, want positive time and rates", res)
	}
	checkLatency(t, "produce latency_ms", res.Latency)
	if res.AckLatency != nil || res.Lost != nil || res.Duplicates != nil || res.FirstRecordMs != nil {
		t.Errorf("produce result has fields of other modes: %+v", res)
	}
	if !strings.Contains(errOut, "Created topic b with 6 partitions.") {
		t.Errorf("stderr %q does not say the topic was created", errOut)
	}
	if total, partitions := benchEndOffsets(ctx, t, b.Addr, "b"); total != 20000 || partitions != 6 {
		t.Errorf("topic holds %d records in %d partitions, want 20000 in 6", total, partitions)
	}

	res, _ = runBench(t, c, "consume", "--topic", "b", "--record-size", "100")
	if res.Mode != "consume" || res.Records != 20000 || res.Bytes != 2_000_000 || res.Errors != 0 || res.RecordSize != 100 {
		t.Errorf("consume result %+v, want 20000 records of 100 B, no errors", res)
	}
	if res.FirstRecordMs == nil || *res.FirstRecordMs <= 0 || res.Latency != nil {
		t.Errorf("consume result %+v, want first_record_ms > 0 and no latency_ms", res)
	}

	// Three consumers split the six partitions; without --record-size the
	// mean value size is reported.
	res, _ = runBench(t, c, "consume", "--topic", "b", "--consumers", "3")
	if res.Records != 20000 || res.Errors != 0 || res.RecordSize != 100 {
		t.Errorf("consume --consumers 3: %+v, want 20000 records, mean size 100", res)
	}

	// A wrong --record-size makes every record an error, reported after
	// the results, with a non-zero exit.
	out, _, err := c.run("", "bench", "consume", "--topic", "b", "--record-size", "99", "--json", "--num-records", "10")
	if err == nil || !strings.Contains(err.Error(), "want --record-size 99") {
		t.Errorf("consume with a wrong --record-size: err = %v, want one about the value size", err)
	}
	if res := decodeBenchJSON(t, out); res.Records != 10 || res.Errors != 10 {
		t.Errorf("consume with a wrong --record-size: %+v, want 10 records and 10 errors", res)
	}

	res, _ = runBench(t, c, "consume", "--topic", "b", "--group", "bench-g", "--consumers", "2", "--record-size", "100")
	if res.Records != 20000 || res.Errors != 0 {
		t.Errorf("consume --group: %+v, want 20000 records, no errors", res)
	}

	// An existing topic is used as it is, with a note.
	_, errOut = runBench(t, c, "produce", "--topic", "b", "--num-records", "10", "--partitions", "3")
	if !strings.Contains(errOut, "Topic b exists with 6 partitions, not --partitions 3") {
		t.Errorf("stderr %q does not note the partition count", errOut)
	}

	// The table.
	out, _, err = c.run("", "bench", "produce", "--topic", "b", "--num-records", "100", "--record-size", "10", "--progress", "0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mode         produce\n", "records      100\n", "bytes        1000\n", "errors       0\n", "\nlatency (ms)       p50"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if total, _ := benchEndOffsets(ctx, t, b.Addr, "b"); total != 20110 {
		t.Errorf("topic holds %d records, want 20110", total)
	}
}

// TestBenchE2E runs the end-to-end mode: every record arrives once, and
// both latencies are measured.
func TestBenchE2E(t *testing.T) {
	b := samsatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), benchTestTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}

	res, errOut := runBench(t, c, "e2e", "--topic", "e", "--throughput", "2000", "--duration", "3s", "--record-size", "64")
	if res.Mode != "e2e" || res.Errors != 0 || res.FirstError != "" || res.Lost == nil || *res.Lost != 0 ||
		res.Duplicates == nil || *res.Duplicates != 0 {
		t.Errorf("e2e result %+v, want no errors, lost 0, duplicates 0", res)
	}
	// 2000/s for 3 s is 6001 records (one at each end); allow a slow
	// start, never more than the pace allows.
	if res.Records < 1000 || res.Records > 6001 || res.Bytes != 64*res.Records {
		t.Errorf("e2e records %d (bytes %d), want 1000..6001 records of 64 B", res.Records, res.Bytes)
	}
	checkLatency(t, "e2e latency_ms", res.Latency)
	checkLatency(t, "e2e ack_latency_ms", res.AckLatency)
	if total, _ := benchEndOffsets(ctx, t, b.Addr, "e"); total < res.Records {
		t.Errorf("topic holds %d records, fewer than the %d received", total, res.Records)
	}
	// Progress (default every second) went to stderr, with the p99.
	if !regexp.MustCompile(`(?m)^ +[0-9.]+s  [0-9]+ records  .* errors  p99 [0-9.]+ ms$`).MatchString(errOut) {
		t.Errorf("stderr has no progress line:\n%s", errOut)
	}
}

// TestBenchNothingMeasured: a run in which no record completes after the
// warmup (here one record every 10 s: at 0 s, in the warmup, and at 10 s,
// after the end) fails and says so, rather than report 0 records/s with no
// error (seen when a stalled broker acknowledged nothing after the warmup).
func TestBenchNothingMeasured(t *testing.T) {
	b := samsatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), benchTestTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}
	for _, mode := range []string{"produce", "e2e"} {
		out, _, err := c.run("", "bench", mode, "--topic", "n-"+mode, "--throughput", "0.1", "--warmup", "1s", "--duration", "1s", "--json")
		if err == nil || !strings.Contains(err.Error(), "no record completed in the measured part") {
			t.Errorf("%s: err %v, want one saying no record completed", mode, err)
		}
		if res := decodeBenchJSON(t, out); res.Records != 0 || !strings.Contains(res.FirstError, "no record completed") {
			t.Errorf("%s: result %+v, want 0 records and first_error saying so", mode, res)
		}
	}
}

// TestBenchInterrupt cancels a long run (what SIGINT does) once progress
// shows records: the run stops early and still reports its results.
func TestBenchInterrupt(t *testing.T) {
	b := samsatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), benchTestTimeout)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	stderr := &cancelOnProgress{cancel: interrupt}
	var out bytes.Buffer
	start := time.Now()
	err := run(runCtx, []string{"-b", b.Addr, "bench", "produce", "--topic", "i", "--duration", "1m",
		"--throughput", "5000", "--progress", "50ms", "--record-size", "10", "--json"}, strings.NewReader(""), &out, stderr)
	if err != nil {
		t.Fatalf("interrupted bench: %v (stderr %s)", err, stderr.String())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("interrupted run took %v", d)
	}
	res := decodeBenchJSON(t, out.String())
	if res.Records == 0 || res.Errors != 0 || res.Seconds >= 60 {
		t.Errorf("interrupted run: %+v, want records > 0, no errors, less than 60 s", res)
	}
	if total, _ := benchEndOffsets(ctx, t, b.Addr, "i"); total < res.Records {
		t.Errorf("topic holds %d records, fewer than the %d acknowledged", total, res.Records)
	}
}

// cancelOnProgress is a stderr that calls cancel once a progress line
// shows at least one record.
type cancelOnProgress struct {
	cancel func()
	mu     sync.Mutex
	buf    bytes.Buffer
}

var progressRecords = regexp.MustCompile(`(?m)^ +[0-9.]+s  ([0-9]+) records`)

func (w *cancelOnProgress) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := progressRecords.FindSubmatch(p); m != nil {
		if n, _ := strconv.Atoi(string(m[1])); n > 0 {
			w.cancel()
		}
	}
	return len(p), nil
}

func (w *cancelOnProgress) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestBenchDeadBroker checks that every mode gives up, with an error and
// nothing on stdout, soon after --timeout when the broker accepts
// connections but never answers.
func TestBenchDeadBroker(t *testing.T) {
	blackhole := startBlackhole(t)
	for _, mode := range []string{"produce", "consume", "e2e"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out, _, err := runCLI(t, "", "-b", blackhole, "bench", mode, "--timeout", "1s", "--json")
			if err == nil || !strings.Contains(err.Error(), "no answer from") {
				t.Errorf("err = %v, want a timeout naming the brokers", err)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("gave up after %v, want about 1s", d)
			}
		})
	}
}
