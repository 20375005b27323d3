package test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/records"
)

// FuzzHandlers sends every input, a request frame without its size prefix
// (api key, version, correlation id, client id, body: what
// FuzzDecodeRequest decodes), to a real in-process broker over TCP, so
// that what decodes reaches the request handlers, partitions, group
// coordinator and etcd behind them.
//
// One broker (with embedded etcd) serves all the inputs of a process; the
// first input starts it, with the topics fuzzTopics and fuzzGrowTopic
// holding records, and it stops when the fuzz target ends. Inputs share
// one connection while the broker keeps it open.
//
// Per input: the broker must answer with the input's correlation id, in a
// response that decodes as the request's response, or close the
// connection (both are fine for garbage) within fuzzResponseTimeout;
// afterwards ApiVersions must be answered, on the same connection or, if
// it was closed, a new one. Produce with acks=0 is answered by nothing, so
// there only the ApiVersions answer (or the close) is awaited. A handler
// panic (which the server recovers from and logs) or any other
// error-level log line of the broker fails the input.
//
// Inputs that would legitimately wait long or make the broker do
// unbounded work are skipped rather than sent, so that every wait beyond
// fuzzResponseTimeout is a bug: a Fetch whose MaxWaitMillis exceeds
// fuzzMaxWaitMillis, a JoinGroup whose rebalance timeout exceeds
// fuzzMaxGroupTimeout (the broker caps session timeouts at the same), and
// CreateTopics, CreatePartitions or an auto-creating Metadata that would
// create more than fuzzMaxNewPartitions partitions or topics.
//
// Destructive requests are sent as they are: the fuzzer may delete the
// topics, add partitions, or change their configs. After any request that
// can, fuzzTopics are put back (recreated with their records if deleted
// or resized, their configs reset) so that later inputs find them, and
// the topics created by inputs are deleted once there are more than
// fuzzMaxExtraTopics. Other state (group offsets and members,
// __consumer_offsets, fuzzGrowTopic, records appended by inputs) carries
// over from one input to the next, so a failure may depend on the inputs
// before it: its report lists the request, and SAMSA_TEST_LOG=1 shows the
// broker's side.
//
// Seeds cover every API key and version the broker advertises (checked
// against its ApiVersions when it starts), with contents that reach the
// handlers: record batches (plain, keyed, gzip, zstd, idempotent) for
// real partitions, fetches of them, admin requests with odd values, group
// requests. Without -fuzz they run as a normal test, in a few seconds.
//
// Member ids are handed out by the broker, so the fuzzer cannot guess a
// live one: Heartbeat, SyncGroup and LeaveGroup mostly reach the
// unknown-member paths.
func FuzzHandlers(f *testing.F) {
	// The broker's background goroutines (etcd, timers, group expiry,
	// compaction) reach new code at moments unrelated to the input being
	// run, and the fuzzer takes every such input for one that found new
	// code and minimizes it, by default for up to 60 s each: most of a
	// short run would go into that. Unless the command line sets
	// -fuzzminimizetime, minimize for fuzzMinimizeExecs executions.
	minimizeSet := false
	flag.Visit(func(fl *flag.Flag) { minimizeSet = minimizeSet || fl.Name == "test.fuzzminimizetime" })
	if !minimizeSet {
		if err := flag.Set("test.fuzzminimizetime", fmt.Sprintf("%dx", fuzzMinimizeExecs)); err != nil {
			f.Fatal(err)
		}
	}
	for _, body := range fuzzHandlerSeeds() {
		f.Add(body)
	}
	var (
		once     sync.Once
		env      *fuzzEnv
		cleanups = fuzzCleanups{f: f}
	)
	// The fuzz function may not use f, and its own t ends with each
	// input: what must last until the end is collected here.
	f.Cleanup(cleanups.run)
	f.Fuzz(func(t *testing.T, body []byte) {
		once.Do(func() { env = startFuzzEnv(fuzzTB{T: t, cleanups: &cleanups}) })
		if env == nil {
			t.Fatal("the broker did not start (see the failure of the first input)")
		}
		env.run(t, body)
	})
}

const (
	// fuzzMinimizeExecs bounds the minimization of an input (see
	// FuzzHandlers).
	fuzzMinimizeExecs = 200
	// fuzzResponseTimeout bounds the wait for any response. The fuzzer
	// declares an input hung after 10 s, so this and fuzzProbeTimeout
	// together stay below that.
	fuzzResponseTimeout = 5 * time.Second
	// fuzzProbeTimeout bounds the ApiVersions health check.
	fuzzProbeTimeout = 2 * time.Second
	// fuzzMaxWaitMillis is the longest Fetch MaxWaitMillis sent.
	fuzzMaxWaitMillis = 100
	// fuzzMaxGroupTimeout is the broker's group.max.session.timeout.ms
	// and the longest JoinGroup rebalance timeout sent, so that no group
	// request waits longer.
	fuzzMaxGroupTimeout = time.Second
	// fuzzMaxNewPartitions bounds the partitions (and topics) one request
	// may create.
	fuzzMaxNewPartitions = 64
	// fuzzMaxExtraTopics is how many topics created by inputs are kept
	// before they are all deleted.
	fuzzMaxExtraTopics = 16
	// fuzzGroup is the group of most group seeds.
	fuzzGroup = "fuzz-group"
	// fuzzGrowTopic is where CreatePartitions seeds add partitions; it is
	// not restored.
	fuzzGrowTopic = "fuzz-grow"
	// fuzzClientID is the client id of every seed and probe.
	fuzzClientID = "fuzz"
	// fuzzDirPrefix starts the name of the broker's data directory, which
	// goes on with the process id.
	fuzzDirPrefix = "samsa-fuzz-handlers-"
)

// fuzzTopicSpec is a topic the fuzz broker keeps.
type fuzzTopicSpec struct {
	name       string
	partitions int32
	configs    map[string]string
	// keyed: its records have keys (required on a compacted topic).
	keyed bool
}

// fuzzTopics exist, with records, before every input.
var fuzzTopics = []fuzzTopicSpec{
	{name: "fuzz", partitions: 2},
	{name: "fuzz-compact", partitions: 1, configs: map[string]string{"cleanup.policy": "compact"}, keyed: true},
}

// fuzzServedVersions is what the broker advertises in ApiVersions; there
// is a seed for each of these keys and versions. startFuzzEnv fails if
// the broker's table differs, so that a new key or version gets seeds.
var fuzzServedVersions = map[int16][2]int16{
	0: {3, 12}, 1: {4, 12}, 2: {1, 7}, 3: {0, 12}, 8: {2, 8}, 9: {1, 8},
	10: {0, 4}, 11: {0, 9}, 12: {0, 4}, 13: {0, 4}, 14: {0, 5}, 15: {0, 5},
	16: {0, 4}, 17: {0, 1}, 18: {0, 3}, 19: {2, 7}, 20: {1, 6}, 21: {0, 2}, 22: {0, 4}, 23: {2, 4},
	24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {1, 1}, 28: {0, 5},
	29: {0, 3}, 30: {0, 3}, 31: {0, 3}, 32: {1, 4}, 33: {0, 2}, 35: {0, 5}, 36: {0, 2}, 37: {0, 3}, 42: {0, 2}, 43: {0, 2}, 44: {0, 1}, 47: {0, 0},
	48: {0, 1}, 49: {0, 1},
	50: {0, 0}, 51: {0, 0}, 60: {0, 1}, 61: {0, 0}, 65: {0, 0}, 66: {0, 1},
}

// fuzzCleanups collects cleanups to run when the fuzz target ends.
type fuzzCleanups struct {
	// f reports the cleanups' errors: the T that registered them has
	// ended by then.
	f *testing.F
	// running is set while the cleanups run.
	running atomic.Bool

	mu  sync.Mutex
	fns []func()
}

func (c *fuzzCleanups) add(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, fn)
}

// run calls the cleanups, last added first, as testing does.
func (c *fuzzCleanups) run() {
	c.running.Store(true)
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for _, fn := range slices.Backward(fns) {
		fn()
	}
}

// fuzzTB is the first input's T, lent to the harness (StartBroker) with
// Cleanup and TempDir deferred to the end of the fuzz target, so that the
// broker outlives the input that started it.
type fuzzTB struct {
	*testing.T
	cleanups *fuzzCleanups
}

func (tb fuzzTB) Cleanup(fn func()) { tb.cleanups.add(fn) }

// Errorf reports to the fuzz target once the cleanups run (the harness's
// cleanup reports a failed Close with it).
func (tb fuzzTB) Errorf(format string, args ...any) {
	if tb.cleanups.running.Load() {
		tb.cleanups.f.Errorf(format, args...)
		return
	}
	tb.T.Errorf(format, args...)
}

// TempDir makes a directory named after this process, removed at the end.
// The fuzzer kills a worker that is not done 1 s after being told to stop,
// often before the broker has closed; so the directories of processes that
// are gone are removed here first.
func (tb fuzzTB) TempDir() string {
	prefix := filepath.Join(os.TempDir(), fuzzDirPrefix)
	stale, _ := filepath.Glob(prefix + "*")
	for _, d := range stale {
		pid, _, _ := strings.Cut(strings.TrimPrefix(d, prefix), "-")
		if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() && errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", fuzzDirPrefix, os.Getpid()))
	if err != nil {
		tb.T.Fatalf("TempDir: %v", err)
	}
	tb.cleanups.add(func() { os.RemoveAll(dir) })
	return dir
}

// fuzzLogs keeps the broker's error-level log lines.
type fuzzLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *fuzzLogs) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

func (l *fuzzLogs) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines[n:])
}

// fuzzLogHandler records error-level records in logs and passes every
// record on to next.
type fuzzLogHandler struct {
	next slog.Handler
	logs *fuzzLogs
}

func (h fuzzLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

func (h fuzzLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		var sb strings.Builder
		sb.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != "stack" {
				fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
			}
			return true
		})
		h.logs.mu.Lock()
		h.logs.lines = append(h.logs.lines, sb.String())
		h.logs.mu.Unlock()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h fuzzLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return fuzzLogHandler{h.next.WithAttrs(as), h.logs}
}

func (h fuzzLogHandler) WithGroup(name string) slog.Handler {
	return fuzzLogHandler{h.next.WithGroup(name), h.logs}
}

// fuzzEnv is the broker the inputs go to. It is used by one input at a
// time.
type fuzzEnv struct {
	b    *Broker
	adm  *kadm.Client
	logs *fuzzLogs
	// conn is the connection inputs are written to; nil after the broker
	// closed it.
	conn net.Conn
}

func startFuzzEnv(tb fuzzTB) *fuzzEnv {
	logs := &fuzzLogs{}
	b := StartBroker(tb, func(c *broker.Config) {
		c.Logger = slog.New(fuzzLogHandler{testLogger().Handler(), logs})
		c.Groups.Partitions = 3
		c.Groups.MinSessionTimeout = 10 * time.Millisecond
		c.Groups.MaxSessionTimeout = fuzzMaxGroupTimeout
		c.Groups.InitialRebalanceDelay = 0
		c.Txns.Partitions = 3
		// The authorizer on, so that the ACL requests are served (and
		// the authorization of every request runs); the fuzz client,
		// User:ANONYMOUS, is a super user, so that the ACLs the seeds
		// create change no other seed's answer.
		for k, v := range map[string]string{
			"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":           "User:ANONYMOUS",
		} {
			if err := c.Set(k, v); err != nil {
				panic(err)
			}
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	e := &fuzzEnv{b: b, adm: kadm.NewClient(cl), logs: logs}
	tb.Cleanup(e.dropConn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, spec := range append(slices.Clone(fuzzTopics), fuzzTopicSpec{name: fuzzGrowTopic, partitions: 1}) {
		if err := e.createTopic(ctx, spec); err != nil {
			tb.Fatal(err)
		}
	}
	// The group seeds find __consumer_offsets and a group with offsets.
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "fuzz", Partition: 0, At: 1, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "fuzz", Partition: 1, At: 2, LeaderEpoch: -1})
	committed, err := e.adm.CommitOffsets(ctx, fuzzGroup, offsets)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		tb.Fatalf("commit offsets of %s: %v", fuzzGroup, err)
	}
	e.checkServedVersions(tb.T)
	if lines := logs.since(0); len(lines) > 0 {
		tb.Fatalf("broker logged errors while starting:\n%s", strings.Join(lines, "\n"))
	}
	return e
}

// checkServedVersions compares the broker's ApiVersions with
// fuzzServedVersions.
func (e *fuzzEnv) checkServedVersions(t *testing.T) {
	c := e.dial(t)
	defer c.Close()
	resp, err := fuzzProbe(c, 1)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for k, v := range got {
		if w, ok := fuzzServedVersions[k]; !ok || w != v {
			t.Errorf("broker serves key %d versions %d..%d, fuzzServedVersions has %v (ok %v): update it and the seeds", k, v[0], v[1], w, ok)
		}
	}
	for k := range fuzzServedVersions {
		if _, ok := got[k]; !ok {
			t.Errorf("broker does not serve key %d, which fuzzServedVersions lists", k)
		}
	}
}

// createTopic creates spec's topic and gives each partition records.
func (e *fuzzEnv) createTopic(ctx context.Context, spec fuzzTopicSpec) error {
	configs := map[string]*string{}
	for k, v := range spec.configs {
		configs[k] = &v
	}
	resp, err := e.adm.CreateTopic(ctx, spec.partitions, 1, configs, spec.name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", spec.name, err)
	}
	// A new client: the admin client's metadata may still show the topic
	// this one replaced. It retries until the partitions have leaders.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range spec.partitions {
		for i := range 5 {
			r := &kgo.Record{Topic: spec.name, Partition: p, Value: fmt.Appendf(nil, "value-%d-%d", p, i)}
			if spec.keyed {
				r.Key = fmt.Appendf(nil, "key-%d", i%3)
			}
			recs = append(recs, r)
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce to %s: %w", spec.name, err)
	}
	return nil
}

// request sends req on a new connection and returns the response. (The
// admin client caches metadata, which restore must not trust.)
func (e *fuzzEnv) request(t *testing.T, req kmsg.Request) kmsg.Response {
	c := e.dial(t)
	defer c.Close()
	id := fuzzClientID
	c.SetDeadline(time.Now().Add(fuzzResponseTimeout))
	if _, err := c.Write(protocol.AppendRequest(nil, req, 1, &id)); err != nil {
		t.Fatalf("restore: send %T: %v", req, err)
	}
	frame, err := protocol.ReadResponse(c, 64<<20)
	if err != nil {
		t.Fatalf("restore: read the response to %T: %v", req, err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if _, err := protocol.DecodeResponse(frame, resp); err != nil {
		t.Fatalf("restore: decode the response to %T: %v", req, err)
	}
	return resp
}

// restore puts fuzzTopics back as startFuzzEnv made them and deletes the
// topics inputs created once there are too many.
func (e *fuzzEnv) restore(t *testing.T, configsChanged bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.SetVersion(12)
	mreq.Topics = nil // all
	partitions := map[string]int{}
	for _, mt := range e.request(t, mreq).(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil && mt.ErrorCode == 0 && !mt.IsInternal {
			partitions[*mt.Topic] = len(mt.Partitions)
		}
	}
	var extra []string
	for name := range partitions {
		if name != fuzzGrowTopic && !slices.ContainsFunc(fuzzTopics, func(s fuzzTopicSpec) bool { return s.name == name }) {
			extra = append(extra, name)
		}
	}
	if len(extra) > fuzzMaxExtraTopics {
		if _, err := e.adm.DeleteTopics(ctx, extra...); err != nil {
			t.Fatalf("restore: delete %d topics made by inputs: %v", len(extra), err)
		}
	}
	for _, spec := range fuzzTopics {
		n, ok := partitions[spec.name]
		if n == int(spec.partitions) {
			if configsChanged {
				e.restoreConfigs(ctx, t, spec)
			}
			continue
		}
		if ok {
			resp, err := e.adm.DeleteTopics(ctx, spec.name)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatalf("restore: delete %s (%d partitions, want %d): %v", spec.name, n, spec.partitions, err)
			}
		}
		if err := e.createTopic(ctx, spec); err != nil {
			t.Fatalf("restore: %v", err)
		}
	}
}

// restoreConfigs resets a topic's config overrides to spec's.
func (e *fuzzEnv) restoreConfigs(ctx context.Context, t *testing.T, spec fuzzTopicSpec) {
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.SetVersion(4)
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, spec.name
	dreq.Resources = append(dreq.Resources, res)
	dresp := e.request(t, dreq).(*kmsg.DescribeConfigsResponse)
	if len(dresp.Resources) != 1 || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("restore: describe configs of %s: %+v", spec.name, dresp.Resources)
	}
	overrides := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			overrides[c.Name] = *c.Value
		}
	}
	if maps.Equal(overrides, spec.configs) || len(overrides) == 0 && len(spec.configs) == 0 {
		return
	}
	var alter []kadm.AlterConfig
	for k := range overrides {
		if _, ok := spec.configs[k]; !ok {
			alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
	}
	for k, v := range spec.configs {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resps, err := e.adm.AlterTopicConfigs(ctx, alter, spec.name)
	if err == nil {
		for _, r := range resps {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("restore: reset configs of %s: %v", spec.name, err)
	}
}

func (e *fuzzEnv) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.b.Addr, fuzzProbeTimeout)
	if err != nil {
		t.Fatalf("dial the broker: %v", err)
	}
	return c
}

// dropConn closes the shared connection.
func (e *fuzzEnv) dropConn() {
	if e.conn != nil {
		e.conn.Close()
		e.conn = nil
	}
}

// fuzzProbe sends ApiVersions v3 with correlation id corr on c and reads
// the answer.
func fuzzProbe(c net.Conn, corr int32) (*kmsg.ApiVersionsResponse, error) {
	id := fuzzClientID
	c.SetWriteDeadline(time.Now().Add(fuzzProbeTimeout))
	if _, err := c.Write(protocol.AppendRequest(nil, badApiVersionsV3(), corr, &id)); err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(fuzzProbeTimeout))
	frame, err := protocol.ReadResponse(c, 1<<20)
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	got, err := protocol.DecodeResponse(frame, resp)
	if err != nil {
		return nil, err
	}
	if got != corr {
		return nil, fmt.Errorf("ApiVersions answered with correlation id %d, want %d", got, corr)
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	return resp, nil
}

// fuzzClosed tells whether err means the peer closed the connection.
func fuzzClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func fuzzTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fuzzDecode decodes body as kmsg does, or returns nil. The broker decodes
// with kmsg too (and rejects more: versions it does not serve), so
// whatever it handles decodes here the same way.
func fuzzDecode(body []byte) (req kmsg.Request) {
	defer func() {
		if recover() != nil {
			req = nil // the broker recovers too, and closes the connection
		}
	}()
	if len(body) < 10 {
		return nil
	}
	key, version := int16(binary.BigEndian.Uint16(body)), int16(binary.BigEndian.Uint16(body[2:]))
	req = kmsg.RequestForKey(key)
	if req == nil || version < 0 || version > req.MaxVersion() {
		return nil
	}
	req.SetVersion(version)
	rd := kbin.Reader{Src: body[8:]}
	rd.NullableString()
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if !rd.Ok() || req.ReadFrom(rd.Src) != nil {
		return nil
	}
	return req
}

// fuzzAdmit reports whether a decoded request may be sent: false for those
// that may legitimately wait long or create too much (see FuzzHandlers).
func fuzzAdmit(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return r.MaxWaitMillis <= fuzzMaxWaitMillis
	case *kmsg.JoinGroupRequest:
		return r.Version == 0 || time.Duration(r.RebalanceTimeoutMillis)*time.Millisecond <= fuzzMaxGroupTimeout
	case *kmsg.CreateTopicsRequest:
		if r.ValidateOnly {
			return true
		}
		// A partition count above the broker's maxPartitionsPerRequest
		// is refused before anything is created.
		const refused = 10000
		n := 0
		for _, t := range r.Topics {
			switch {
			case len(t.ReplicaAssignment) > 0:
				n += len(t.ReplicaAssignment)
			case t.NumPartitions > refused:
			case t.NumPartitions > 0:
				n += int(t.NumPartitions)
			default:
				n++
			}
		}
		return n <= fuzzMaxNewPartitions
	case *kmsg.CreatePartitionsRequest:
		if r.ValidateOnly {
			return true
		}
		// Count is the new total, so any count above the limit may
		// add too many.
		for _, t := range r.Topics {
			if t.Count > fuzzMaxNewPartitions {
				return false
			}
		}
		return len(r.Topics) <= fuzzMaxNewPartitions
	case *kmsg.MetadataRequest:
		return len(r.Topics) <= fuzzMaxNewPartitions
	}
	return true
}

// fuzzChangesTopics reports whether req may create or delete topics or
// change fuzzTopics (and so calls for restore), and whether it may change
// configs.
func fuzzChangesTopics(req kmsg.Request) (topics, configs bool) {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest, *kmsg.DeleteTopicsRequest, *kmsg.CreatePartitionsRequest:
		return true, false
	case *kmsg.IncrementalAlterConfigsRequest:
		return true, true
	case *kmsg.MetadataRequest:
		return len(r.Topics) > 0 && (r.Version < 4 || r.AllowAutoTopicCreation), false
	}
	return false, false
}

// run sends one input and checks the broker's answer and health.
func (e *fuzzEnv) run(t *testing.T, body []byte) {
	if len(body) > 1<<20 {
		return
	}
	req := fuzzDecode(body)
	if req != nil && !fuzzAdmit(req) {
		return
	}
	describe := fmt.Sprintf("%d-byte frame", len(body))
	if req != nil {
		describe = fmt.Sprintf("%T v%d (%s)", req, req.GetVersion(), describe)
	}
	logsBefore := e.logs.len()
	var corr int32
	if len(body) >= 8 {
		corr = int32(binary.BigEndian.Uint32(body[4:]))
	}
	// The probe's correlation id differs from the input's.
	probeCorr := corr ^ 0x5a5a5a5a
	noResponse := false
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		noResponse = true
	}

	if e.conn == nil {
		e.conn = e.dial(t)
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	frame = append(frame, body...)
	e.conn.SetWriteDeadline(time.Now().Add(fuzzResponseTimeout))
	_, err := e.conn.Write(frame)
	closed := err != nil && fuzzClosed(err)
	if err != nil && !closed {
		t.Fatalf("%s: write: %v", describe, err)
	}

	if !closed && !noResponse {
		e.conn.SetReadDeadline(time.Now().Add(fuzzResponseTimeout))
		resp, err := protocol.ReadResponse(e.conn, 256<<20)
		switch {
		case err == nil:
			e.checkResponse(t, describe, body, corr, resp)
		case fuzzClosed(err):
			closed = true
		case fuzzTimeout(err):
			e.failHang(t, describe, fuzzResponseTimeout)
		default:
			t.Fatalf("%s: read the response: %v", describe, err)
		}
	}
	if !closed {
		// Still open: the next request on it must be answered (after
		// nothing, for acks=0), unless the broker closes it (acks=0 with
		// a failed partition).
		_, err := fuzzProbe(e.conn, probeCorr)
		switch {
		case err == nil:
		case fuzzClosed(err):
			closed = true
		case fuzzTimeout(err):
			e.failHang(t, describe+", then ApiVersions on the same connection,", fuzzProbeTimeout)
		default:
			t.Fatalf("%s, then ApiVersions on the same connection: %v", describe, err)
		}
	}
	if closed {
		e.dropConn()
		e.conn = e.dial(t)
		if _, err := fuzzProbe(e.conn, 1); err != nil {
			t.Fatalf("%s closed the connection; ApiVersions on a new one: %v", describe, err)
		}
	}
	if req != nil {
		if topics, configs := fuzzChangesTopics(req); topics {
			e.restore(t, configs)
		}
	}
	if lines := e.logs.since(logsBefore); len(lines) > 0 {
		t.Fatalf("%s: the broker logged errors:\n%s", describe, strings.Join(lines, "\n"))
	}
}

// checkResponse checks a response frame to the input body.
func (e *fuzzEnv) checkResponse(t *testing.T, describe string, body []byte, corr int32, frame []byte) {
	if len(body) < 10 {
		t.Fatalf("%s: answered (%d bytes), but it is shorter than a request header", describe, len(frame))
	}
	key, version := int16(binary.BigEndian.Uint16(body)), int16(binary.BigEndian.Uint16(body[2:]))
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		t.Fatalf("%s: key %d answered", describe, key)
	}
	if key == 18 && version > resp.MaxVersion() {
		version = 0 // an unsupported ApiVersions is answered in v0
	}
	resp.SetVersion(version)
	got, err := protocol.DecodeResponse(frame, resp)
	if err != nil {
		t.Fatalf("%s: response does not decode: %v", describe, err)
	}
	if got != corr {
		t.Fatalf("%s: response correlation id %d, want %d", describe, got, corr)
	}
}

// failHang fails an input the broker did not answer, saying whether the
// broker still answers on a new connection.
func (e *fuzzEnv) failHang(t *testing.T, describe string, waited time.Duration) {
	e.dropConn()
	c := e.dial(t)
	defer c.Close()
	_, err := fuzzProbe(c, 1)
	alive := "still answers ApiVersions on a new connection"
	if err != nil {
		alive = fmt.Sprintf("does not answer ApiVersions on a new connection either: %v", err)
	}
	t.Fatalf("%s: no answer within %v and the connection is still open; the broker %s", describe, waited, alive)
}

// Seeds.

// fuzzHandlerSeeds returns request frames without their size prefix: at
// least one per key and version of fuzzServedVersions, then variants and
// hostile frames.
func fuzzHandlerSeeds() [][]byte {
	id := fuzzClientID
	var out [][]byte
	corr := int32(0)
	add := func(reqs ...kmsg.Request) {
		for _, r := range reqs {
			corr++
			out = append(out, protocol.AppendRequest(nil, r, corr, &id)[4:])
		}
	}
	now := time.Now().UnixMilli()
	for _, key := range slices.Sorted(maps.Keys(fuzzServedVersions)) {
		r := fuzzServedVersions[key]
		for v := r[0]; v <= r[1]; v++ {
			add(fuzzSeedRequests(key, v, now)...)
		}
	}
	// Hostile frames: huge counts, an unsupported version, a key the
	// broker does not serve, a short header.
	out = append(out,
		rawBody(3, 4, kbin.AppendInt32(nil, 1<<31-1), make([]byte, 16)),
		rawBody(3, 12, []byte{0}, kbin.AppendUvarint(nil, 1<<31-1)),
		rawBody(18, 99, []byte{0, 1, 2}),
		rawBody(0, 2, []byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}),
		rawBody(29, 1, []byte{0, 2}),
		[]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff},
	)
	return out
}

// rawBody is a frame (without its size prefix) with a v1 header and
// client id "fuzz", then rest as the body.
func rawBody(key, version int16, rest ...[]byte) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, 77)
	b = kbin.AppendString(b, fuzzClientID)
	if req := kmsg.RequestForKey(key); req != nil && version <= req.MaxVersion() {
		req.SetVersion(version)
		if req.IsFlexible() {
			b = append(b, 0)
		}
	}
	for _, r := range rest {
		b = append(b, r...)
	}
	return b
}

// fuzzBatch builds a v2 record batch of recs compressed with codec (0
// none, 1 gzip, 4 zstd), optionally for an idempotent producer.
func fuzzBatch(recs []records.KV, ts int64, codec int, producerID int64) []byte {
	b := records.Build(recs, ts)
	if codec != 0 {
		var buf bytes.Buffer
		switch codec {
		case 1:
			w := gzip.NewWriter(&buf)
			w.Write(b[badBatchHeaderSize:])
			w.Close()
		case 4:
			w, _ := zstd.NewWriter(&buf)
			w.Write(b[badBatchHeaderSize:])
			w.Close()
		default:
			panic(fmt.Sprintf("codec %d", codec))
		}
		b = append(b[:badBatchHeaderSize], buf.Bytes()...)
		binary.BigEndian.PutUint16(b[badBatchAttributesAt:], uint16(codec))
		binary.BigEndian.PutUint32(b[badBatchLengthAt:], uint32(len(b)-12))
	}
	if producerID >= 0 {
		binary.BigEndian.PutUint64(b[43:], uint64(producerID)) // producer id
		binary.BigEndian.PutUint16(b[51:], 0)                  // producer epoch
		binary.BigEndian.PutUint32(b[53:], 0)                  // base sequence
	}
	badFixCRC(b)
	return b
}

// fuzzTxnBatch builds a transactional v2 record batch of recs for the
// producer id and epoch, from sequence 0.
func fuzzTxnBatch(recs []records.KV, ts int64, producerID int64, epoch int16) []byte {
	b := fuzzBatch(recs, ts, 0, producerID)
	binary.BigEndian.PutUint16(b[badBatchAttributesAt:], 0x10) // transactional
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	badFixCRC(b)
	return b
}

// fuzzKVs returns n records, keyed if keyed.
func fuzzKVs(n int, keyed bool) []records.KV {
	var out []records.KV
	for i := range n {
		kv := records.KV{Value: fmt.Appendf(nil, "seed-value-%d", i)}
		if keyed {
			kv.Key = fmt.Appendf(nil, "key-%d", i%2)
		}
		out = append(out, kv)
	}
	return out
}

// fuzzSeedRequests returns the seeds of one key and version: a request
// that reaches the handler's main path, and for some versions variants
// with odd values.
func fuzzSeedRequests(key, v int16, now int64) []kmsg.Request {
	str := func(s string) *string { return &s }
	set := func(r kmsg.Request) kmsg.Request { r.SetVersion(v); return r }
	switch key {
	case 0:
		produce := func(acks int16, parts ...badPart) kmsg.Request {
			r := badProduceRequest(acks, parts...)
			r.TimeoutMillis = 1000
			return set(r)
		}
		out := []kmsg.Request{produce(-1,
			badPart{"fuzz", 0, fuzzBatch(fuzzKVs(3, false), now, 0, -1)},
			badPart{"fuzz", 1, fuzzBatch(fuzzKVs(2, true), now, 1, -1)},
			badPart{"fuzz-compact", 0, fuzzBatch(fuzzKVs(4, true), now, 0, -1)},
		)}
		switch v {
		case 3:
			out = append(out,
				produce(1, badPart{"fuzz", 0, fuzzBatch(fuzzKVs(2, false), now, 4, -1)}),         // zstd before v7
				produce(0, badPart{"fuzz-compact", 0, fuzzBatch(fuzzKVs(1, false), now, 0, -1)}), // no key: closes
				produce(5, badPart{"fuzz", 0, badBatch(1, 1)}),
			)
		case 7:
			out = append(out,
				produce(1, badPart{"fuzz", 1, fuzzBatch(fuzzKVs(3, false), now, 4, -1)}),
				produce(0, badPart{"fuzz", 0, badBatch(2, 3)}),
			)
		case 8:
			p := produce(-1, badPart{"fuzz", 0, fuzzBatch(fuzzKVs(2, false), now, 0, 1<<40)}, badPart{"missing", 0, badBatch(1, 1)}, badPart{"fuzz", 7, badBatch(1, 1)})
			tx := produce(1, badPart{"fuzz", 0, badBatch(1, 1)})
			tx.(*kmsg.ProduceRequest).TransactionID = str("tx")
			// A client's write to an internal topic.
			internal := produce(-1, badPart{"__consumer_offsets", 0, fuzzBatch(fuzzKVs(2, true), now, 0, -1)})
			// An idempotent producer whose sequence wraps past
			// MaxInt32, then goes on from 1.
			wrap := fuzzBatch(fuzzKVs(3, false), now, 1, 1<<41)
			binary.BigEndian.PutUint32(wrap[53:], 1<<31-2)
			badFixCRC(wrap)
			next := fuzzBatch(fuzzKVs(1, false), now, 0, 1<<41)
			binary.BigEndian.PutUint32(next[53:], 1)
			badFixCRC(next)
			out = append(out, p, tx, internal, produce(-1, badPart{"fuzz", 1, wrap}), produce(-1, badPart{"fuzz", 1, next}))
		case 11, 12:
			// A transactional batch of a producer id the coordinator
			// never issued: verified (v11) or implicitly added (v12).
			tx := produce(-1, badPart{"fuzz", 0, fuzzTxnBatch(fuzzKVs(2, false), now, 1<<42, 0)})
			tx.(*kmsg.ProduceRequest).TransactionID = str("tx")
			out = append(out, tx)
		}
		return out
	case 1:
		fetch := func(replica int32, parts ...kmsg.FetchRequestTopicPartition) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = replica, 50, 1, 1<<20
			r.SessionEpoch = -1
			for _, name := range []string{"fuzz", "fuzz-compact"} {
				t := kmsg.NewFetchRequestTopic()
				t.Topic = name
				for _, p := range parts {
					if name == "fuzz" || p.Partition == 0 {
						t.Partitions = append(t.Partitions, p)
					}
				}
				r.Topics = append(r.Topics, t)
			}
			return set(r)
		}
		part := func(p int32, offset int64, lastEpoch int32) kmsg.FetchRequestTopicPartition {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offset, 64<<10
			fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.LogStartOffset = -1, lastEpoch, -1
			return fp
		}
		out := []kmsg.Request{fetch(-1, part(0, 0, -1), part(1, 2, -1))}
		switch v {
		case 4:
			r := fetch(-1, part(0, 1<<40, -1))
			r.(*kmsg.FetchRequest).IsolationLevel = 1
			out = append(out, r)
		case 7:
			r := fetch(-1, part(0, 0, -1))
			r.(*kmsg.FetchRequest).SessionID = 5
			out = append(out, r)
		case 11:
			// From a follower: the broker itself, and a broker that is
			// not a replica.
			out = append(out, fetch(1, part(0, 3, -1)), fetch(2, part(0, 0, -1)))
		case 12:
			fenced := part(0, 0, -1)
			fenced.CurrentLeaderEpoch = 99
			out = append(out, fetch(-1, part(0, 5, 3)), fetch(-1, fenced), fetch(1, part(1, 100, 0)), fetch(-1, part(1, -1, -1)))
		}
		return out
	case 2:
		r := kmsg.NewPtrListOffsetsRequest()
		r.ReplicaID = -1
		for _, name := range []string{"fuzz", "fuzz-compact", "missing"} {
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = name
			for i, ts := range []int64{-1, -2, -3, 0, now + 3600_000, -4} {
				if ts == -3 && v < 7 {
					continue
				}
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Partition, p.Timestamp, p.CurrentLeaderEpoch = int32(i%2), ts, -1
				if i == 4 {
					p.CurrentLeaderEpoch = 3
				}
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
		return []kmsg.Request{set(r)}
	case 3:
		r := kmsg.NewPtrMetadataRequest()
		if v%2 == 0 {
			for _, name := range []string{"fuzz", "fuzz-compact", "missing", "bad name!"} {
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = str(name)
				r.Topics = append(r.Topics, t)
			}
		}
		if v >= 10 {
			t := kmsg.NewMetadataRequestTopic()
			t.TopicID = [16]byte{1, 2, 3}
			r.Topics = append(r.Topics, t)
		}
		r.IncludeTopicAuthorizedOperations = v >= 8
		out := []kmsg.Request{set(r)}
		if v == 4 || v == 12 {
			auto := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = str(fmt.Sprintf("fuzz-auto-v%d", v))
			auto.Topics = append(auto.Topics, t)
			auto.AllowAutoTopicCreation = true
			out = append(out, set(auto))
		}
		return out
	case 8:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation, r.RetentionTimeMillis = fuzzGroup, -1, -1
		for _, name := range []string{"fuzz", "fuzz-compact", "missing"} {
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = name
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = 0, int64(v), -1, str("meta")
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
		}
		out := []kmsg.Request{set(r)}
		if v == 8 {
			m := kmsg.NewPtrOffsetCommitRequest()
			m.Group, m.Generation, m.MemberID, m.InstanceID = fuzzGroup, 3, "member-1", str("instance")
			m.Topics = r.Topics
			odd := kmsg.NewPtrOffsetCommitRequest()
			odd.Group, odd.Generation = fuzzGroup, -1
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = "fuzz"
			for i, off := range []int64{-5, 1 << 40} {
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch = int32(i), off, 7
				if i == 0 {
					p.Metadata = str(strings.Repeat("m", 5000))
				}
				t.Partitions = append(t.Partitions, p)
			}
			odd.Topics = append(odd.Topics, t)
			out = append(out, set(m), set(odd))
		}
		return out
	case 9:
		r := kmsg.NewPtrOffsetFetchRequest()
		r.RequireStable = v >= 7
		if v >= 8 {
			// Several groups per request: one with topics, one with all.
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = fuzzGroup
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "fuzz", []int32{0, 1, 9}
			g.Topics = append(g.Topics, gt)
			all := kmsg.NewOffsetFetchRequestGroup()
			all.Group = "other"
			r.Groups = append(r.Groups, g, all)
			return []kmsg.Request{set(r)}
		}
		r.Group = fuzzGroup
		if v < 2 || v%2 == 1 {
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = "fuzz", []int32{0, 1, 9}
			r.Topics = append(r.Topics, t)
		}
		return []kmsg.Request{set(r)}
	case 10:
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey, r.CoordinatorKeys = fuzzGroup, []string{fuzzGroup, "other", ""}
		out := []kmsg.Request{set(r)}
		if v == 1 || v == 4 {
			tx := kmsg.NewPtrFindCoordinatorRequest()
			tx.CoordinatorKey, tx.CoordinatorKeys, tx.CoordinatorType = "tx", []string{"tx"}, 1
			out = append(out, set(tx))
		}
		return out
	case 11:
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"fuzz"}
		r := kmsg.NewPtrJoinGroupRequest()
		// A group per version: each join completes at once.
		r.Group = fmt.Sprintf("fuzz-join-v%d", v)
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 500, 500
		r.ProtocolType = "consumer"
		for _, name := range []string{"range", "cooperative-sticky"} {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = name, meta.AppendTo(nil)
			r.Protocols = append(r.Protocols, p)
		}
		r.Reason = str("fuzz")
		out := []kmsg.Request{set(r)}
		if v == 5 || v == 9 {
			static := *r
			static.Group, static.InstanceID = fmt.Sprintf("fuzz-static-v%d", v), str("instance-1")
			out = append(out, set(&static))
		}
		if v == 1 {
			bad := *r
			bad.SessionTimeoutMillis, bad.ProtocolType = 5, ""
			out = append(out, set(&bad))
		}
		return out
	case 12:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.Generation, r.MemberID = "fuzz-join-v0", 1, "member-1"
		if v >= 3 {
			r.InstanceID = str("instance-1")
		}
		return []kmsg.Request{set(r)}
	case 13:
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = "fuzz-join-v1", "member-1"
		for _, id := range []string{"member-1", ""} {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID, m.InstanceID, m.Reason = id, str("instance-1"), str("fuzz")
			r.Members = append(r.Members, m)
		}
		return []kmsg.Request{set(r)}
	case 14:
		assignment := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = "fuzz", []int32{0, 1}
		assignment.Topics = append(assignment.Topics, at)
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID = "fuzz-join-v2", 1, "member-1"
		r.ProtocolType, r.Protocol = str("consumer"), str("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = "member-1", assignment.AppendTo(nil)
		r.GroupAssignment = append(r.GroupAssignment, a)
		return []kmsg.Request{set(r)}
	case 15:
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{fuzzGroup, "fuzz-join-v0", "fuzz-static-v5", "missing", ""}
		r.IncludeAuthorizedOperations = v >= 3
		return []kmsg.Request{set(r)}
	case 16:
		r := kmsg.NewPtrListGroupsRequest()
		if v >= 4 {
			r.StatesFilter = []string{"Stable", "Empty", "Dead"}
		}
		return []kmsg.Request{set(r)}
	case 18:
		r := badApiVersionsV3()
		out := []kmsg.Request{set(r)}
		if v == 3 {
			bad := badApiVersionsV3()
			bad.ClientSoftwareName = "!!"
			out = append(out, bad)
		}
		return out
	case 19:
		topic := func(name string, partitions int32, rf int16, configs map[string]string, assignment ...[]int32) kmsg.CreateTopicsRequestTopic {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
			for i, replicas := range assignment {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(i), replicas
				t.ReplicaAssignment = append(t.ReplicaAssignment, a)
			}
			for _, k := range slices.Sorted(maps.Keys(configs)) {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = k, str(configs[k])
				t.Configs = append(t.Configs, c)
			}
			return t
		}
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 5000
		r.Topics = []kmsg.CreateTopicsRequestTopic{
			topic(fmt.Sprintf("fuzz-new-v%d", v), 2, 1, map[string]string{"retention.ms": "60000", "cleanup.policy": "compact,delete"}),
			topic(fmt.Sprintf("fuzz-default-v%d", v), -1, -1, nil),
			topic(fmt.Sprintf("fuzz-assigned-v%d", v), -1, -1, nil, []int32{1}, []int32{1}),
			topic("fuzz", 1, 1, nil),
			topic("bad name!", 1, 1, nil),
			topic("fuzz-zero", 0, 1, nil),
			topic("fuzz-rf3", 1, 3, nil),
			topic("fuzz-dup-replicas", -1, -1, nil, []int32{1, 1}),
			topic("fuzz-unknown-broker", -1, -1, nil, []int32{7}),
			topic("fuzz-bad-config", 1, 1, map[string]string{"segment.bytes": "1", "no.such.config": "x"}),
			topic("fuzz-both", 2, 1, nil, []int32{1}),
		}
		out := []kmsg.Request{set(r)}
		if v == 4 {
			huge := kmsg.NewPtrCreateTopicsRequest()
			huge.TimeoutMillis, huge.ValidateOnly = -1, true
			huge.Topics = []kmsg.CreateTopicsRequestTopic{
				topic("fuzz-huge", 1<<20, 1, nil),
				topic("fuzz-validate", 3, 1, nil),
				topic("fuzz-twice", 1, 1, nil),
				topic("fuzz-twice", 1, 1, nil),
			}
			out = append(out, set(huge))
		}
		return out
	case 20:
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TimeoutMillis = 5000
		names := []string{fmt.Sprintf("fuzz-default-v%d", v+1), "missing"}
		r.TopicNames = names
		for _, n := range names {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = str(n)
			r.Topics = append(r.Topics, t)
		}
		unknownID := kmsg.NewDeleteTopicsRequestTopic()
		unknownID.TopicID = [16]byte{9, 9, 9}
		r.Topics = append(r.Topics, unknownID)
		out := []kmsg.Request{set(r)}
		if v == 4 {
			// A fuzzTopic: restore recreates it.
			del := kmsg.NewPtrDeleteTopicsRequest()
			del.TopicNames, del.TimeoutMillis = []string{"fuzz-compact"}, 5000
			out = append(out, set(del))
		}
		if v == 5 {
			del := kmsg.NewPtrDeleteTopicsRequest()
			del.TopicNames, del.TimeoutMillis = []string{"__consumer_offsets"}, 5000
			out = append(out, set(del))
		}
		return out
	case 22:
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = 60000, -1, -1
		out := []kmsg.Request{set(r)}
		switch v {
		case 3:
			bump := kmsg.NewPtrInitProducerIDRequest()
			bump.ProducerID, bump.ProducerEpoch = 5, 3
			out = append(out, set(bump))
		case 1:
			tx := kmsg.NewPtrInitProducerIDRequest()
			tx.TransactionalID = str("tx")
			out = append(out, set(tx))
		}
		return out
	case 23:
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.ReplicaID = -1
		for _, name := range []string{"fuzz", "fuzz-compact", "missing"} {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = name
			for _, epoch := range []int32{0, -1, 5} {
				p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				p.Partition, p.LeaderEpoch, p.CurrentLeaderEpoch = epoch&1, epoch, -1
				if epoch == 5 {
					p.CurrentLeaderEpoch = 5
				}
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
		out := []kmsg.Request{set(r)}
		if v == 4 {
			follower := *r
			follower.ReplicaID = 1
			out = append(out, set(&follower))
		}
		return out
	case 32:
		r := kmsg.NewPtrDescribeConfigsRequest()
		resource := func(typ kmsg.ConfigResourceType, name string, configs ...string) {
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName, res.ConfigNames = typ, name, configs
			r.Resources = append(r.Resources, res)
		}
		resource(kmsg.ConfigResourceTypeTopic, "fuzz")
		resource(kmsg.ConfigResourceTypeTopic, "fuzz-compact", "cleanup.policy", "retention.ms", "nope")
		resource(kmsg.ConfigResourceTypeTopic, "missing")
		resource(kmsg.ConfigResourceTypeBroker, "1")
		resource(kmsg.ConfigResourceTypeBroker, "7")
		resource(kmsg.ConfigResourceTypeBrokerLogger, "1")
		r.IncludeSynonyms, r.IncludeDocumentation = true, v >= 3
		return []kmsg.Request{set(r)}
	case 33:
		r := kmsg.NewPtrAlterConfigsRequest()
		resource := func(typ kmsg.ConfigResourceType, name string, configs ...kmsg.AlterConfigsRequestResourceConfig) {
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName, res.Configs = typ, name, configs
			r.Resources = append(r.Resources, res)
		}
		config := func(name string, value *string) kmsg.AlterConfigsRequestResourceConfig {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = name, value
			return c
		}
		resource(kmsg.ConfigResourceTypeTopic, "fuzz", config("retention.ms", str("3600000")))
		resource(kmsg.ConfigResourceTypeTopic, "missing", config("retention.ms", str("1")))
		resource(kmsg.ConfigResourceTypeTopic, fuzzGrowTopic, config("segment.bytes", nil), config("no.such.config", str("1")))
		resource(kmsg.ConfigResourceTypeTopic, fuzzGrowTopic, config("retention.ms", str("1")), config("retention.ms", str("2")))
		resource(kmsg.ConfigResourceTypeBroker, "1", config("log.retention.ms", str("1")))
		resource(kmsg.ConfigResourceTypeBrokerLogger, "1", config("kafka", str("DEBUG")))
		r.ValidateOnly = v == 0
		return []kmsg.Request{set(r)}
	case 37:
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.TimeoutMillis = 5000
		grow := kmsg.NewCreatePartitionsRequestTopic()
		grow.Topic, grow.Count = fuzzGrowTopic, int32(2+v)
		shrink := kmsg.NewCreatePartitionsRequestTopic()
		shrink.Topic, shrink.Count = "fuzz", 1
		missing := kmsg.NewCreatePartitionsRequestTopic()
		missing.Topic, missing.Count = "missing", 3
		r.Topics = []kmsg.CreatePartitionsRequestTopic{grow, shrink, missing}
		out := []kmsg.Request{set(r)}
		if v == 3 {
			internal := kmsg.NewPtrCreatePartitionsRequest()
			internal.TimeoutMillis = 5000
			t := kmsg.NewCreatePartitionsRequestTopic()
			t.Topic, t.Count = "__consumer_offsets", 5
			internal.Topics = append(internal.Topics, t)
			out = append(out, set(internal))
		}
		if v == 1 {
			bad := kmsg.NewPtrCreatePartitionsRequest()
			bad.TimeoutMillis, bad.ValidateOnly = 5000, true
			assigned := kmsg.NewCreatePartitionsRequestTopic()
			assigned.Topic, assigned.Count = fuzzGrowTopic, 20
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = []int32{1, 1}
			assigned.Assignment = append(assigned.Assignment, a)
			huge := kmsg.NewCreatePartitionsRequestTopic()
			huge.Topic, huge.Count = "fuzz-compact", 1<<30
			bad.Topics = []kmsg.CreatePartitionsRequestTopic{assigned, huge}
			out = append(out, set(bad))
		}
		return out
	case 42:
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"fuzz-join-v3", "missing", fuzzGroup, ""}
		return []kmsg.Request{set(r)}
	case 43:
		r := kmsg.NewPtrElectLeadersRequest()
		r.TimeoutMillis = 1000
		for _, name := range []string{"fuzz", "missing"} {
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = name, []int32{0, 1, 5}
			r.Topics = append(r.Topics, t)
		}
		out := []kmsg.Request{set(r)}
		if v >= 1 {
			all := kmsg.NewPtrElectLeadersRequest()
			all.ElectionType, all.TimeoutMillis = int8(v), 1000 // 1 unclean, 2 unknown
			out = append(out, set(all))
		}
		return out
	case 44:
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		resource := func(typ kmsg.ConfigResourceType, name string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName, res.Configs = typ, name, configs
			r.Resources = append(r.Resources, res)
		}
		config := func(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = name, op, value
			return c
		}
		resource(kmsg.ConfigResourceTypeTopic, "fuzz",
			config("retention.ms", kmsg.IncrementalAlterConfigOpSet, str("3600000")),
			config("segment.ms", kmsg.IncrementalAlterConfigOpDelete, nil))
		resource(kmsg.ConfigResourceTypeTopic, "fuzz-compact",
			config("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, str("delete")))
		resource(kmsg.ConfigResourceTypeTopic, "fuzz-compact",
			config("max.message.bytes", kmsg.IncrementalAlterConfigOpSet, str("-5")))
		resource(kmsg.ConfigResourceTypeTopic, "missing",
			config("retention.ms", kmsg.IncrementalAlterConfigOpSet, str("1")))
		resource(kmsg.ConfigResourceTypeTopic, fuzzGrowTopic,
			config("no.such.config", kmsg.IncrementalAlterConfigOpSet, str("1")),
			config("segment.bytes", kmsg.IncrementalAlterConfigOpSet, nil))
		resource(kmsg.ConfigResourceTypeBroker, "1",
			config("log.retention.ms", kmsg.IncrementalAlterConfigOpSet, str("1")))
		r.ValidateOnly = v == 0
		return []kmsg.Request{set(r)}
	case 24:
		topics := func() []kmsg.AddPartitionsToTxnRequestTopic {
			var ts []kmsg.AddPartitionsToTxnRequestTopic
			for _, name := range []string{"fuzz", "missing", "__consumer_offsets"} {
				t := kmsg.NewAddPartitionsToTxnRequestTopic()
				t.Topic, t.Partitions = name, []int32{0, 1, 9}
				ts = append(ts, t)
			}
			return ts
		}
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		if v < 4 {
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Topics = "tx", 0, 0, topics()
			return []kmsg.Request{set(r)}
		}
		// v4+: the batched, broker-to-broker form (verification).
		for _, verify := range []bool{true, false} {
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx", 0, 0, verify
			for _, t := range topics() {
				bt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				bt.Topic, bt.Partitions = t.Topic, t.Partitions
				tx.Topics = append(tx.Topics, bt)
			}
			r.Transactions = append(r.Transactions, tx)
		}
		return []kmsg.Request{set(r)}
	case 25:
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", 0, 0, fuzzGroup
		return []kmsg.Request{set(r)}
	case 26:
		var out []kmsg.Request
		for _, commit := range []bool{true, false} {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = "tx", 0, 0, commit
			out = append(out, set(r))
		}
		return out
	case 27:
		// The fuzz client is a super user, so it may write markers.
		r := kmsg.NewPtrWriteTxnMarkersRequest()
		for _, committed := range []bool{true, false} {
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 1<<42, 0, committed, 0
			for _, name := range []string{"fuzz", "missing"} {
				t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				t.Topic, t.Partitions = name, []int32{0, 9}
				m.Topics = append(m.Topics, t)
			}
			r.Markers = append(r.Markers, m)
		}
		return []kmsg.Request{set(r)}
	case 28:
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = "tx", fuzzGroup, 0, 0
		r.Generation, r.MemberID = -1, ""
		for _, name := range []string{"fuzz", "missing"} {
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = name
			for _, p := range []int32{0, 9} {
				tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				tp.Partition, tp.Offset, tp.LeaderEpoch = p, 1, -1
				t.Partitions = append(t.Partitions, tp)
			}
			r.Topics = append(r.Topics, t)
		}
		return []kmsg.Request{set(r)}
	case 61:
		r := kmsg.NewPtrDescribeProducersRequest()
		for _, name := range []string{"fuzz", "missing"} {
			t := kmsg.NewDescribeProducersRequestTopic()
			t.Topic, t.Partitions = name, []int32{0, 1, 9}
			r.Topics = append(r.Topics, t)
		}
		return []kmsg.Request{set(r)}
	case 65:
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{"tx", "never-used", ""}
		return []kmsg.Request{set(r)}
	case 66:
		all := kmsg.NewPtrListTransactionsRequest()
		some := kmsg.NewPtrListTransactionsRequest()
		some.StateFilters, some.ProducerIDFilters = []string{"Ongoing", "NoSuchState"}, []int64{-1, 5}
		if v >= 1 {
			some.DurationFilterMillis = 1000
		}
		return []kmsg.Request{set(all), set(some)}
	case 21:
		// Below the high watermark, the high watermark (-1), past it,
		// a compacted topic, an unknown one; a short timeout.
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.TimeoutMillis = 200
		for _, tp := range []struct {
			topic  string
			offset []int64
		}{{"fuzz", []int64{1, -1}}, {"fuzz-compact", []int64{-1}}, {"missing", []int64{0}}} {
			t := kmsg.NewDeleteRecordsRequestTopic()
			t.Topic = tp.topic
			for i, o := range tp.offset {
				p := kmsg.NewDeleteRecordsRequestTopicPartition()
				p.Partition, p.Offset = int32(i), o
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
		past := kmsg.NewPtrDeleteRecordsRequest()
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = "fuzz"
		p := kmsg.NewDeleteRecordsRequestTopicPartition()
		p.Partition, p.Offset = 1, 1<<40
		t.Partitions = append(t.Partitions, p)
		past.Topics = append(past.Topics, t)
		return []kmsg.Request{set(r), set(past)}
	case 35:
		all := kmsg.NewPtrDescribeLogDirsRequest()
		some := kmsg.NewPtrDescribeLogDirsRequest()
		for _, name := range []string{"fuzz", "missing"} {
			t := kmsg.NewDescribeLogDirsRequestTopic()
			t.Topic, t.Partitions = name, []int32{0, 1, 9}
			some.Topics = append(some.Topics, t)
		}
		return []kmsg.Request{set(all), set(some)}
	case 48:
		all := kmsg.NewPtrDescribeClientQuotasRequest()
		some := kmsg.NewPtrDescribeClientQuotasRequest()
		some.Strict = true
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = "client-id", kmsg.QuotasMatchTypeExact, str("fuzz")
		bad := kmsg.NewDescribeClientQuotasRequestComponent()
		bad.EntityType, bad.MatchType = "group", 7
		some.Components = append(some.Components, c)
		odd := kmsg.NewPtrDescribeClientQuotasRequest()
		odd.Components = append(odd.Components, c, bad)
		return []kmsg.Request{set(all), set(some), set(odd)}
	case 49:
		r := kmsg.NewPtrAlterClientQuotasRequest()
		entry := func(typ string, name *string, key string, value float64, remove bool) {
			e := kmsg.NewAlterClientQuotasRequestEntry()
			ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ent.Type, ent.Name = typ, name
			e.Entity = append(e.Entity, ent)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value, op.Remove = key, value, remove
			e.Ops = append(e.Ops, op)
			r.Entries = append(r.Entries, e)
		}
		// A quota far above what the seeds produce: no seed is throttled.
		entry("client-id", str("fuzz-quota"), "producer_byte_rate", 1<<40, false)
		entry("user", nil, "consumer_byte_rate", -1, false)
		entry("ip", str("not-an-ip"), "connection_creation_rate", 5, false)
		entry("client-id", str("fuzz-quota"), "request_percentage", 0, true)
		return []kmsg.Request{set(r)}
	case 47:
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = fuzzGroup
		for _, name := range []string{"fuzz", "missing"} {
			t := kmsg.NewOffsetDeleteRequestTopic()
			t.Topic = name
			for _, p := range []int32{0, 1} {
				tp := kmsg.NewOffsetDeleteRequestTopicPartition()
				tp.Partition = p
				t.Partitions = append(t.Partitions, tp)
			}
			r.Topics = append(r.Topics, t)
		}
		return []kmsg.Request{set(r)}
	case 17:
		// The broker's listener has no SASL: ILLEGAL_SASL_STATE.
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = "SCRAM-SHA-256"
		return []kmsg.Request{set(r)}
	case 36:
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte("n,,n=fuzz,r=abc")
		return []kmsg.Request{set(r)}
	case 50:
		all := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		some := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, name := range []string{"fuzz", "fuzz", "nobody"} {
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = name
			some.Users = append(some.Users, u)
		}
		return []kmsg.Request{set(all), set(some)}
	case 51:
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations = "fuzz", 1, 4096
		up.Salt, up.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 32)
		bad := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		bad.Name, bad.Mechanism, bad.Iterations = "weak", 2, 1
		del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		del.Name, del.Mechanism = "nobody", 3
		r.Upsertions = append(r.Upsertions, up, bad)
		r.Deletions = append(r.Deletions, del)
		return []kmsg.Request{set(r)}
	case 29:
		all := kmsg.NewPtrDescribeACLsRequest()
		all.ResourceType, all.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		all.Operation, all.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		match := kmsg.NewPtrDescribeACLsRequest()
		match.ResourceType, match.ResourceName, match.ResourcePatternType = kmsg.ACLResourceTypeTopic, str("fuzz"), kmsg.ACLResourcePatternTypeMatch
		match.Operation, match.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		unknown := kmsg.NewPtrDescribeACLsRequest()
		unknown.ResourceType, unknown.Operation, unknown.PermissionType = 99, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return []kmsg.Request{set(all), set(match), set(unknown)}
	case 30:
		r := kmsg.NewPtrCreateACLsRequest()
		acl := func(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, name, pattern
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:fuzz", "*", op, kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
		}
		acl(kmsg.ACLResourceTypeTopic, "fu", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead)
		acl(kmsg.ACLResourceTypeGroup, fuzzGroup, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll)
		acl(kmsg.ACLResourceTypeCluster, "not-the-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAlter)
		acl(kmsg.ACLResourceTypeTopic, "fuzz", kmsg.ACLResourcePatternTypeAny, 77)
		return []kmsg.Request{set(r)}
	case 31:
		r := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Principal = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, str("User:fuzz")
		f.Operation, f.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAny
		bad := kmsg.NewDeleteACLsRequestFilter()
		bad.ResourceType, bad.ResourcePatternType, bad.Operation, bad.PermissionType = kmsg.ACLResourceTypeTopic, 9, kmsg.ACLOperationAny, 0
		r.Filters = append(r.Filters, f, bad)
		return []kmsg.Request{set(r)}
	case 60:
		r := kmsg.NewPtrDescribeClusterRequest()
		r.IncludeClusterAuthorizedOperations, r.EndpointType = true, 1
		out := []kmsg.Request{set(r)}
		if v == 1 {
			other := kmsg.NewPtrDescribeClusterRequest()
			other.EndpointType = 2
			out = append(out, set(other))
		}
		return out
	}
	panic(fmt.Sprintf("no seed for key %d", key))
}
