// Package docker runs samsa clusters in Docker containers for fault tests:
// every broker is a real `samsa server` in its own container on a private
// Docker network, running an embedded etcd member, the members forming one
// etcd cluster. Faults are what Docker can do to a container: kill -9,
// SIGTERM, restart, pause (the freezer cgroup), and disconnecting it from
// the network (a partition from everyone, clients included).
//
// The image is built FROM scratch (deploy/Dockerfile) from a static samsa
// binary that the harness builds itself; nothing is pulled. The test
// process reaches the containers at their addresses on the private network
// (the host routes to a user-defined bridge network on Linux), so brokers
// advertise those addresses to brokers and clients alike.
//
// Docker is required: without it every test fails, it does not skip.
package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	samsatest "github.com/samsa-io/samsa/test"
)

const (
	// KafkaPort is every broker's Kafka listener port in its container.
	KafkaPort = 9092
	// etcdPeerPort is the embedded etcd members' peer port.
	etcdPeerPort = 2380
	// DefaultSessionTimeout is broker.session.timeout.ms in these tests:
	// short, so a dead or cut-off broker's registration expires quickly,
	// long enough that a loaded 2-core machine keeps sessions alive.
	DefaultSessionTimeout = 5 * time.Second
	// startTimeout bounds a cluster's start: every broker sees every
	// broker registered and a controller.
	startTimeout = 90 * time.Second
	// dockerTimeout bounds one docker CLI command.
	dockerTimeout = 2 * time.Minute
	// requestTimeout bounds one harness request to a broker.
	requestTimeout = 5 * time.Second
	// Label marks every container and network the harness creates, so
	// that leftovers of an interrupted run can be found:
	// docker rm -f $(docker ps -aq --filter label=samsa.test)
	Label = "samsa.test"
)

// Cluster is N samsa brokers in containers on one private network. Its
// methods fail the test on error and must be called from the test's
// goroutine; Node's methods likewise.
type Cluster struct {
	t testing.TB
	// Image is the image the brokers run.
	Image string
	// Network is the private Docker network's name.
	Network string
	// SessionTimeout is the brokers' broker.session.timeout.ms.
	SessionTimeout time.Duration
	// Nodes holds node id i at index i-1.
	Nodes []*Node
	// clientOpts are every client's credentials (WithSecurity).
	clientOpts []kgo.Opt

	mu      sync.Mutex
	clients []*kgo.Client
	// onRestart, if set, is called by the supervisor after each restart.
	onRestart func(id int32, exit, lastLines string)

	// stopSupervisor ends the supervisor; supervisorDone is closed when it
	// has ended.
	stopSupervisor chan struct{}
	supervisorDone chan struct{}
}

// Node is one broker container.
type Node struct {
	c *Cluster
	// ID is the broker's node.id.
	ID int32
	// Name is the container's name (and, prefixed, its hostname).
	Name string
	// IP is the container's fixed address on the cluster network; it
	// keeps it across restarts and reconnects.
	IP string

	// mu serializes the supervisor's restarts with the test's faults.
	mu sync.Mutex
	// down is set while the test keeps the broker stopped (Kill, Stop,
	// Signal("KILL"), until Start); disconnected while it is off the
	// network; paused while frozen.
	down, disconnected, paused bool
	// cuts are the packet filters in force (netfault.go), applied again
	// after every start.
	cuts map[cut]bool
	// restarts counts the supervisor's restarts.
	restarts int
}

// Addr is the broker's advertised Kafka address.
func (n *Node) Addr() string { return n.IP + ":" + strconv.Itoa(KafkaPort) }

type config struct {
	sessionTimeout time.Duration
	overrides      []string
	secure         bool
}

// Option adjusts Start.
type Option func(*config)

// WithSessionTimeout sets broker.session.timeout.ms.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) { c.sessionTimeout = d }
}

// WithOverrides adds name=value broker settings to every broker.
func WithOverrides(kv ...string) Option {
	return func(c *config) { c.overrides = append(c.overrides, kv...) }
}

// WithSecurity secures the cluster (docs/security.md): one SASL_PLAINTEXT
// listener, SCRAM-SHA-512 for clients and between brokers (user "broker",
// a super user), and ACL authorization. The test's clients (Client, the
// readiness checks) log in as "app", which is no super user: it is
// granted, through ACLs, everything on the cluster, on every topic and on
// every group, so every request it sends goes through the authorizer.
func WithSecurity() Option { return func(c *config) { c.secure = true } }

// Credentials of a cluster started WithSecurity.
const (
	secureBroker, secureBrokerPassword = "broker", "broker-secret"
	secureApp, secureAppPassword       = "app", "app-secret"
)

// Start starts an n-broker cluster (node ids 1..n) on a new private network
// and returns once every broker sees all n registered and a controller.
// Containers and network are removed when the test ends (the image is kept
// for the next run); a failed test logs each broker's log tail first.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	cfg := config{sessionTimeout: DefaultSessionTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	image := Image(t)
	c := &Cluster{t: t, Image: image, SessionTimeout: cfg.sessionTimeout}
	c.Network = "samsa-test-" + sanitize(t.Name()) + "-" + randomHex(4)
	subnet := c.createNetwork()
	t.Cleanup(c.cleanup)

	var peers []string
	for i := 1; i <= n; i++ {
		node := &Node{
			c:    c,
			ID:   int32(i),
			Name: fmt.Sprintf("%s-samsa%d", c.Network, i),
			IP:   fmt.Sprintf("%s.%d", subnet, 10+i),
		}
		c.Nodes = append(c.Nodes, node)
		peers = append(peers, fmt.Sprintf("samsa-%d=http://%s:%d", i, node.IP, etcdPeerPort))
	}
	listener := "PLAINTEXT"
	if cfg.secure {
		listener = "SASL_PLAINTEXT"
		c.clientOpts = []kgo.Opt{kgo.SASL(scram.Auth{User: secureApp, Pass: secureAppPassword}.AsSha512Mechanism())}
		cfg.overrides = append(cfg.overrides,
			"sasl.enabled.mechanisms=SCRAM-SHA-512",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "+
				fmt.Sprintf("username=%q password=%q;", secureBroker, secureBrokerPassword),
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:"+secureBroker)
	}
	for _, node := range c.Nodes {
		args := []string{"run", "-d", "--name", node.Name,
			"--hostname", fmt.Sprintf("samsa%d", node.ID),
			"--network", c.Network, "--ip", node.IP,
			"--label", Label + "=" + c.Network,
			image,
			"server",
			"--node-id", strconv.Itoa(int(node.ID)),
			"--listeners", fmt.Sprintf("%s://0.0.0.0:%d", listener, KafkaPort),
			"--advertised-listeners", listener + "://" + node.Addr(),
			"--data-dir", "/data",
			"--override", "metadata.etcd.client.url=http://127.0.0.1:2379",
			"--override", fmt.Sprintf("metadata.etcd.peer.url=http://%s:%d", node.IP, etcdPeerPort),
			"--override", "metadata.etcd.initial.cluster=" + strings.Join(peers, ","),
			"--override", "broker.session.timeout.ms=" + strconv.FormatInt(cfg.sessionTimeout.Milliseconds(), 10),
		}
		for _, kv := range cfg.overrides {
			args = append(args, "--override", kv)
		}
		if cfg.secure {
			args = append(args,
				"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", secureBroker, secureBrokerPassword),
				"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", secureApp, secureAppPassword))
		}
		if _, err := docker(args...); err != nil {
			t.Fatalf("start broker %d: %v", node.ID, err)
		}
	}
	c.stopSupervisor, c.supervisorDone = make(chan struct{}), make(chan struct{})
	go c.supervise()
	c.WaitFor(startTimeout, func() error {
		for _, node := range c.Nodes {
			if err := node.ready(n); err != nil {
				return err
			}
		}
		return nil
	})
	if cfg.secure {
		c.grantApp()
	}
	return c
}

// grantApp gives the app user, as the broker user (a super user), ALL on
// the cluster, on every topic, on every group and on every transactional
// id.
func (c *Cluster) grantApp() {
	c.t.Helper()
	// Not Client: its options log in as the app, and franz-go uses the
	// first of several SASL options.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RetryTimeout(30*time.Second),
		kgo.SASL(scram.Auth{User: secureBroker, Pass: secureBrokerPassword}.AsSha512Mechanism()))
	if err != nil {
		c.t.Fatalf("new client: %v", err)
	}
	defer cl.Close()
	acls := kadm.NewACLs().Allow("User:" + secureApp).AllowHosts().Operations(kadm.OpAll).
		Clusters().Topics("*").Groups("*").TransactionalIDs("*").ResourcePatternType(kadm.ACLPatternLiteral)
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateACLs(ctx, acls)
	if err != nil {
		c.t.Fatalf("grant %s its ACLs: %v", secureApp, err)
	}
	for _, r := range res {
		if r.Err != nil {
			c.t.Fatalf("grant %s its ACLs: %v", secureApp, r.Err)
		}
	}
	// Every broker's cache must have them before the workloads start.
	c.WaitFor(30*time.Second, func() error {
		for _, node := range c.Nodes {
			resp, err := node.metadata("__acl-probe")
			if err != nil {
				return err
			}
			if code := resp.Topics[0].ErrorCode; code == kerr.TopicAuthorizationFailed.Code {
				return fmt.Errorf("broker %d does not know the app's ACLs yet", node.ID)
			}
		}
		return nil
	})
}

// supervisorInterval is how often the supervisor looks for exited brokers.
const supervisorInterval = 500 * time.Millisecond

// supervise plays the part of a process supervisor (systemd, a restart
// policy): a broker that exits on its own is started again, once it is on
// the network. samsa registers again in the same process when it loses
// its registration (broker.Run); it exits, with a non-zero status, only
// when a log failed or a new incarnation cannot start, and relies on being
// restarted then. Campaigns report every restart. While a container is off
// the network its etcd member cannot bind its peer address, so Docker's
// own restart policies (on-failure and unless-stopped back off up to a
// minute) fit poorly. A broker the test stopped (Kill, Stop)
// stays down until Start.
func (c *Cluster) supervise() {
	defer close(c.supervisorDone)
	tick := time.NewTicker(supervisorInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stopSupervisor:
			return
		case <-tick.C:
		}
		for _, n := range c.Nodes {
			n.superviseOnce()
		}
	}
}

func (n *Node) superviseOnce() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down || n.disconnected {
		return
	}
	out, err := docker("inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", n.Name)
	if err != nil || !strings.HasPrefix(out, "exited") {
		return
	}
	// Why it exited: the last lines of its output, before the restart
	// appends more.
	why := strings.TrimSpace(n.Logs(exitLogLines))
	if _, err := docker("start", n.Name); err != nil {
		n.c.t.Logf("supervisor: broker %d exited (%s), start failed: %v", n.ID, strings.TrimSpace(out), err)
		return
	}
	if err := n.applyCutsLocked(); err != nil {
		n.c.t.Logf("supervisor: broker %d: %v", n.ID, err)
	}
	n.restarts++
	status := strings.TrimPrefix(strings.TrimSpace(out), "exited ")
	n.c.t.Logf("supervisor: broker %d exited (status %s), started again; its last lines:\n%s", n.ID, status, why)
	n.c.mu.Lock()
	f := n.c.onRestart
	n.c.mu.Unlock()
	if f != nil {
		f(n.ID, status, why)
	}
}

// exitLogLines is how many of an exited broker's last log lines the
// supervisor reports.
const exitLogLines = 8

// OnRestart sets a function the supervisor calls after each restart of a
// broker that exited on its own, with the broker's id, exit status and
// last log lines.
func (c *Cluster) OnRestart(f func(id int32, exitStatus, lastLines string)) {
	c.mu.Lock()
	c.onRestart = f
	c.mu.Unlock()
}

// Restarts is how often the supervisor started the broker again after it
// exited on its own.
func (n *Node) Restarts() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.restarts
}

// createNetwork creates the cluster's network on a random private /24 (a
// fixed subnet lets containers keep their addresses across reconnects,
// and etcd's peer URLs must be IP addresses) and returns the subnet's
// first three octets.
func (c *Cluster) createNetwork() string {
	var lastErr error
	for range 20 {
		prefix := fmt.Sprintf("10.%d.%d", 200+randInt(50), randInt(256))
		_, err := docker("network", "create", "--driver", "bridge",
			"--subnet", prefix+".0/24", "--label", Label+"="+c.Network, c.Network)
		if err == nil {
			return prefix
		}
		lastErr = err
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	c.t.Fatalf("create docker network: %v", lastErr)
	return ""
}

// cleanup logs the brokers' logs if the test failed, then removes the
// containers (with their data volumes) and the network.
func (c *Cluster) cleanup() {
	if c.stopSupervisor != nil {
		close(c.stopSupervisor)
		<-c.supervisorDone
	}
	c.mu.Lock()
	clients := c.clients
	c.clients = nil
	c.mu.Unlock()
	for _, cl := range clients {
		cl.Close()
	}
	if c.t.Failed() {
		for _, n := range c.Nodes {
			c.t.Logf("---- logs of broker %d (%s), last 150 lines ----\n%s", n.ID, n.Name, n.Logs(150))
		}
	}
	for _, n := range c.Nodes {
		n.mu.Lock()
		paused := n.paused
		n.mu.Unlock()
		if paused {
			docker("unpause", n.Name)
		}
		if _, err := docker("rm", "-f", "-v", n.Name); err != nil && !strings.Contains(err.Error(), "No such container") {
			c.t.Errorf("remove container %s: %v", n.Name, err)
		}
	}
	if _, err := docker("network", "rm", c.Network); err != nil {
		c.t.Errorf("remove network %s: %v", c.Network, err)
	}
}

// Node returns the broker with node id id.
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	if id < 1 || int(id) > len(c.Nodes) {
		c.t.Fatalf("no broker %d in a cluster of %d", id, len(c.Nodes))
	}
	return c.Nodes[id-1]
}

// Seeds lists every broker's address.
func (c *Cluster) Seeds() []string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.Addr())
	}
	return s
}

// Client returns a new franz-go client seeded with every broker, with
// timeouts short enough to notice a dead broker quickly; it is closed when
// the test ends. opts come last and so win.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(c.Seeds()...),
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(append(base, c.clientOpts...), opts...)...)
	if err != nil {
		c.t.Fatalf("new client: %v", err)
	}
	c.mu.Lock()
	c.clients = append(c.clients, cl)
	c.mu.Unlock()
	return cl
}

// Admin returns an admin client seeded with every broker.
func (c *Cluster) Admin() *kadm.Client { return kadm.NewClient(c.Client()) }

// WaitFor polls cond until it returns nil, failing the test with cond's
// last error after timeout.
func (c *Cluster) WaitFor(timeout time.Duration, cond func() error) {
	c.t.Helper()
	samsatest.WaitFor(c.t, timeout, cond)
}

// CreateTopic creates a topic and waits until every broker's metadata shows
// each partition with a leader and its full replica set in the ISR.
func (c *Cluster) CreateTopic(name string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Admin().CreateTopic(ctx, partitions, rf, configs, name)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", name, err)
	}
	c.WaitFor(30*time.Second, func() error { return c.fullISRs(name) })
}

// PartitionState is one partition as a broker's metadata shows it.
type PartitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
}

// Partition asks broker n for the state of topic's partition p.
func (n *Node) Partition(topic string, p int32) (PartitionState, error) {
	md, err := n.metadata(topic)
	if err != nil {
		return PartitionState{}, err
	}
	for _, tp := range md.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		if tp.ErrorCode != 0 {
			return PartitionState{}, fmt.Errorf("broker %d: topic %s: error code %d", n.ID, topic, tp.ErrorCode)
		}
		for _, pp := range tp.Partitions {
			if pp.Partition == p {
				return PartitionState{Leader: pp.Leader, LeaderEpoch: pp.LeaderEpoch, Replicas: pp.Replicas, ISR: pp.ISR}, nil
			}
		}
	}
	return PartitionState{}, fmt.Errorf("broker %d: no partition %s/%d in metadata", n.ID, topic, p)
}

// fullISRs checks that every broker sees every partition of topic led and
// with its full replica set in the ISR (Node.fullISR).
func (c *Cluster) fullISRs(topic string) error {
	for _, n := range c.Nodes {
		if err := n.fullISR(topic); err != nil {
			return err
		}
	}
	return nil
}

// fullISR checks, with one Metadata request, that broker n sees every
// partition of topic led and with its full replica set in the ISR.
func (n *Node) fullISR(topic string) error {
	md, err := n.metadata(topic)
	if err != nil {
		return err
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return fmt.Errorf("broker %d: topic %s: %v", n.ID, topic, kerr.ErrorForCode(t.ErrorCode))
		}
		if len(t.Partitions) == 0 {
			return fmt.Errorf("broker %d: topic %s has no partitions", n.ID, topic)
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				return fmt.Errorf("broker %d: %s/%d: leader %d, replicas %v, isr %v", n.ID, topic, p.Partition, p.Leader, p.Replicas, p.ISR)
			}
		}
		return nil
	}
	return fmt.Errorf("broker %d: no topic %s in metadata", n.ID, topic)
}

// ready checks that broker n sees want brokers registered and a controller.
func (n *Node) ready(want int) error {
	md, err := n.metadata()
	if err != nil {
		return err
	}
	if len(md.Brokers) != want || md.ControllerID < 0 {
		return fmt.Errorf("broker %d: %d brokers registered (want %d), controller %d", n.ID, len(md.Brokers), want, md.ControllerID)
	}
	return nil
}

// metadata sends a Metadata request to this broker alone (no topics: none).
func (n *Node) metadata(topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.Addr()), kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(2 * time.Second), kgo.RequestRetries(0)}, n.c.clientOpts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("broker %d: metadata: %w", n.ID, err)
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// Kill sends SIGKILL to the broker (kill -9) and waits until it is dead.
// It stays down until Start.
func (n *Node) Kill() {
	n.c.t.Helper()
	n.do(func() { n.down = true }, "kill", "-s", "KILL", n.Name)
	n.waitRunning(false)
}

// Signal sends a signal (e.g. "STOP", "CONT", "TERM") to the broker
// process. A broker that exits on it is restarted by the supervisor; use
// Kill or Stop to keep it down.
func (n *Node) Signal(sig string) {
	n.c.t.Helper()
	n.do(nil, "kill", "-s", sig, n.Name)
}

// Stop sends SIGTERM and waits for a clean shutdown (SIGKILL after 30 s).
// It stays down until Start.
func (n *Node) Stop() {
	n.c.t.Helper()
	n.do(func() { n.down = true }, "stop", "-t", "30", n.Name)
}

// Start starts a stopped or killed broker again, on its data.
func (n *Node) Start() {
	n.c.t.Helper()
	n.do(func() { n.down = false }, "start", n.Name)
	n.waitRunning(true)
	n.reapplyCuts()
}

// Restart stops the broker cleanly (SIGTERM) and starts it again.
func (n *Node) Restart() {
	n.c.t.Helper()
	n.do(func() { n.down = false }, "restart", "-t", "30", n.Name)
	n.reapplyCuts()
}

// reapplyCuts applies the node's cuts in a newly started container.
func (n *Node) reapplyCuts() {
	n.c.t.Helper()
	n.mu.Lock()
	err := n.applyCutsLocked()
	n.mu.Unlock()
	if err != nil {
		n.c.t.Fatalf("broker %d: %v", n.ID, err)
	}
}

// Pause freezes every process of the container (the freezer cgroup).
func (n *Node) Pause() { n.c.t.Helper(); n.do(func() { n.paused = true }, "pause", n.Name) }

// Unpause thaws a paused container.
func (n *Node) Unpause() { n.c.t.Helper(); n.do(func() { n.paused = false }, "unpause", n.Name) }

// Disconnect removes the container from the cluster network: it can reach
// no other broker, no etcd peer and no client, and none can reach it.
func (n *Node) Disconnect() {
	n.c.t.Helper()
	n.do(func() { n.disconnected = true }, "network", "disconnect", n.c.Network, n.Name)
}

// Connect puts a disconnected container back on the network, at its
// address.
func (n *Node) Connect() {
	n.c.t.Helper()
	n.do(func() { n.disconnected = false }, "network", "connect", "--ip", n.IP, n.c.Network, n.Name)
}

// do runs a docker command on the broker under its lock (so that the
// supervisor sees the state and the container agree), updating the state
// first, and fails the test if the command fails.
func (n *Node) do(state func(), args ...string) {
	n.c.t.Helper()
	n.mu.Lock()
	if state != nil {
		state()
	}
	_, err := docker(args...)
	n.mu.Unlock()
	if err != nil {
		n.c.t.Fatalf("broker %d: %v", n.ID, err)
	}
}

// Logs returns the last lines of the broker's output (all with lines <= 0).
func (n *Node) Logs(lines int) string {
	tail := "all"
	if lines > 0 {
		tail = strconv.Itoa(lines)
	}
	out, err := docker("logs", "--tail", tail, n.Name)
	if err != nil {
		return fmt.Sprintf("(docker logs: %v)", err)
	}
	return out
}

func (n *Node) waitRunning(want bool) {
	n.c.t.Helper()
	n.c.WaitFor(30*time.Second, func() error {
		out, err := docker("inspect", "-f", "{{.State.Running}}", n.Name)
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(out) == "true"; got != want {
			return fmt.Errorf("broker %d: running %v, want %v", n.ID, got, want)
		}
		return nil
	})
}

// docker runs the docker CLI and returns its combined output.
func docker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

var (
	imageOnce sync.Once
	imageTag  string
	imageErr  error
)

// Image returns the tag of a samsa image built from this checkout: a static
// binary (CGO_ENABLED=0) built with the go command, in an image FROM
// scratch built with deploy/Dockerfile. The tag is samsa:test-<hash of
// binary and Dockerfile>, so an unchanged tree reuses the image of an
// earlier run. It fails the test, with what to do, if Docker is missing.
func Image(t testing.TB) string {
	t.Helper()
	imageOnce.Do(func() { imageTag, imageErr = buildImage() })
	if imageErr != nil {
		t.Fatalf("samsa docker image: %v", imageErr)
	}
	return imageTag
}

func buildImage() (string, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return "", fmt.Errorf("these tests need Docker (a docker CLI on PATH and a running daemon); they do not skip without it: %w", err)
	}
	if _, err := docker("version", "--format", "{{.Server.Version}}"); err != nil {
		return "", fmt.Errorf("these tests need a running Docker daemon (they do not skip without it): %w", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "samsa-docker-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "samsa")
	build := exec.Command(goCmd, "build", "-o", bin, "./cmd/samsa")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build static samsa: %v: %s", err, out)
	}
	dockerfile := filepath.Join(root, "deploy", "Dockerfile")
	h := sha256.New()
	for _, f := range []string{bin, dockerfile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	tag := "samsa:test-" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := docker("image", "inspect", tag); err == nil {
		return tag, nil
	}
	if _, err := docker("build", "-q", "-t", tag, "-f", dockerfile, dir); err != nil {
		return "", err
	}
	return tag, nil
}

// moduleRoot is the directory of the samsa module's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/samsa-io/samsa\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("samsa's go.mod not found above the working directory")
		}
		dir = parent
	}
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// sanitize turns a test name into part of a Docker object name.
func sanitize(s string) string {
	s = strings.ToLower(unsafeChars.ReplaceAllString(s, "-"))
	if len(s) > 30 {
		s = s[:30]
	}
	return strings.Trim(s, "-.")
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randInt(n int64) int {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		panic(err)
	}
	return int(v.Int64())
}
