package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(tc.in)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median reordered its input: %v", tc.in)
		}
	}
}

func TestRotate(t *testing.T) {
	s := []string{"a", "b", "c"}
	for k, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if got := rotate(s, k); !slices.Equal(got, want) {
			t.Errorf("rotate(%v, %d) = %v, want %v", s, k, got, want)
		}
	}
	if !slices.Equal(s, []string{"a", "b", "c"}) {
		t.Errorf("rotate changed its input: %v", s)
	}
}

func TestParseBenchJSON(t *testing.T) {
	out := "some line\n" +
		`{"mode":"e2e","records":100,"records_per_sec":10000.5,"mb_per_sec":1,"errors":0,` +
		`"latency_ms":{"p50":0.5,"p99":2,"p999":4,"max":9},"ack_latency_ms":{"p50":0.3,"p99":1,"p999":2,"max":3},"lost":0}` + "\n"
	rep, err := parseBenchJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "e2e" || rep.Records != 100 || rep.RecordsPerSec != 10000.5 ||
		rep.Latency == nil || rep.Latency.P99 != 2 || rep.AckLatency == nil || rep.AckLatency.Max != 3 {
		t.Errorf("parsed %+v", rep)
	}
	for _, bad := range []string{"", "\n\n", "not json", `{"records":1}`} {
		if _, err := parseBenchJSON(bad); err == nil {
			t.Errorf("parseBenchJSON(%q): no error", bad)
		}
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"-rounds", "3", "-targets", "samsa, kfake", "-workloads", "e2e-100B-10k", "-topic-config", "flush.messages=9"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.rounds != 3 || !slices.Equal(o.targets, []string{"samsa", "kfake"}) || !slices.Equal(o.workloads, []string{"e2e-100B-10k"}) ||
		!slices.Equal(o.topicConfigs, []string{"flush.messages=9"}) {
		t.Errorf("parsed %+v", o)
	}
	if got := systemsFor([]string{"samsa3-rf1"}); len(got) != 1 || got[0].name != "samsa3" {
		t.Errorf("systemsFor(samsa3-rf1) = %v", got)
	}
	for _, bad := range [][]string{
		{"-targets", "redpanda"},
		{"-workloads", "produce-1MiB"},
		{"-targets", ","},
		{"-rounds", "0"},
		{"-duration", "0s"},
		{"-targets", "base3-rf1"},
		{"-topic-config", "novalue"},
		{"extra"},
	} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("parseOptions(%q): no error", bad)
		}
	}
}

func TestFormatReport(t *testing.T) {
	lat := func(p99 float64) *latency { return &latency{P50: p99 / 4, P99: p99, P999: 2 * p99, Max: 3 * p99} }
	rs := []result{
		{round: 1, series: "kfake", workload: "produce-1KiB", report: benchReport{RecordsPerSec: 100, MBPerSec: 0.1, Latency: lat(10)}, cores: 1},
		{round: 2, series: "kfake", workload: "produce-1KiB", report: benchReport{RecordsPerSec: 300, MBPerSec: 0.3, Latency: lat(30)}, cores: 1},
		{round: 1, series: "samsa", workload: "produce-1KiB", report: benchReport{RecordsPerSec: 300, MBPerSec: 0.3, Latency: lat(10)}, cores: 0.5},
		{round: 2, series: "samsa", workload: "produce-1KiB", report: benchReport{RecordsPerSec: 500, MBPerSec: 0.5, Latency: lat(10)}, cores: 0.7},
		{round: 1, series: "samsa3-rf3", workload: "produce-1KiB", report: benchReport{RecordsPerSec: 150, Latency: lat(40)}},
		{round: 1, series: "samsa3-rf1", workload: "produce-1KiB", report: benchReport{RecordsPerSec: 200, Latency: lat(20)}},
		{round: 1, series: "samsa", workload: "consume-1KiB", report: benchReport{RecordsPerSec: 1000}},
		{round: 1, series: "base", workload: "consume-1KiB", report: benchReport{RecordsPerSec: 400}},
	}
	ss := summarize(rs)
	if len(ss) != 6 {
		t.Fatalf("%d summaries, want 6: %+v", len(ss), ss)
	}
	// Medians: kfake 200 rec/s p99 20; samsa 400 rec/s p99 10, cores 0.6.
	out := formatReport(ss)
	for _, want := range []string{
		"### produce-1KiB",
		"| kfake | 2 | 200 | 0.2 | 1.00 | 5.00 | 20.00 | 40.00 | 1.00× | 1.00× |",
		"| samsa | 2 | 400 | 0.4 | 0.60 | 2.50 | 10.00 | 20.00 | 2.00× | 0.50× |",
		"- RF 3 against RF 1: rec/s 0.75×, p99 2.00×",
		"### consume-1KiB",
		"| samsa | 1 | 1000 | 0.0 | 0.00 | - | - | - | - | - |",
		"- samsa against base: rec/s 2.50×\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "### produce-1KiB") > strings.Index(out, "### consume-1KiB") {
		t.Errorf("workloads out of order:\n%s", out)
	}
}
