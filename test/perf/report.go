package main

import (
	"fmt"
	"slices"
	"strings"
)

// result is one measured run.
type result struct {
	round    int
	series   string
	workload string
	report   benchReport
	cores    float64 // broker CPU over the run, in cores
}

func (r result) short() string {
	s := fmt.Sprintf("%10.0f rec/s %8.1f MB/s  broker %.2f cores", r.report.RecordsPerSec, r.report.MBPerSec, r.cores)
	if l := r.report.Latency; l != nil {
		s += fmt.Sprintf("  p50 %.2f p99 %.2f p99.9 %.2f ms", l.P50, l.P99, l.P999)
	}
	return s
}

// summary is the median of one series' runs of one workload.
type summary struct {
	workload, series string
	runs             int
	recPerSec        float64
	mbPerSec         float64
	cores            float64
	hasLatency       bool
	p50, p99, p999   float64
}

// summarize groups results by workload and series, in the order of
// workloads() and allSeries(), and takes medians.
func summarize(rs []result) []summary {
	var out []summary
	for _, w := range workloadNames() {
		for _, s := range allSeries() {
			var thr, mb, cores, p50, p99, p999 []float64
			for _, r := range rs {
				if r.workload != w || r.series != s {
					continue
				}
				thr = append(thr, r.report.RecordsPerSec)
				mb = append(mb, r.report.MBPerSec)
				cores = append(cores, r.cores)
				if l := r.report.Latency; l != nil {
					p50, p99, p999 = append(p50, l.P50), append(p99, l.P99), append(p999, l.P999)
				}
			}
			if len(thr) == 0 {
				continue
			}
			out = append(out, summary{
				workload: w, series: s, runs: len(thr),
				recPerSec: median(thr), mbPerSec: median(mb), cores: median(cores),
				hasLatency: len(p50) == len(thr),
				p50:        median(p50), p99: median(p99), p999: median(p999),
			})
		}
	}
	return out
}

// median of xs (the mean of the middle two for an even count); 0 if empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio formats a/b, or "-" when b is missing or zero.
func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// comparisons are the ratios printed under each table, when both series
// ran.
var comparisons = []struct{ label, a, b string }{
	{"RF 3 against RF 1", "samsa3-rf3", "samsa3-rf1"},
	{"samsa against base", "samsa", "base"},
	{"samsa3-rf3 against base3-rf3", "samsa3-rf3", "base3-rf3"},
	{"samsa3-rf1 against base3-rf1", "samsa3-rf1", "base3-rf1"},
	{"base: RF 3 against RF 1", "base3-rf3", "base3-rf1"},
}

// formatReport prints one Markdown table per workload: the medians, the
// throughput and p99 of each series against kfake, then the comparisons.
func formatReport(ss []summary) string {
	var b strings.Builder
	for _, w := range workloadNames() {
		var rows []summary
		find := map[string]summary{}
		for _, s := range ss {
			if s.workload == w {
				rows = append(rows, s)
				find[s.series] = s
			}
		}
		if len(rows) == 0 {
			continue
		}
		kf, haveKfake := find["kfake"]
		fmt.Fprintf(&b, "### %s\n\n", w)
		b.WriteString("| series | runs | rec/s | MB/s | broker cores | p50 ms | p99 ms | p99.9 ms | rec/s vs kfake | p99 vs kfake |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range rows {
			lat := "| - | - | - "
			if s.hasLatency {
				lat = fmt.Sprintf("| %.2f | %.2f | %.2f ", s.p50, s.p99, s.p999)
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.1f | %.2f %s| %s | %s |\n",
				s.series, s.runs, s.recPerSec, s.mbPerSec, s.cores, lat,
				ratio(s.recPerSec, kf.recPerSec, haveKfake),
				ratio(s.p99, kf.p99, haveKfake && s.hasLatency && kf.hasLatency))
		}
		sep := "\n"
		for _, pr := range comparisons {
			x, okx := find[pr.a]
			y, oky := find[pr.b]
			if !okx || !oky {
				continue
			}
			fmt.Fprintf(&b, "%s- %s: rec/s %s", sep, pr.label, ratio(x.recPerSec, y.recPerSec, true))
			sep = ""
			if x.hasLatency && y.hasLatency {
				fmt.Fprintf(&b, ", p99 %s", ratio(x.p99, y.p99, true))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}
