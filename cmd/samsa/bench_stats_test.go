package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// exactPercentile is the brute-force answer Percentile approximates: the
// value of rank ceil(q*n) in sorted order.
func exactPercentile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func TestLatencyHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, f func() time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = f()
		}
		return out
	}
	tests := []struct {
		name   string
		values []time.Duration
	}{
		// Spread over the whole resolved range, 1 µs to 60 s.
		{"log-uniform 1us..60s", gen(100_000, func() time.Duration {
			return time.Duration(math.Exp(math.Log(1e3) + rng.Float64()*(math.Log(60e9)-math.Log(1e3))))
		})},
		// A typical latency distribution: a body and a long tail.
		{"exponential around 2ms", gen(50_000, func() time.Duration {
			return time.Duration(rng.ExpFloat64() * 2e6)
		})},
		{"normal around 500us", gen(50_000, func() time.Duration {
			return time.Duration(max(rng.NormFloat64()*50e3+500e3, 0))
		})},
		// Below histSubCount ns every value has its own bucket: exact.
		{"tiny values", gen(10_000, func() time.Duration { return time.Duration(rng.IntN(200)) })},
		{"few values", []time.Duration{3 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond}},
		{"all equal", gen(1000, func() time.Duration { return 1234567 })},
	}
	quantiles := []float64{0.0001, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h latencyHistogram
			for _, v := range tt.values {
				h.Record(v)
			}
			sorted := slices.Clone(tt.values)
			slices.Sort(sorted)
			if got, want := h.Count(), uint64(len(sorted)); got != want {
				t.Errorf("Count = %d, want %d", got, want)
			}
			if got, want := h.Max(), sorted[len(sorted)-1]; got != want {
				t.Errorf("Max = %v, want %v (exact)", got, want)
			}
			for _, q := range quantiles {
				got, want := h.Percentile(q), exactPercentile(sorted, q)
				if !withinRelative(got, want, histRelativeError) {
					t.Errorf("Percentile(%v) = %d ns, want %d ns within %.2f%%", q, got, want, 100*histRelativeError)
				}
			}
			// The extremes are exact.
			if got, want := h.Percentile(1), sorted[len(sorted)-1]; got != want {
				t.Errorf("Percentile(1) = %v, want max %v", got, want)
			}
			if got, want := h.Percentile(1e-9), sorted[0]; got != want {
				t.Errorf("Percentile(tiny) = %v, want min %v", got, want)
			}
		})
	}
}

func withinRelative(got, want time.Duration, rel float64) bool {
	if want < histSubCount {
		return got == want // the linear buckets are exact
	}
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

// TestHistBuckets checks the bucket layout itself: contiguous, each value
// inside its bucket, and every bucket narrow enough for the stated error.
func TestHistBuckets(t *testing.T) {
	next := uint64(0)
	for b := range histBucketCount {
		low, width := histBucketRange(b)
		if low != next {
			t.Fatalf("bucket %d starts at %d, want %d (buckets must be contiguous)", b, low, next)
		}
		if low >= histSubCount && float64(width) > float64(low)/histSubCount {
			t.Fatalf("bucket %d [%d, +%d) is wider than 1/%d of its start", b, low, width, histSubCount)
		}
		for _, v := range []uint64{low, low + width/2, low + width - 1} {
			if got := histBucket(v); got != b {
				t.Fatalf("histBucket(%d) = %d, want %d", v, got, b)
			}
		}
		next = low + width
	}
	if next-1 != histMaxValue {
		t.Errorf("last bucket ends at %d, want histMaxValue %d", next-1, histMaxValue)
	}
	if time.Duration(histMaxValue) < 60*time.Second {
		t.Errorf("histMaxValue %v is below the promised 60s", time.Duration(histMaxValue))
	}
}

func TestLatencyHistogramEdges(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		var h latencyHistogram
		if h.Count() != 0 || h.Max() != 0 || h.Percentile(0.5) != 0 || h.Percentile(1) != 0 {
			t.Errorf("empty: count %d max %v p50 %v p100 %v, want all 0", h.Count(), h.Max(), h.Percentile(0.5), h.Percentile(1))
		}
		if s := summarizeLatency(&h); *s != (latencySummary{}) {
			t.Errorf("summary of empty = %+v, want zeros", *s)
		}
	})
	t.Run("one value is exact", func(t *testing.T) {
		var h latencyHistogram
		h.Record(1234567 * time.Nanosecond)
		for _, q := range []float64{0, 0.5, 0.99, 0.999, 1} {
			if got := h.Percentile(q); got != 1234567 {
				t.Errorf("Percentile(%v) = %d, want 1234567", q, got)
			}
		}
		if s := summarizeLatency(&h); *s != (latencySummary{1.235, 1.235, 1.235, 1.235}) {
			t.Errorf("summary = %+v, want 1.235 ms everywhere", *s)
		}
	})
	t.Run("beyond the range", func(t *testing.T) {
		var h latencyHistogram
		for range 90 {
			h.Record(time.Millisecond)
		}
		for range 10 {
			h.Record(5 * time.Minute)
		}
		if got := h.Max(); got != 5*time.Minute {
			t.Errorf("Max = %v, want exactly 5m", got)
		}
		// Percentiles above the range saturate near histMaxValue.
		if got := h.Percentile(0.95); got < 60*time.Second || got > histMaxValue {
			t.Errorf("p95 = %v, want saturated in [60s, %v]", got, time.Duration(histMaxValue))
		}
		if got := h.Percentile(0.5); !withinRelative(got, time.Millisecond, histRelativeError) {
			t.Errorf("p50 = %v, want 1ms", got)
		}
	})
	t.Run("negative counts as zero", func(t *testing.T) {
		var h latencyHistogram
		h.Record(-time.Second)
		if h.Count() != 1 || h.Max() != 0 || h.Percentile(1) != 0 {
			t.Errorf("count %d max %v p100 %v, want 1, 0, 0", h.Count(), h.Max(), h.Percentile(1))
		}
	})
	t.Run("reset", func(t *testing.T) {
		var h latencyHistogram
		h.Record(time.Second)
		h.Reset()
		if h.Count() != 0 || h.Max() != 0 || h.Percentile(0.5) != 0 {
			t.Errorf("after Reset: count %d max %v p50 %v", h.Count(), h.Max(), h.Percentile(0.5))
		}
	})
}

func TestLatencyHistogramMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var whole, a, b, empty latencyHistogram
	for i := range 20_000 {
		v := time.Duration(rng.ExpFloat64() * 1e6)
		whole.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	var merged latencyHistogram
	merged.Merge(&empty) // merging nothing keeps it empty
	if merged.Count() != 0 || merged.Max() != 0 {
		t.Fatalf("merging an empty histogram: count %d max %v", merged.Count(), merged.Max())
	}
	merged.Merge(&a)
	merged.Merge(&b)
	merged.Merge(&empty)
	if merged != whole {
		t.Errorf("a merged with b differs from recording everything into one: count %d/%d min %v/%v max %v/%v",
			merged.Count(), whole.Count(), merged.min, whole.min, merged.Max(), whole.Max())
	}
	// The minimum survives a merge into a histogram with larger values.
	var small, large latencyHistogram
	small.Record(time.Microsecond)
	large.Record(time.Second)
	large.Merge(&small)
	if got := large.Percentile(0.01); got != time.Microsecond {
		t.Errorf("min after merge = %v, want 1µs", got)
	}
}

func TestLatencyHistogramRecordDoesNotAllocate(t *testing.T) {
	h := new(latencyHistogram)
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Microsecond) }); n != 0 {
		t.Errorf("Record allocates %v times per call", n)
	}
}

func TestPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name     string
		rate     float64
		sent     int64
		now      time.Duration
		wantDue  int64
		wantWait time.Duration
	}{
		{"first record is due at the start", 1000, 0, 0, 1, 0},
		{"second is due 1ms later", 1000, 1, 0, 0, time.Millisecond},
		{"half-way to the next", 1000, 1, 500 * time.Microsecond, 0, 500 * time.Microsecond},
		{"behind: ten are due", 1000, 1, 10 * time.Millisecond, 10, 0},
		{"after sending them", 1000, 11, 10 * time.Millisecond, 0, time.Millisecond},
		{"before the start", 1000, 0, -time.Second, 0, time.Second},
		{"fractional rate", 0.5, 1, time.Second, 0, time.Second},
		{"fractional rate, due", 0.5, 1, 2 * time.Second, 1, 0},
		{"unlimited", -1, 1_000_000, 0, math.MaxInt64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pacer{start: t0, rate: tt.rate, sent: tt.sent}
			if got := p.due(at(tt.now)); got != tt.wantDue {
				t.Errorf("due = %d, want %d", got, tt.wantDue)
			}
			if got := p.wait(at(tt.now)); got != tt.wantWait {
				t.Errorf("wait = %v, want %v", got, tt.wantWait)
			}
		})
	}
}

// TestPacerDoesNotDrift simulates a sender that always oversleeps: the
// absolute schedule lets it catch up, so by 10 s at 1000/s it has sent
// the 10001 records due in [0 s, 10 s], not fewer, and never more than
// were due at any moment.
func TestPacerDoesNotDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	t0 := time.Unix(1_000_000, 0)
	end := t0.Add(10 * time.Second)
	p := pacer{start: t0, rate: 1000}
	now := t0
	wakes := 0
	for now.Before(end) {
		p.sent += p.due(now)
		if limit := int64(now.Sub(t0)/time.Millisecond) + 1; p.sent > limit {
			t.Fatalf("at %v sent %d records, more than the %d due", now.Sub(t0), p.sent, limit)
		}
		// Sleep until the next record is due, plus up to 3 ms too long.
		now = now.Add(p.wait(now) + time.Duration(rng.IntN(3000))*time.Microsecond)
		wakes++
	}
	p.sent += p.due(end)
	if p.sent != 10_001 {
		t.Errorf("sent %d records by %v, want 10001", p.sent, end.Sub(t0))
	}
	if wakes > 9000 {
		t.Errorf("woke %d times: the sender should batch the records due after an oversleep", wakes)
	}
}

func TestSplitEvenly(t *testing.T) {
	tests := []struct {
		total int64
		n     int
		want  []int64
	}{
		{10, 1, []int64{10}},
		{10, 3, []int64{4, 3, 3}},
		{2, 4, []int64{1, 1, 0, 0}},
		{0, 2, []int64{0, 0}},
	}
	for _, tt := range tests {
		if got := splitEvenly(tt.total, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("splitEvenly(%d, %d) = %v, want %v", tt.total, tt.n, got, tt.want)
		}
	}
}

func TestBenchPayload(t *testing.T) {
	const size = 100
	payload := benchPayload(size)
	if !bytes.Equal(payload, benchPayload(size)) {
		t.Fatal("payload is not deterministic")
	}
	counts := map[byte]int{}
	for _, c := range payload {
		counts[c]++
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			t.Fatalf("payload byte %q is not a letter or digit", c)
		}
	}
	if len(counts) != 62 {
		t.Errorf("payload uses %d symbols, want 62", len(counts))
	}
	seen := map[string]bool{}
	for seq := range int64(1000) {
		v := payloadValue(payload, size, seq)
		if len(v) != size || cap(v) != size {
			t.Fatalf("value %d: len %d cap %d, want %d", seq, len(v), cap(v), size)
		}
		if seen[string(v)] {
			t.Fatalf("value %d repeats an earlier one", seq)
		}
		seen[string(v)] = true
	}
}

func TestE2ETracker(t *testing.T) {
	tr := newE2ETracker()
	receive := func(seq int64) bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.receiveLocked(seq)
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	for seq := range int64(200) {
		if seq != 7 { // 7 failed: never acknowledged
			tr.ack(seq)
		}
	}
	for seq := range int64(100) { // some arrive before their ack is known
		if !receive(seq) {
			t.Fatalf("first arrival of %d reported as a duplicate", seq)
		}
	}
	if receive(50) {
		t.Error("second arrival of 50 not reported as a duplicate")
	}
	drained := tr.producerFinished()
	if closed(drained) {
		t.Fatal("drained before records 100..199 arrived")
	}
	for seq := int64(100); seq < 199; seq++ {
		receive(seq)
	}
	if closed(drained) {
		t.Fatal("drained with 199 still missing")
	}
	if lost, dups := tr.outcome(); lost != 1 || dups != 1 {
		t.Errorf("outcome before the last = lost %d, duplicates %d; want 1, 1", lost, dups)
	}
	receive(199)
	if !closed(drained) {
		t.Fatal("not drained after every acknowledged record arrived")
	}
	if lost, dups := tr.outcome(); lost != 0 || dups != 1 {
		t.Errorf("outcome = lost %d, duplicates %d; want 0, 1", lost, dups)
	}

	// Nothing acknowledged: drained at once.
	if !closed(newE2ETracker().producerFinished()) {
		t.Error("a tracker without acknowledgements is not drained at once")
	}
}

func TestBitset(t *testing.T) {
	var a, b bitset
	for _, i := range []int64{0, 63, 64, 1000} {
		if a.set(i) {
			t.Errorf("set(%d) on an empty set reported present", i)
		}
		if !a.set(i) {
			t.Errorf("set(%d) twice not reported present", i)
		}
	}
	b.set(63)
	for _, tt := range []struct {
		i    int64
		want bool
	}{{0, true}, {1, false}, {63, true}, {64, true}, {999, false}, {1000, true}, {100_000, false}} {
		if got := a.has(tt.i); got != tt.want {
			t.Errorf("has(%d) = %v, want %v", tt.i, got, tt.want)
		}
	}
	if got := a.countAndNot(b); got != 3 {
		t.Errorf("countAndNot = %d, want 3", got)
	}
	if got := b.countAndNot(a); got != 0 {
		t.Errorf("countAndNot (shorter minus longer) = %d, want 0", got)
	}
}

// benchResultSample is a result of each mode as the runs build them.
func benchResultSample(mode string) benchResult {
	r := benchResult{Mode: mode, Topic: "t", RecordSize: 100}
	r.setThroughput(20000, 2_000_000, 2*time.Second)
	lat := &latencySummary{P50: 1.5, P99: 4.25, P999: 9, Max: 12.125}
	switch mode {
	case "produce":
		r.Latency = lat
	case "consume":
		ms := 12.5
		r.FirstRecordMillis = &ms
	case "e2e":
		var lost, dups int64
		r.Latency, r.AckLatency = lat, &latencySummary{P50: 1, P99: 2, P999: 3, Max: 4}
		r.Lost, r.Duplicates = &lost, &dups
	}
	return r
}

// TestBenchJSONShape decodes the JSON line of each mode and checks its
// field set, which the harness parsing it relies on.
func TestBenchJSONShape(t *testing.T) {
	common := []string{"mode", "topic", "record_size", "records", "bytes", "seconds",
		"records_per_sec", "mb_per_sec", "errors", "first_error"}
	tests := []struct {
		mode  string
		extra []string
	}{
		{"produce", []string{"latency_ms"}},
		{"consume", []string{"first_record_ms"}},
		{"e2e", []string{"latency_ms", "ack_latency_ms", "lost", "duplicates"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeBenchJSON(&buf, benchResultSample(tt.mode)); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") {
				t.Fatalf("want exactly one line holding one object, got %q", out)
			}
			var m map[string]any
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			want := append(slices.Clone(common), tt.extra...)
			var got []string
			for k := range m {
				got = append(got, k)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("fields %v, want %v", got, want)
			}
			for _, k := range []string{"latency_ms", "ack_latency_ms"} {
				if v, ok := m[k]; ok {
					lat, _ := v.(map[string]any)
					var keys []string
					for k := range lat {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					if !slices.Equal(keys, []string{"max", "p50", "p99", "p999"}) {
						t.Errorf("%s has fields %v, want max p50 p99 p999", k, keys)
					}
				}
			}
			if m["records"] != 20000.0 || m["bytes"] != 2e6 || m["seconds"] != 2.0 ||
				m["records_per_sec"] != 10000.0 || m["mb_per_sec"] != 1.0 || m["first_error"] != "" {
				t.Errorf("values: %s", out)
			}
		})
	}
}

func TestBenchSetThroughput(t *testing.T) {
	var r benchResult
	r.setThroughput(3, 3000, 0)
	if r.RecordsPerSec != 0 || r.MBPerSec != 0 || r.Records != 3 || r.Bytes != 3000 {
		t.Errorf("no elapsed time: %+v, want rates 0", r)
	}
	r.setThroughput(1000, 1024000, 1500*time.Millisecond)
	if r.Seconds != 1.5 || math.Abs(r.RecordsPerSec-666.667) > 1e-9 || math.Abs(r.MBPerSec-0.682667) > 1e-9 {
		t.Errorf("got seconds %v, records/s %v, MB/s %v; want 1.5, 666.667, 0.682667", r.Seconds, r.RecordsPerSec, r.MBPerSec)
	}
}

func TestBenchTable(t *testing.T) {
	r := benchResultSample("e2e")
	r.Errors, r.FirstError = 2, "2 records received more than once"
	var buf bytes.Buffer
	if err := writeBenchTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := `mode         e2e
topic        t
record size  100 B
records      20000
bytes        2000000
seconds      2.000
records/s    10000.0
MB/s         1.00
lost         0
duplicates   0
errors       2
first error  2 records received more than once

latency (ms)       p50       p99     p99.9       max
end-to-end       1.500     4.250     9.000    12.125
ack              1.000     2.000     3.000     4.000
`
	if got := buf.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}

	buf.Reset()
	if err := writeBenchTable(&buf, benchResultSample("consume")); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "first record  12.500 ms\n") || strings.Contains(got, "latency") {
		t.Errorf("consume table:\n%s\nwant a first record row and no latency", got)
	}
}

func TestFormatProgress(t *testing.T) {
	prev := progressSample{records: 1000, bytes: 100_000}
	cur := progressSample{records: 3000, bytes: 2_100_000, errors: 1, hasLatency: true, p99: 4250 * time.Microsecond}
	got := formatProgress(3*time.Second, 2*time.Second, prev, cur)
	want := "    3.0s  3000 records  1000.0 records/s  1.00 MB/s  1 errors  p99 4.250 ms\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	cur.hasLatency, cur.warmup = false, true
	got = formatProgress(time.Second, 0, progressSample{}, cur)
	want = "    1.0s  3000 records  0.0 records/s  0.00 MB/s  1 errors  (warmup)\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestBenchUsageErrors runs bench with bad flags: each must fail before
// any broker is contacted (nothing listens on the bootstrap address, so
// reaching the network would give a different error).
func TestBenchUsageErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"record size 0", []string{"produce", "--record-size", "0"}, "--record-size must be at least 1"},
		{"e2e record size 8", []string{"e2e", "--record-size", "8"}, "--record-size must be at least 16 for e2e"},
		{"unknown acks", []string{"produce", "--acks", "2"}, "invalid --acks"},
		{"e2e unknown acks", []string{"e2e", "--acks", "most"}, "invalid --acks"},
		{"unknown compression", []string{"produce", "--compression", "brotli"}, "invalid --compression"},
		{"throughput 0", []string{"produce", "--throughput", "0"}, "--throughput must be"},
		{"throughput -2", []string{"e2e", "--throughput", "-2"}, "--throughput must be"},
		{"negative records", []string{"produce", "--num-records", "-1"}, "--num-records must not be negative"},
		{"neither count nor time", []string{"produce", "--num-records", "0"}, "needs --num-records or --duration"},
		{"e2e neither", []string{"e2e", "--duration", "0"}, "needs --num-records or --duration"},
		{"negative duration", []string{"e2e", "--duration", "-1s"}, "--duration must not be negative"},
		{"zero producers", []string{"produce", "--producers", "0"}, "--producers must be at least 1"},
		{"small batches", []string{"produce", "--batch-max-bytes", "100"}, "--batch-max-bytes must be at least 512"},
		{"zero partitions", []string{"produce", "--partitions", "0"}, "--partitions must be at least 1"},
		{"zero replicas", []string{"consume", "--replication-factor", "0"}, "--replication-factor must be at least 1"},
		{"bad topic config", []string{"produce", "--topic-config", "retention.ms"}, "want key=value"},
		{"zero timeout", []string{"consume", "--timeout", "0s"}, "--timeout must be positive"},
		{"negative progress", []string{"e2e", "--progress", "-1s"}, "--progress must not be negative"},
		{"consume warmup", []string{"consume", "--warmup", "1s"}, "--warmup applies to produce and e2e only"},
		{"zero consumers", []string{"consume", "--consumers", "0"}, "--consumers must be at least 1"},
		{"consume has no throughput", []string{"consume", "--throughput", "5"}, "unknown flag: --throughput"},
		{"e2e has no producers", []string{"e2e", "--producers", "2"}, "unknown flag: --producers"},
		{"no arguments", []string{"produce", "extra"}, `unknown command "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-b", "127.0.0.1:1", "bench"}, tt.args...)
			out, _, err := runCLI(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

// TestBenchDefaults checks the mode defaults validate fills in.
func TestBenchDefaults(t *testing.T) {
	none := func(string) bool { return false }
	tests := []struct {
		mode         string
		changed      func(string) bool
		numRecords   int64
		duration     time.Duration
		wantRecords  int64
		wantDuration time.Duration
	}{
		{"produce", none, 0, 0, benchDefaultProduceRecords, 0},
		{"produce", func(f string) bool { return f == "duration" }, 0, time.Minute, 0, time.Minute},
		{"e2e", none, 0, 0, 0, benchDefaultE2EDuration},
		{"e2e", func(f string) bool { return f == "num-records" }, 500, 0, 500, 0},
		{"consume", none, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		o := &benchOptions{mode: tt.mode, topic: "t", recordSize: 100, partitions: 1, replicationFactor: -1,
			numRecords: tt.numRecords, duration: tt.duration, throughput: -1, acks: "all", compression: "none",
			producers: 1, batchMaxBytes: 1 << 20, maxBufferedRecords: 1, consumers: 1, fetchMaxBytes: 1, fetchMaxPartitionBytes: 1}
		o.timeout = time.Second
		if err := o.validate(tt.changed); err != nil {
			t.Errorf("%s: %v", tt.mode, err)
			continue
		}
		if o.numRecords != tt.wantRecords || o.duration != tt.wantDuration {
			t.Errorf("%s: num-records %d duration %v, want %d %v", tt.mode, o.numRecords, o.duration, tt.wantRecords, tt.wantDuration)
		}
	}
}
