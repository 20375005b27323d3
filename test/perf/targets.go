package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// system is a set of broker processes started and stopped together; its
// series are the topic settings measured on it.
type system struct {
	name   string
	series []series
	start  func(ctx context.Context, env *environment, dir string) (*running, error)
	// base: the system runs the -baseline binary.
	base bool
}

// series is one column of the report: a system and the replication of the
// topics the workloads use on it.
type series struct {
	name    string
	rf      int      // --replication-factor; -1: the broker's default
	configs []string // --topic-config key=value
}

// systems are what perf can measure. The base systems run another samsa
// binary (-baseline, say the previous commit's) the same way.
func systems() []system {
	three := func(prefix string) []series {
		return []series{
			{name: prefix + "-rf3", rf: 3, configs: []string{"min.insync.replicas=2"}},
			{name: prefix + "-rf1", rf: 1},
		}
	}
	return []system{
		{name: "samsa", series: []series{{name: "samsa", rf: -1}}, start: startSamsa(1, false)},
		{name: "base", series: []series{{name: "base", rf: -1}}, start: startSamsa(1, true), base: true},
		{name: "kfake", series: []series{{name: "kfake", rf: -1}}, start: startKfake(false)},
		{name: "kfake-fsync", series: []series{{name: "kfake-fsync", rf: -1}}, start: startKfake(true)},
		{name: "samsa3", series: three("samsa3"), start: startSamsa(3, false)},
		{name: "base3", series: three("base3"), start: startSamsa(3, true), base: true},
	}
}

// allSeries names every series, in report order.
func allSeries() []string { return seriesNames(true) }

// seriesNames names the series, in report order, with or without those of
// the base systems.
func seriesNames(withBase bool) []string {
	var out []string
	for _, s := range systems() {
		if s.base && !withBase {
			continue
		}
		for _, se := range s.series {
			out = append(out, se.name)
		}
	}
	return out
}

// systemsFor returns the systems that hold at least one of the series.
func systemsFor(targets []string) []system {
	var out []system
	for _, s := range systems() {
		for _, se := range s.series {
			if contains(targets, se.name) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// workload is one measured `samsa bench` run, with an optional untimed
// preparation run before it (same topic flags).
type workload struct {
	name string
	args func(o *options) []string
	prep func(o *options) []string
	// partitions of its topic; 0 means 6.
	partitions int
}

func workloads() []workload {
	produce := func(size int) func(o *options) []string {
		return func(o *options) []string {
			return []string{"produce", "--record-size", strconv.Itoa(size),
				"--duration", o.duration.String(), "--warmup", o.warmup.String()}
		}
	}
	return []workload{
		{name: "produce-100B", args: produce(100)},
		{name: "produce-1KiB", args: produce(1024)},
		// Issue 11's scale target: within 15 % of produce-1KiB.
		{name: "produce-1KiB-2000p", args: produce(1024), partitions: 2000},
		{name: "consume-1KiB",
			prep: func(o *options) []string {
				return []string{"produce", "--record-size", "1024", "--num-records", strconv.Itoa(o.consumeN)}
			},
			args: func(o *options) []string {
				return []string{"consume", "--record-size", "1024"}
			}},
		{name: "e2e-100B-10k", args: func(o *options) []string {
			return []string{"e2e", "--record-size", "100", "--throughput", "10000",
				"--duration", o.duration.String(), "--warmup", o.warmup.String()}
		}},
	}
}

func workloadNames() []string {
	var out []string
	for _, w := range workloads() {
		out = append(out, w.name)
	}
	return out
}

func workloadsFor(names []string) []workload {
	var out []workload
	for _, w := range workloads() {
		if contains(names, w.name) {
			out = append(out, w)
		}
	}
	return out
}

// running is a started system.
type running struct {
	bootstrap string
	procs     []*proc
}

// proc is one broker process.
type proc struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the process has exited
	err  error         // Wait's result, once done
}

func startProc(name string, args []string, logPath string) (*proc, error) {
	// Appended to: a broker started again (biglog's restart) keeps the
	// log of the one before.
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, log: logf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// cpu is the user and system time the system's processes used so far.
func (r *running) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, p := range r.procs {
		select {
		case <-p.done:
			return 0, fmt.Errorf("%s exited: %v (log %s)", p.cmd.Path, p.err, p.log.Name())
		default:
		}
		d, err := processCPU(p.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// stop ends every process: SIGTERM, then SIGKILL after 30 s.
func (r *running) stop() {
	for _, p := range r.procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range r.procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		p.log.Close()
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// startSamsa starts n samsa brokers with embedded etcd members forming one
// cluster, as the README's three-broker example does.
func startSamsa(n int, base bool) func(ctx context.Context, env *environment, dir string) (*running, error) {
	return func(ctx context.Context, env *environment, dir string) (*running, error) {
		bin := env.samsa
		if base {
			bin = env.baseline
		}
		ports, err := freePorts(3 * n)
		if err != nil {
			return nil, err
		}
		return startSamsaAt(ctx, bin, dir, ports)
	}
}

// startSamsaAt starts len(ports)/3 samsa brokers of bin on the given
// ports (Kafka, etcd client, etcd peer for each), their data in dir: the
// same ports and dir start the same cluster again.
func startSamsaAt(ctx context.Context, bin, dir string, ports []int) (*running, error) {
	n := len(ports) / 3
	var members, addrs []string
	for i := range n {
		members = append(members, fmt.Sprintf("samsa-%d=http://127.0.0.1:%d", i+1, ports[3*i+2]))
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", ports[3*i]))
	}
	r := &running{bootstrap: strings.Join(addrs, ",")}
	for i := range n {
		id := i + 1
		args := []string{"server", "--node-id", strconv.Itoa(id),
			"--data-dir", filepath.Join(dir, fmt.Sprintf("data-%d", id)),
			"--listeners", "PLAINTEXT://" + addrs[i], "--log-level", "warn",
			"--override", fmt.Sprintf("metadata.etcd.client.url=http://127.0.0.1:%d", ports[3*i+1]),
			"--override", fmt.Sprintf("metadata.etcd.peer.url=http://127.0.0.1:%d", ports[3*i+2]),
			"--override", "metadata.etcd.initial.cluster=" + strings.Join(members, ","),
		}
		if knowsSetting(bin, "metrics.listener") {
			// Builds with a metrics listener (default localhost:9644)
			// get a port each; older baselines know no such setting.
			args = append(args, "--override", "metrics.listener=http://127.0.0.1:0")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			r.stop()
			return nil, err
		}
		logf := filepath.Join(dir, fmt.Sprintf("broker-%d.log", id))
		p, err := startProc(bin, args, logf)
		if err != nil {
			r.stop()
			return nil, err
		}
		r.procs = append(r.procs, p)
	}
	if err := waitReady(ctx, r, n); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// knownSettings caches knowsSetting's answers by binary and setting.
var knownSettings sync.Map

// knowsSetting reports whether samsa binary bin accepts setting key: a
// server started with it and then an invalid log.dirs fails on the
// latter, before it binds or writes anything, unless it refused key.
func knowsSetting(bin, key string) bool {
	ck := bin + "\x00" + key
	if v, ok := knownSettings.Load(ck); ok {
		return v.(bool)
	}
	out, _ := exec.Command(bin, "server", "--override", key+"=http://127.0.0.1:0", "--override", "log.dirs=/nonexistent-a,/nonexistent-b").CombinedOutput()
	known := !strings.Contains(string(out), "unknown setting")
	knownSettings.Store(ck, known)
	return known
}

// startKfake starts this program as a kfake server on disk.
func startKfake(sync bool) func(ctx context.Context, env *environment, dir string) (*running, error) {
	return func(ctx context.Context, env *environment, dir string) (*running, error) {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		args := []string{"kfake", "-port", strconv.Itoa(ports[0]), "-dir", filepath.Join(dir, "data")}
		if sync {
			args = append(args, "-sync")
		}
		p, err := startProc(env.self, args, filepath.Join(dir, "kfake.log"))
		if err != nil {
			return nil, err
		}
		r := &running{bootstrap: fmt.Sprintf("127.0.0.1:%d", ports[0]), procs: []*proc{p}}
		if err := waitReady(ctx, r, 1); err != nil {
			r.stop()
			return nil, err
		}
		return r, nil
	}
}

// readyTimeout bounds a system's start.
const readyTimeout = 90 * time.Second

// waitReady waits until the system lists n brokers and creates a topic
// replicated on all of them, or a process exits.
func waitReady(ctx context.Context, r *running, n int) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.bootstrap, ",")...),
		kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := r.cpu(); err != nil { // a process exited
			return err
		}
		last = probe(ctx, adm, n)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v: %v", r.bootstrap, readyTimeout, last)
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, adm *kadm.Client, n int) error {
	m, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	if len(m.Brokers) != n {
		return fmt.Errorf("%d brokers of %d", len(m.Brokers), n)
	}
	resp, err := adm.CreateTopic(ctx, 1, int16(n), nil, "perf-probe")
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		err = nil
	}
	return err
}

// serveKfake runs a one-broker kfake cluster on disk until SIGTERM.
func serveKfake(args []string) error {
	fs := flag.NewFlagSet("kfake", flag.ContinueOnError)
	port := fs.Int("port", 0, "port on 127.0.0.1")
	dir := fs.String("dir", "", "data directory")
	sync := fs.Bool("sync", false, "fsync every batch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *port == 0 || *dir == "" {
		return errors.New("-port and -dir are required")
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port), kfake.DataDir(*dir)}
	if *sync {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	c.Close()
	return nil
}
