package test

// A multi-broker cluster harness for fault tests: one embedded etcd in the
// test process and N `samsa server` child processes (process_test.go's
// Proc), each reached only through bridges (bridge_test.go) that the test
// can cut:
//
//	clients, other brokers ──► Kafka bridge i ──► broker i's listener
//	broker i ──► etcd bridge i ──► etcd
//
// Broker i (node id i, from 1) advertises its Kafka bridge's address, so
// clients and, once followers fetch, the other brokers reach it only through
// that bridge: CutKafka(i) isolates it from both. It talks to etcd only
// through its own etcd bridge, so CutEtcd(i) partitions it from the metadata
// store alone.
//
// Cuts between two chosen brokers: every peer dials the same advertised
// address, so the Kafka bridges tell their clients apart by the client id
// of each connection's first request. A follower's fetchers identify as
// "samsa-replica-<id>", so CutBetween(a, b) resets and refuses broker a's
// fetch connections to b and b's to a, and nothing else: clients and etcd
// keep their paths. (Brokers talk to each other only by fetching; the
// controller's orders travel through etcd.)

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
)

const (
	// clusterSessionTimeout is broker.session.timeout.ms in cluster tests:
	// short, so a dead broker's registration expires quickly, yet several
	// keepalive intervals (a third of it each) long, so a loaded test
	// machine does not lose sessions spuriously.
	clusterSessionTimeout = 3 * time.Second
	// clusterStartTimeout bounds StartCluster after the processes run:
	// every broker registered and a controller elected, as every broker
	// sees it.
	clusterStartTimeout = 30 * time.Second
	// clusterRequestTimeout bounds one harness request (Metadata, ...).
	clusterRequestTimeout = 5 * time.Second
)

// clusterConfig is what StartCluster's options adjust.
type clusterConfig struct {
	sessionTimeout time.Duration
	// overrides are --override settings of every broker.
	overrides []string
	// brokerOverrides are per node id, applied after overrides.
	brokerOverrides map[int32][]string
}

// ClusterOption adjusts StartCluster.
type ClusterOption func(*clusterConfig)

// WithSessionTimeout sets broker.session.timeout.ms.
func WithSessionTimeout(d time.Duration) ClusterOption {
	return func(c *clusterConfig) { c.sessionTimeout = d }
}

// WithOverrides adds name=value settings to every broker.
func WithOverrides(kv ...string) ClusterOption {
	return func(c *clusterConfig) { c.overrides = append(c.overrides, kv...) }
}

// WithBrokerOverrides adds name=value settings to one broker (e.g.
// broker.rack).
func WithBrokerOverrides(id int32, kv ...string) ClusterOption {
	return func(c *clusterConfig) { c.brokerOverrides[id] = append(c.brokerOverrides[id], kv...) }
}

// Cluster is an N-broker samsa cluster of child processes on 127.0.0.1
// with one embedded etcd. Its methods fail the test on error and must be
// called from the test's goroutine.
type Cluster struct {
	t testing.TB
	// Etcd is the metadata store, in the test process.
	Etcd *coord.Embedded
	// EtcdAddr is etcd's client host:port (the bridges' target).
	EtcdAddr string
	// SessionTimeout is the brokers' broker.session.timeout.ms.
	SessionTimeout time.Duration
	// brokers holds node id i at index i-1.
	brokers []*ClusterBroker
	// client is the harness's own client, seeded with every Kafka bridge.
	client *kgo.Client
}

// ClusterBroker is one broker of a Cluster.
type ClusterBroker struct {
	// ID is the node id.
	ID int32
	// Proc is the child process (restarted in place).
	Proc *Proc
	// Kafka is the bridge in front of the broker's listener; its address
	// is the advertised one.
	Kafka *Bridge
	// EtcdBridge carries the broker's etcd traffic.
	EtcdBridge *Bridge
	// paused is set between Pause and Resume.
	paused bool
}

// Addr is the broker's advertised address (its Kafka bridge).
func (b *ClusterBroker) Addr() string { return b.Kafka.Addr() }

// StartCluster starts etcd and n brokers (node ids 1..n), and returns once
// every broker sees all n registered and a controller elected. Everything
// is stopped when the test ends: processes killed, bridges and etcd closed;
// a failed test logs each broker's stderr tail.
func StartCluster(t testing.TB, n int, opts ...ClusterOption) *Cluster {
	t.Helper()
	cfg := clusterConfig{sessionTimeout: clusterSessionTimeout, brokerOverrides: map[int32][]string{}}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := coord.StartEmbedded(ctx, coord.EmbeddedConfig{
		Dir:       t.TempDir(),
		Name:      "cluster-test",
		ClientURL: "http://127.0.0.1:0",
		PeerURL:   "http://127.0.0.1:0",
		Logger:    testLogger(),
	})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(func() { etcd.Close() })
	etcdAddr := strings.TrimPrefix(etcd.Endpoints()[0], "http://")

	c := &Cluster{t: t, Etcd: etcd, EtcdAddr: etcdAddr, SessionTimeout: cfg.sessionTimeout}
	// Bridges first: a broker's advertised address must be known before it
	// starts. Cleanups run in reverse, so processes die before their
	// bridges close and etcd stops last.
	for i := 1; i <= n; i++ {
		c.brokers = append(c.brokers, &ClusterBroker{
			ID:         int32(i),
			Kafka:      NewKafkaBridge(t, ""), // target set once the process listens
			EtcdBridge: NewBridge(t, etcdAddr),
		})
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, b := range c.brokers {
			if b.Proc == nil {
				continue
			}
			t.Logf("broker %d: listener %s, advertised %s (kafka bridge %v), etcd bridge %v, data %s, stderr files in %s",
				b.ID, b.Proc.Addr, b.Addr(), b.Kafka.State(), b.EtcdBridge.State(), b.Proc.DataDir, b.Proc.logDir)
		}
	})
	for _, b := range c.brokers {
		settings := []string{
			"node.id=" + strconv.Itoa(int(b.ID)),
			"metadata.etcd.endpoints=http://" + b.EtcdBridge.Addr(),
			"advertised.listeners=PLAINTEXT://" + b.Kafka.Addr(),
			"broker.session.timeout.ms=" + strconv.FormatInt(cfg.sessionTimeout.Milliseconds(), 10),
		}
		settings = append(settings, cfg.overrides...)
		settings = append(settings, cfg.brokerOverrides[b.ID]...)
		// Proc passes these as --override, which wins over its own flags;
		// with metadata.etcd.endpoints set, its embedded-etcd URLs are
		// unused.
		b.Proc = StartProc(t, settings...)
		b.Kafka.SetTarget(b.Proc.Addr)
	}

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.bootstrapList()...),
		kgo.ClientID("samsa-cluster-harness"),
		kgo.DialTimeout(time.Second),
		kgo.RetryTimeout(clusterRequestTimeout),
		kgo.MetadataMinAge(10*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("harness client: %v", err)
	}
	t.Cleanup(cl.Close)
	c.client = cl

	WaitFor(t, clusterStartTimeout, func() error {
		for _, b := range c.brokers {
			md, err := c.MetadataFrom(b.ID)
			if err != nil {
				return err
			}
			if got := metadataBrokerIDs(md); len(got) != n {
				return fmt.Errorf("broker %d sees brokers %v, want %d", b.ID, got, n)
			}
			if md.ControllerID < 1 {
				return fmt.Errorf("broker %d sees no controller", b.ID)
			}
		}
		return nil
	})
	return c
}

// Broker returns broker id.
func (c *Cluster) Broker(id int32) *ClusterBroker {
	c.t.Helper()
	if id < 1 || int(id) > len(c.brokers) {
		c.t.Fatalf("no broker %d in a cluster of %d", id, len(c.brokers))
	}
	return c.brokers[id-1]
}

// IDs returns the node ids, 1..n.
func (c *Cluster) IDs() []int32 {
	ids := make([]int32, len(c.brokers))
	for i, b := range c.brokers {
		ids[i] = b.ID
	}
	return ids
}

func (c *Cluster) bootstrapList() []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.Addr()
	}
	return out
}

// Bootstrap returns every broker's advertised (bridge) address,
// comma-separated, for --bootstrap-server.
func (c *Cluster) Bootstrap() string { return strings.Join(c.bootstrapList(), ",") }

// Client returns a new franz-go client seeded with every broker, closed
// when the test ends.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.bootstrapList()...)}, opts...)...)
	if err != nil {
		c.t.Fatalf("new franz-go client: %v", err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client over the harness's client. Its metadata
// helpers may answer brokers and controller from the client's cache; use
// Metadata, MetadataFrom or Controller to observe a change.
func (c *Cluster) Admin() *kadm.Client { return kadm.NewClient(c.client) }

// Metadata asks any live broker for the metadata of every topic (the
// newest version both sides speak, so leader epochs are included),
// bypassing client caches.
func (c *Cluster) Metadata() (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	return kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.client)
}

// MetadataFrom asks broker id itself, through its Kafka bridge, for the
// metadata of every topic.
func (c *Cluster) MetadataFrom(id int32) (*kmsg.MetadataResponse, error) {
	b := c.Broker(id)
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	// A client of its own: the shared one only knows brokers that are
	// registered, and routes by node id.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTimeout(time.Second),
		kgo.RetryTimeout(time.Second), kgo.RequestRetries(1))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, fmt.Errorf("metadata from broker %d: %w", id, err)
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// Controller returns the controller id that Metadata reports, asked with
// kadm over a new client: kadm's BrokerMetadata on a long-lived client
// answers brokers and controller from the client's cache without asking
// (kgo's RequestCachedMetadata with no topics), so it would still name a
// dead controller.
func (c *Cluster) Controller() (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrapList()...), kgo.DialTimeout(time.Second))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return -1, err
	}
	return md.Controller, nil
}

// Kill9 kills broker id with SIGKILL (a crash: no deregistration, no
// flush) and waits until it is gone.
func (c *Cluster) Kill9(id int32) {
	c.t.Helper()
	b := c.Broker(id)
	b.Proc.Kill9(c.t)
	b.paused = false
}

// Stop shuts broker id down with SIGTERM and requires a clean exit.
func (c *Cluster) Stop(id int32) {
	c.t.Helper()
	b := c.Broker(id)
	if b.paused {
		c.Resume(id)
	}
	b.Proc.Stop(c.t)
}

// Restart starts broker id again on its data directory, behind the same
// bridges (so with the same advertised address), after Kill9, Stop or a
// process exit of its own, and waits until it serves.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	b := c.Broker(id)
	b.Proc.Restart(c.t)
	b.Kafka.SetTarget(b.Proc.Addr)
}

// Pause stops broker id with SIGSTOP: a process that hangs, holding its
// connections open without answering (a GC pause, a frozen VM).
func (c *Cluster) Pause(id int32) {
	c.t.Helper()
	b := c.Broker(id)
	c.signal(b, syscall.SIGSTOP)
	b.paused = true
}

// Resume continues a paused broker with SIGCONT.
func (c *Cluster) Resume(id int32) {
	c.t.Helper()
	b := c.Broker(id)
	c.signal(b, syscall.SIGCONT)
	b.paused = false
}

func (c *Cluster) signal(b *ClusterBroker, sig syscall.Signal) {
	c.t.Helper()
	if !b.Proc.running() {
		c.t.Fatalf("broker %d is not running", b.ID)
	}
	if err := b.Proc.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("broker %d: %v: %v", b.ID, sig, err)
	}
}

// Running reports whether broker id's process runs (paused counts).
func (c *Cluster) Running(id int32) bool { return c.Broker(id).Proc.running() }

// WaitExit waits up to timeout for broker id's process to exit on its own
// and returns its wait status (nil for status 0).
func (c *Cluster) WaitExit(id int32, timeout time.Duration) error {
	c.t.Helper()
	p := c.Broker(id).Proc
	if p.cmd == nil {
		c.t.Fatalf("broker %d never started", id)
	}
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		c.t.Fatalf("broker %d still runs %v later", id, timeout)
		return nil
	}
}

// CutEtcd resets broker id's connections to etcd and refuses new ones.
func (c *Cluster) CutEtcd(id int32) { c.Broker(id).EtcdBridge.Cut() }

// HealEtcd reconnects broker id to etcd.
func (c *Cluster) HealEtcd(id int32) { c.Broker(id).EtcdBridge.Heal() }

// BlackholeEtcd makes broker id's etcd traffic hang: nothing is
// forwarded, nothing reset, until HealEtcd.
func (c *Cluster) BlackholeEtcd(id int32) { c.Broker(id).EtcdBridge.Blackhole() }

// CutKafka resets every Kafka connection to broker id (clients' and
// other brokers') and refuses new ones.
func (c *Cluster) CutKafka(id int32) { c.Broker(id).Kafka.Cut() }

// BlackholeKafka makes every Kafka connection to broker id hang until
// HealKafka.
func (c *Cluster) BlackholeKafka(id int32) { c.Broker(id).Kafka.Blackhole() }

// HealKafka reconnects broker id to clients and brokers.
func (c *Cluster) HealKafka(id int32) { c.Broker(id).Kafka.Heal() }

// replicaClientID is the client id of broker id's fetchers
// (internal/broker/replication.go).
func replicaClientID(id int32) string { return "samsa-replica-" + strconv.Itoa(int(id)) }

// CutBetween partitions brokers a and b from each other: each one's
// fetches from the other are reset and refused until HealBetween. Both
// keep their clients and etcd.
func (c *Cluster) CutBetween(a, b int32) {
	c.Broker(b).Kafka.CutPeer(replicaClientID(a))
	c.Broker(a).Kafka.CutPeer(replicaClientID(b))
}

// BlackholeBetween is CutBetween with packets dropped instead of refused:
// fetches between a and b hang until HealBetween.
func (c *Cluster) BlackholeBetween(a, b int32) {
	c.Broker(b).Kafka.BlackholePeer(replicaClientID(a))
	c.Broker(a).Kafka.BlackholePeer(replicaClientID(b))
}

// HealBetween ends CutBetween or BlackholeBetween.
func (c *Cluster) HealBetween(a, b int32) {
	c.Broker(b).Kafka.HealPeer(replicaClientID(a))
	c.Broker(a).Kafka.HealPeer(replicaClientID(b))
}

// exitStatus describes a wait status for logs.
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// metadataBrokerIDs returns the registered broker ids of a response,
// sorted.
func metadataBrokerIDs(md *kmsg.MetadataResponse) []int32 {
	ids := make([]int32, 0, len(md.Brokers))
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// metadataTopic returns a topic of a Metadata response.
func metadataTopic(md *kmsg.MetadataResponse, name string) (kmsg.MetadataResponseTopic, bool) {
	for _, t := range md.Topics {
		if t.Topic != nil && *t.Topic == name {
			return t, true
		}
	}
	return kmsg.MetadataResponseTopic{}, false
}

// brokerAddr formats a Metadata broker's host:port.
func brokerAddr(b kmsg.MetadataResponseBroker) string {
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
}

// TestClusterHarness exercises the harness itself: a three-broker cluster
// starts with every broker registered at its bridge address; Pause makes a
// broker miss its session, Resume then finds the session lost (the broker
// registers again in the same process), and Stop and Restart work.
func TestClusterHarness(t *testing.T) {
	t.Parallel() // mostly waits on session timeouts
	c := StartCluster(t, 3)
	md, err := c.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.ClusterID == nil || *md.ClusterID == "" {
		t.Errorf("no cluster id in Metadata")
	}
	for _, b := range md.Brokers {
		if got, want := brokerAddr(b), c.Broker(b.NodeID).Addr(); got != want {
			t.Errorf("broker %d advertised as %s, want its bridge %s", b.NodeID, got, want)
		}
	}
	ctrl, err := c.Controller()
	if err != nil || ctrl < 1 || ctrl > 3 {
		t.Fatalf("Controller() = %d, %v; want one of 1..3", ctrl, err)
	}

	// Pause a broker that is not the controller: its keepalives stop, etcd
	// expires its registration, and the others see it go.
	victim := int32(1)
	if victim == ctrl {
		victim = 2
	}
	c.Pause(victim)
	paused := time.Now()
	WaitFor(t, c.SessionTimeout+10*time.Second, func() error {
		md, err := c.MetadataFrom(ctrl)
		if err != nil {
			return err
		}
		if ids := metadataBrokerIDs(md); slices.Contains(ids, victim) {
			return fmt.Errorf("paused broker %d still registered: %v", victim, ids)
		}
		return nil
	})
	t.Logf("paused broker %d deregistered after %v", victim, time.Since(paused).Round(time.Millisecond))
	if !c.Running(victim) {
		t.Fatalf("paused broker %d exited", victim)
	}

	// Resumed, it finds its session lost, closes that incarnation and
	// registers again in the same process (broker.Run): it must not exit,
	// which with embedded etcd would take its member out of the quorum.
	c.Resume(victim)
	resumed := time.Now()
	WaitFor(t, 30*time.Second, func() error {
		if !c.Running(victim) {
			return nil // reported below
		}
		md, err := c.MetadataFrom(ctrl)
		if err != nil {
			return err
		}
		if ids := metadataBrokerIDs(md); !slices.Contains(ids, victim) {
			return fmt.Errorf("resumed broker %d not registered again: %v", victim, ids)
		}
		return nil
	})
	if !c.Running(victim) {
		t.Fatalf("resumed broker %d exited (%v) instead of registering again:\n%s", victim,
			exitStatus(c.WaitExit(victim, time.Second)), procTailFile(c.Broker(victim).Proc.stderrPath, 4096))
	}
	t.Logf("resumed broker %d registered again %v after it resumed", victim, time.Since(resumed).Round(time.Millisecond))
	if logs := c.Broker(victim).Proc.Stderr(t); !strings.Contains(logs, "broker registration lost: stopping this incarnation and registering again") {
		t.Errorf("broker %d's log does not say why it restarted:\n%s", victim, procTailFile(c.Broker(victim).Proc.stderrPath, 4096))
	}

	// Stopped and started again, it registers again too.
	c.Stop(victim)
	c.Restart(victim)
	WaitFor(t, 10*time.Second, func() error {
		md, err := c.MetadataFrom(ctrl)
		if err != nil {
			return err
		}
		if ids := metadataBrokerIDs(md); !slices.Contains(ids, victim) {
			return fmt.Errorf("restarted broker %d not registered: %v", victim, ids)
		}
		return nil
	})
	c.Stop(victim)
}
