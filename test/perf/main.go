// Command perf is samsa's side-by-side benchmark (issue 11). It runs the
// same `samsa bench` workloads, as a separate client process, against:
//
//   - samsa: one broker, durable default (acknowledged once fsync'd);
//   - kfake: franz-go's fake broker (one broker) on disk, page cache
//     only, as Kafka's default flush settings;
//   - kfake-fsync: the same with an fsync per batch;
//   - samsa3-rf3 and samsa3-rf1: three samsa brokers on this machine,
//     with topics of replication factor 3 (min.insync.replicas 2) and 1.
//
// Every target starts fresh (new data directories) once per round; the
// order of the targets rotates from round to round, and the report gives
// the median over the rounds with ratios against kfake and RF 3 against
// RF 1, which is what to read on a shared machine. The CPU the broker
// processes used (user and system time from /proc) is reported in cores.
//
//	go run ./test/perf                          # 2 rounds, every workload
//	go run ./test/perf -rounds 3 -duration 20s -workloads produce-1KiB,consume-1KiB
//	go run ./test/perf biglog -gib 20           # a large log: throughput, restart after kill -9
//
// The results and the commands are recorded in docs/performance.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "kfake" {
		if err := serveKfake(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "perf kfake: %v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if len(os.Args) > 1 && os.Args[1] == "biglog" {
		err = runBigLog(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "perf: %v\n", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	rounds    int
	duration  time.Duration
	warmup    time.Duration
	consumeN  int
	targets   []string
	workloads []string
	workDir   string
	keep      bool
	baseline  string
	// topicConfigs are extra --topic-config settings for every topic.
	topicConfigs []string
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.rounds, "rounds", 2, "rounds; each starts every target afresh, in a rotated order")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each timed produce and e2e run (after -warmup)")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "untimed start of each produce and e2e run")
	fs.IntVar(&o.consumeN, "consume-records", 1_000_000, "1 KiB records produced (untimed) and then read by consume-1KiB")
	targets := fs.String("targets", "", "comma-separated series to run (default: all, the base ones with -baseline)")
	fs.StringVar(&o.baseline, "baseline", "", "another samsa binary (say the previous commit's) to measure as the base series")
	workloads := fs.String("workloads", strings.Join(workloadNames(), ","), "comma-separated workloads to run")
	fs.StringVar(&o.workDir, "dir", "", "working directory for binaries, data and logs (default: a new temporary directory)")
	fs.Func("topic-config", "a topic setting key=value for every series' topics (repeatable), e.g. flush.messages=1000000 for Kafka's page-cache mode", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("want key=value, got %q", v)
		}
		o.topicConfigs = append(o.topicConfigs, v)
		return nil
	})
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (the brokers' logs) afterwards")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.rounds < 1 {
		return nil, errors.New("-rounds must be at least 1")
	}
	if o.duration <= 0 || o.warmup < 0 || o.consumeN < 1 {
		return nil, errors.New("-duration must be positive, -warmup not negative, -consume-records positive")
	}
	if *targets == "" {
		*targets = strings.Join(seriesNames(o.baseline != ""), ",")
	}
	var err error
	if o.targets, err = pick(*targets, allSeries()); err != nil {
		return nil, fmt.Errorf("-targets: %w", err)
	}
	if o.workloads, err = pick(*workloads, workloadNames()); err != nil {
		return nil, fmt.Errorf("-workloads: %w", err)
	}
	if o.baseline == "" {
		for _, s := range systemsFor(o.targets) {
			if s.base {
				return nil, fmt.Errorf("-targets: %s needs -baseline", s.name)
			}
		}
	} else if o.baseline, err = filepath.Abs(o.baseline); err != nil {
		return nil, err
	}
	return o, nil
}

// pick splits a comma-separated list and checks each name is known.
func pick(list string, known []string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		ok := false
		for _, k := range known {
			ok = ok || k == s
		}
		if !ok {
			return nil, fmt.Errorf("unknown %q (known: %s)", s, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("empty")
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "samsa-perf-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(o.workDir)
		}
	}
	samsaBin, err := buildSamsa(ctx, o.workDir, stderr)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := &environment{samsa: samsaBin, baseline: o.baseline, self: self, dir: o.workDir, log: stderr}

	var results []result
	systems := systemsFor(o.targets)
	for round := 1; round <= o.rounds; round++ {
		order := rotate(systems, round-1)
		for _, sys := range order {
			rs, err := runSystem(ctx, env, o, sys, round)
			results = append(results, rs...)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, sys.name, err)
			}
		}
	}
	fmt.Fprintf(stdout, "\n%d round(s), %v per timed run, medians over the rounds\n\n", o.rounds, o.duration)
	_, err = io.WriteString(stdout, formatReport(summarize(results)))
	return err
}

// buildSamsa builds the samsa binary of this checkout into dir.
func buildSamsa(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "samsa")
	fmt.Fprintf(stderr, "building %s\n", bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/samsa")
	build.Dir, build.Stdout, build.Stderr = root, stderr, stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building samsa: %w", err)
	}
	return bin, nil
}

// moduleRoot is the directory of the samsa module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run perf from inside the samsa module")
	}
	return filepath.Dir(mod), nil
}

// rotate returns s rotated left by k.
func rotate[T any](s []T, k int) []T {
	if len(s) == 0 {
		return nil
	}
	k %= len(s)
	return append(append([]T{}, s[k:]...), s[:k]...)
}

// runSystem starts one system, runs every workload against each of its
// series, and stops it.
func runSystem(ctx context.Context, env *environment, o *options, sys system, round int) ([]result, error) {
	dir := filepath.Join(env.dir, fmt.Sprintf("r%d-%s", round, sys.name))
	fmt.Fprintf(env.log, "round %d: starting %s\n", round, sys.name)
	live, err := sys.start(ctx, env, dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		live.stop()
		if !o.keep {
			os.RemoveAll(dir)
		}
	}()
	var out []result
	for _, w := range workloadsFor(o.workloads) {
		for _, s := range sys.series {
			if !contains(o.targets, s.name) {
				continue
			}
			r, err := runWorkload(ctx, env, o, live, s, w, round)
			if err != nil {
				return out, fmt.Errorf("%s %s: %w", s.name, w.name, err)
			}
			fmt.Fprintf(env.log, "round %d %-11s %-13s %s\n", round, s.name, w.name, r.short())
			out = append(out, r)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runWorkload runs one workload's preparation (untimed) and its measured
// bench command, and reads the broker processes' CPU time around the
// latter.
func runWorkload(ctx context.Context, env *environment, o *options, live *running, s series, w workload, round int) (result, error) {
	topic := fmt.Sprintf("perf-%s-%s", w.name, s.name)
	common := []string{"--bootstrap-server", live.bootstrap, "--topic", topic, "--json", "--progress", "0",
		"--partitions", strconv.Itoa(cmp.Or(w.partitions, 6)), "--replication-factor", fmt.Sprint(s.rf)}
	for _, c := range append(slices.Clone(s.configs), o.topicConfigs...) {
		common = append(common, "--topic-config", c)
	}
	if w.prep != nil {
		if _, err := env.bench(ctx, append(w.prep(o), common...)); err != nil {
			return result{}, fmt.Errorf("preparing: %w", err)
		}
	}
	before, err := live.cpu()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	rep, err := env.bench(ctx, append(w.args(o), common...))
	wall := time.Since(start)
	after, cpuErr := live.cpu()
	if err != nil {
		return result{}, err
	}
	if cpuErr != nil {
		return result{}, cpuErr
	}
	return result{
		round: round, series: s.name, workload: w.name, report: rep,
		cores: (after - before).Seconds() / wall.Seconds(),
	}, nil
}

// environment holds what every run needs.
type environment struct {
	samsa    string // the samsa binary (server and bench)
	baseline string // the -baseline samsa binary (server only)
	self     string // this program's binary, re-executed as the kfake server
	dir      string
	log      io.Writer
}

// bench runs `samsa bench` with args and decodes its JSON line.
func (e *environment) bench(ctx context.Context, args []string) (benchReport, error) {
	cmd := exec.CommandContext(ctx, e.samsa, append([]string{"bench"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	rep, err := parseBenchJSON(stdout.String())
	if err != nil {
		return rep, fmt.Errorf("samsa bench %s: %v (%v; stderr: %s)", strings.Join(args, " "), err, runErr, strings.TrimSpace(stderr.String()))
	}
	if runErr != nil || rep.Errors > 0 {
		return rep, fmt.Errorf("samsa bench %s: %v, %d errors, first: %s (stderr: %s)",
			strings.Join(args, " "), runErr, rep.Errors, rep.FirstError, strings.TrimSpace(stderr.String()))
	}
	return rep, nil
}

// benchReport is the JSON line `samsa bench --json` prints.
type benchReport struct {
	Mode          string   `json:"mode"`
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Seconds       float64  `json:"seconds"`
	RecordsPerSec float64  `json:"records_per_sec"`
	MBPerSec      float64  `json:"mb_per_sec"`
	Errors        int64    `json:"errors"`
	FirstError    string   `json:"first_error"`
	Latency       *latency `json:"latency_ms"`
	AckLatency    *latency `json:"ack_latency_ms"`
	Lost          int64    `json:"lost"`
	Duplicates    int64    `json:"duplicates"`
	FirstRecordMS float64  `json:"first_record_ms"`
}

type latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// parseBenchJSON decodes the last non-empty line of out.
func parseBenchJSON(out string) (benchReport, error) {
	var rep benchReport
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return rep, errors.New("no output")
	}
	if err := json.Unmarshal([]byte(last), &rep); err != nil {
		return rep, fmt.Errorf("decoding %q: %w", last, err)
	}
	if rep.Mode == "" {
		return rep, fmt.Errorf("no mode in %q", last)
	}
	return rep, nil
}
