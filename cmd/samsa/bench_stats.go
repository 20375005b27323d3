package main

// The arithmetic and output of `samsa bench`: the latency histogram, the
// pacer, progress lines and the result table and JSON. Pure functions and
// plain types, tested in bench_stats_test.go; bench.go and bench_*.go do the
// I/O around them.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"
	"text/tabwriter"
	"time"
)

// The latency histogram is log-linear, like HdrHistogram: values below
// histSubCount nanoseconds each have a bucket of their own; above that,
// every power of two [2^k, 2^(k+1)) is cut into histSubCount equal buckets.
// A bucket's width is therefore at most 1/histSubCount of its lower bound,
// and reporting its midpoint is off by at most 1/(2*histSubCount) = 0.39 %
// of the true value. Values are nanoseconds.
const (
	histSubBits  = 7
	histSubCount = 1 << histSubBits // 128
	// histOctaves is the number of powers of two above the linear range:
	// the histogram resolves values up to 2^(histSubBits+histOctaves) ns.
	histOctaves = 29
	// histBucketCount covers [0, histMaxValue].
	histBucketCount = (histOctaves + 1) * histSubCount
	// histMaxValue (2^36-1 ns, about 68.7 s) is the largest value the
	// histogram resolves. Larger values are counted as histMaxValue, so
	// percentiles saturate there; Max stays exact.
	histMaxValue = 1<<(histSubBits+histOctaves) - 1
)

// histRelativeError bounds |Percentile - exact| / exact for values from
// histSubCount ns up to histMaxValue; below histSubCount ns values are exact.
const histRelativeError = 1.0 / (2 * histSubCount)

// histBucket returns the bucket of v, which must be at most histMaxValue.
func histBucket(v uint64) int {
	if v < histSubCount {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1 // >= 0; v>>shift is in [histSubCount, 2*histSubCount)
	return (shift+1)*histSubCount + int(v>>shift) - histSubCount
}

// histBucketRange returns the smallest value of bucket b and its width.
func histBucketRange(b int) (low, width uint64) {
	if b < histSubCount {
		return uint64(b), 1
	}
	shift := b/histSubCount - 1
	mantissa := uint64(b%histSubCount + histSubCount)
	return mantissa << shift, 1 << shift
}

// latencyHistogram counts latencies. Its zero value is empty and ready;
// Record does not allocate. It is not safe for concurrent use: benchStats
// guards it.
type latencyHistogram struct {
	counts [histBucketCount]uint64
	// count is the number of values recorded.
	count uint64
	// min and max are the exact extremes (meaningful when count > 0).
	min, max time.Duration
}

// Record adds one value. Negative values (a clock stepped back) count as 0.
func (h *latencyHistogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	if h.count == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.count++
	v := uint64(d)
	if v > histMaxValue {
		v = histMaxValue
	}
	h.counts[histBucket(v)]++
}

// Merge adds every value of o to h.
func (h *latencyHistogram) Merge(o *latencyHistogram) {
	if o.count == 0 {
		return
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.count += o.count
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// Reset empties h.
func (h *latencyHistogram) Reset() { *h = latencyHistogram{} }

// Count returns the number of values recorded.
func (h *latencyHistogram) Count() uint64 { return h.count }

// Max returns the largest value recorded, exactly; 0 when empty.
func (h *latencyHistogram) Max() time.Duration { return h.max }

// Percentile returns the value at quantile q (0 < q <= 1): the value of
// rank ceil(q*count) in sorted order, within histRelativeError of it, and
// exact for the first and last rank. It returns 0 when h is empty.
func (h *latencyHistogram) Percentile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	rank = min(max(rank, 1), h.count)
	switch rank {
	case 1:
		return h.min
	case h.count:
		return h.max
	}
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := histBucketRange(b)
			v := time.Duration(low + (width-1)/2)
			// The extremes are known exactly and lie in their buckets, so
			// clamping only moves the answer towards the true value.
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// latencySummary is a latency distribution in milliseconds, as printed.
type latencySummary struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func summarizeLatency(h *latencyHistogram) *latencySummary {
	return &latencySummary{
		P50:  durationMillis(h.Percentile(0.50)),
		P99:  durationMillis(h.Percentile(0.99)),
		P999: durationMillis(h.Percentile(0.999)),
		Max:  durationMillis(h.Max()),
	}
}

// durationMillis converts to milliseconds rounded to the microsecond.
func durationMillis(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}

// pacer spreads records evenly over time at rate records per second, on an
// absolute schedule: record n (from 0) is due at start + n/rate. The sender
// asks how many records are due, sends them, and sleeps until the next one
// is due, so neither rounding nor oversleeping accumulates: after a stall
// the sender catches up, and over the run the average rate is the target.
// A pacer belongs to one sending goroutine.
type pacer struct {
	start time.Time
	// rate is in records per second; zero or less means unlimited.
	rate float64
	// sent counts the records sent so far; the sender adds to it.
	sent int64
}

// due returns how many more records may be sent at now.
func (p *pacer) due(now time.Time) int64 {
	if p.rate <= 0 {
		return math.MaxInt64
	}
	elapsed := now.Sub(p.start)
	if elapsed < 0 {
		return 0
	}
	// Record n is due once elapsed >= n/rate: records 0..floor(elapsed*rate).
	n := int64(math.Floor(float64(elapsed)*p.rate/1e9)) + 1 - p.sent
	return max(n, 0)
}

// wait returns how long from now until the next record is due; 0 if it is
// due already or the rate is unlimited.
func (p *pacer) wait(now time.Time) time.Duration {
	if p.rate <= 0 {
		return 0
	}
	next := p.start.Add(time.Duration(math.Ceil(float64(p.sent) * 1e9 / p.rate)))
	return max(next.Sub(now), 0)
}

// splitEvenly splits total into n shares that differ by at most one, the
// larger ones first.
func splitEvenly(total int64, n int) []int64 {
	shares := make([]int64, n)
	for i := range shares {
		shares[i] = total / int64(n)
		if int64(i) < total%int64(n) {
			shares[i]++
		}
	}
	return shares
}

// benchResult is the outcome of one bench run, printed as a table or as
// one JSON line (the interface a harness parses; see bench.go).
type benchResult struct {
	Mode       string `json:"mode"`
	Topic      string `json:"topic"`
	RecordSize int    `json:"record_size"`
	// Records and Bytes count the records measured and their value bytes.
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"first_error"`
	// Latency is the ack latency (produce) or the end-to-end latency
	// (e2e); consume has none.
	Latency *latencySummary `json:"latency_ms,omitempty"`
	// AckLatency is the produce ack latency of e2e.
	AckLatency *latencySummary `json:"ack_latency_ms,omitempty"`
	// Lost and Duplicates are set by e2e only.
	Lost       *int64 `json:"lost,omitempty"`
	Duplicates *int64 `json:"duplicates,omitempty"`
	// FirstRecordMillis is set by consume only.
	FirstRecordMillis *float64 `json:"first_record_ms,omitempty"`
}

// setThroughput sets Records, Bytes, Seconds and the rates derived from
// them. With no measurable time the rates are 0.
func (r *benchResult) setThroughput(records, bytes int64, elapsed time.Duration) {
	r.Records, r.Bytes = records, bytes
	r.Seconds = roundTo(elapsed.Seconds(), 1e6)
	if elapsed > 0 {
		s := elapsed.Seconds()
		r.RecordsPerSec = roundTo(float64(records)/s, 1e3)
		r.MBPerSec = roundTo(float64(bytes)/1e6/s, 1e6)
	} else {
		r.RecordsPerSec, r.MBPerSec = 0, 0
	}
}

// roundTo rounds x to 1/scale (scale a power of ten): dividing by the
// exact scale gives the float nearest the decimal, which prints short.
func roundTo(x, scale float64) float64 { return math.Round(x*scale) / scale }

// writeBenchJSON writes r as one line of JSON.
func writeBenchJSON(w io.Writer, r benchResult) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeBenchTable writes r as an aligned two-column table, then the
// latencies, if any, as a table of percentiles.
func writeBenchTable(w io.Writer, r benchResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...)
	}
	row("mode", "%s", r.Mode)
	row("topic", "%s", r.Topic)
	row("record size", "%d B", r.RecordSize)
	row("records", "%d", r.Records)
	row("bytes", "%d", r.Bytes)
	row("seconds", "%.3f", r.Seconds)
	row("records/s", "%.1f", r.RecordsPerSec)
	row("MB/s", "%.2f", r.MBPerSec)
	if r.FirstRecordMillis != nil {
		row("first record", "%.3f ms", *r.FirstRecordMillis)
	}
	if r.Lost != nil {
		row("lost", "%d", *r.Lost)
	}
	if r.Duplicates != nil {
		row("duplicates", "%d", *r.Duplicates)
	}
	row("errors", "%d", r.Errors)
	if r.FirstError != "" {
		row("first error", "%s", r.FirstError)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	type latencyRow struct {
		name string
		s    *latencySummary
	}
	var rows []latencyRow
	switch {
	case r.Mode == "e2e":
		rows = []latencyRow{{"end-to-end", r.Latency}, {"ack", r.AckLatency}}
	default:
		rows = []latencyRow{{"ack", r.Latency}}
	}
	var b strings.Builder
	for _, lr := range rows {
		if lr.s == nil {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\n%-12s%10s%10s%10s%10s\n", "latency (ms)", "p50", "p99", "p99.9", "max")
		}
		fmt.Fprintf(&b, "%-12s%10.3f%10.3f%10.3f%10.3f\n", lr.name, lr.s.P50, lr.s.P99, lr.s.P999, lr.s.Max)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// progressSample is what a run has done so far, for one progress line.
type progressSample struct {
	// records and bytes count every record so far, warmup included.
	records, bytes int64
	errors         int64
	// p99 is over the records since the previous sample; hasLatency says
	// whether the mode measures latency at all.
	p99        time.Duration
	hasLatency bool
	// warmup is set while the run is still warming up.
	warmup bool
}

// formatProgress renders one progress line: prev and cur are samples
// taken interval apart, at elapsed since the start of the run.
func formatProgress(elapsed, interval time.Duration, prev, cur progressSample) string {
	var b strings.Builder
	secs := interval.Seconds()
	rate, mb := 0.0, 0.0
	if secs > 0 {
		rate = float64(cur.records-prev.records) / secs
		mb = float64(cur.bytes-prev.bytes) / 1e6 / secs
	}
	fmt.Fprintf(&b, "%7.1fs  %d records  %.1f records/s  %.2f MB/s  %d errors",
		elapsed.Seconds(), cur.records, rate, mb, cur.errors)
	if cur.hasLatency {
		fmt.Fprintf(&b, "  p99 %.3f ms", durationMillis(cur.p99))
	}
	if cur.warmup {
		b.WriteString("  (warmup)")
	}
	b.WriteByte('\n')
	return b.String()
}
