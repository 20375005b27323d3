package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/group"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

// Config is one broker's configuration. Settings carry Kafka's names (in
// server.properties form, see Set) and, where samsa does not deliberately
// differ, Kafka's defaults. The differences are documented in docs/config.md.
type Config struct {
	// NodeID is node.id (broker.id): unique per broker in the cluster.
	NodeID int32
	// Listeners is listeners: the named listeners the Kafka protocol
	// server binds, e.g. "PLAINTEXT://:9092,CLIENT://:9093"
	// (listeners.go).
	Listeners []string
	// AdvertisedListeners is advertised.listeners: what Metadata tells
	// the clients of each listener; a listener without an entry
	// advertises its bound address, an empty host as "localhost".
	AdvertisedListeners []string
	// ListenerSecurityProtocolMap is listener.security.protocol.map, by
	// upper-case listener name; nil is Kafka's default (each protocol's
	// name mapped to itself).
	ListenerSecurityProtocolMap map[string]string
	// InterBrokerListenerName is inter.broker.listener.name and
	// SecurityInterBrokerProtocol security.inter.broker.protocol (at most
	// one is set): the listener other brokers connect to.
	InterBrokerListenerName     string
	SecurityInterBrokerProtocol string
	// Security holds the TLS and SASL settings by their Kafka names
	// (ssl.*, sasl.*, connections.max.reauth.ms, ...), and their
	// per-listener forms listener.name.<listener>.<setting> with the
	// listener name lower case (security.go).
	Security map[string]string
	// InitialScram are the credentials of samsa server --add-scram, put
	// in etcd at start when absent (no setting names them).
	InitialScram []InitialScram
	// Rack is broker.rack.
	Rack string
	// DataDir is log.dirs (a single directory): partition logs live in
	// <DataDir>/<topic>-<partition>, the embedded etcd in <DataDir>/etcd.
	DataDir string

	// MetadataEndpoints lists an external etcd cluster's client URLs
	// (metadata.etcd.endpoints). Empty: run an embedded etcd member.
	MetadataEndpoints []string
	// MetadataClientURL and MetadataPeerURL are the embedded member's URLs;
	// MetadataPeerListenURL (metadata.etcd.peer.listen.url), if set, is
	// what it binds for its peers instead of MetadataPeerURL, which it
	// then only advertises (coord.EmbeddedConfig.PeerListenURL).
	MetadataClientURL     string
	MetadataPeerURL       string
	MetadataPeerListenURL string
	// MetadataInitialCluster is the embedded etcd's initial cluster
	// ("name=peerURL,..."); empty for a single member.
	MetadataInitialCluster string
	// MetadataTLSKeystore is metadata.etcd.ssl.keystore.location: a PEM
	// file with a private key and its certificate chain, the embedded
	// member's certificate (client and peer URLs) and the client
	// certificate samsa presents to etcd. MetadataTLSTruststore is
	// metadata.etcd.ssl.truststore.location: PEM CA certificates that
	// verify etcd's certificate and, on an embedded member, the
	// certificates of its clients and peers. Both set exactly when the etcd
	// URLs in use are https:// (etcd_tls.go).
	MetadataTLSKeystore   string
	MetadataTLSTruststore string
	// MetadataTLSSkipHostnameCheck is
	// metadata.etcd.ssl.endpoint.identification.algorithm set to "": etcd's
	// certificate is verified without checking that it names the host.
	MetadataTLSSkipHostnameCheck bool
	// Authorizer is authorizer.class.name: empty for none (every
	// principal may do anything), else ACL authorization (acl.go). Kafka's
	// class names select it: StandardAuthorizer and AclAuthorizer.
	Authorizer string
	// SuperUsers is super.users: principals ("User:admin") allowed
	// everything.
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
	// ClusterName selects the etcd key prefix /samsa/<ClusterName>/.
	ClusterName string
	// SessionTimeout is broker.session.timeout.ms: the TTL of the broker's
	// etcd lease, and how long without a heartbeat before the other
	// brokers fence it (coord's "Liveness"). 2 s (Kafka KRaft's is 9 s):
	// failover in about as long (docs/replication.md, "Failover
	// timeline").
	SessionTimeout time.Duration

	// AutoCreateTopics is auto.create.topics.enable.
	AutoCreateTopics bool
	// NumPartitions is num.partitions, for auto-created topics and
	// CreateTopics requests that leave it to the broker.
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor.
	DefaultReplicationFactor int16

	// SocketRequestMaxBytes is socket.request.max.bytes.
	SocketRequestMaxBytes int32
	// ConnectionsMaxIdle is connections.max.idle.ms.
	ConnectionsMaxIdle time.Duration
	// MaxConnections is max.connections (0 or math.MaxInt32, Kafka's
	// default, = unlimited).
	MaxConnections int

	// The memory budget of the request path (issue 16; docs/config.md).
	//
	// FetchMaxBytes is fetch.max.bytes: a consumer's fetch returns at most
	// this many record bytes, whatever its MaxBytes, and no partition more
	// (but for the first batch, KIP-74). ReplicaFetchResponseMaxBytes is
	// replica.fetch.response.max.bytes, the same for a follower's fetch.
	FetchMaxBytes                int32
	ReplicaFetchResponseMaxBytes int32
	// QueuedMaxRequestBytes is queued.max.request.bytes: the server-wide
	// budget of request frames, fetch responses and produce decompression
	// in memory (-1 = unlimited).
	QueuedMaxRequestBytes int64
	// QueuedMaxConnectionBytes is queued.max.connection.bytes: a
	// connection's requests stop being read while its unanswered requests
	// and their responses hold this many bytes (-1 = unlimited).
	QueuedMaxConnectionBytes int64
	// MaxConnectionsPerIP is max.connections.per.ip (math.MaxInt32 =
	// unlimited; 0 = none but the overrides) and
	// MaxConnectionsPerIPOverrides max.connections.per.ip.overrides, by IP
	// address (host names are resolved when set).
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[string]int

	// TopicDefaults holds the broker-level defaults of topic configs
	// (message.max.bytes, log.retention.ms, log.segment.bytes, ...), keyed by
	// the topic config name they default.
	TopicDefaults map[string]string

	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower not caught up
	// for this long leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// ReplicaFetchMaxBytes and ReplicaFetchWaitMax are
	// replica.fetch.max.bytes and replica.fetch.wait.max.ms: the size of a
	// follower's fetch per partition and how long the leader may park it.
	ReplicaFetchMaxBytes int32
	ReplicaFetchWaitMax  time.Duration
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms.
	HighWatermarkCheckpointInterval time.Duration

	// AutoLeaderRebalance, LeaderImbalanceCheckInterval and
	// LeaderImbalancePercent are auto.leader.rebalance.enable,
	// leader.imbalance.check.interval.seconds and
	// leader.imbalance.per.broker.percentage.
	AutoLeaderRebalance          bool
	LeaderImbalanceCheckInterval time.Duration
	LeaderImbalancePercent       int

	// Groups configures the group coordinator: offsets.topic.num.partitions,
	// group.min/max.session.timeout.ms, group.initial.rebalance.delay.ms,
	// offsets.retention.minutes, offset.metadata.max.bytes and
	// offsets.commit.timeout.ms.
	Groups group.Config
	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor:
	// __consumer_offsets gets min(it, live brokers) replicas.
	OffsetsTopicReplicationFactor int16

	// Txns configures the transaction coordinator:
	// transaction.state.log.num.partitions, transaction.max.timeout.ms,
	// transactional.id.expiration.ms and the two cleanup intervals.
	Txns txn.Config
	// TxnStateReplicationFactor and TxnStateMinISR are
	// transaction.state.log.replication.factor and .min.isr:
	// __transaction_state gets min(RF, live brokers) replicas and
	// min.insync.replicas min(min ISR, its RF), so that a single broker
	// serves transactions out of the box.
	TxnStateReplicationFactor int16
	TxnStateMinISR            int16
	// TxnVerification is transaction.partition.verification.enable: a
	// partition leader verifies with the coordinator that a transaction
	// includes the partition before its first transactional batch opens
	// it there (KIP-890). Off, a late or rogue batch can leave a hanging
	// transaction (for tests of the tools that find and abort them).
	TxnVerification bool
	// TransactionVersion is the transaction.version feature level the
	// brokers finalize (Kafka sets it with kafka-features.sh): 2 tells
	// clients to use transactions v2 (KIP-890 part 2), 0 or 1 keeps them
	// on v1. Every broker of a cluster should have the same.
	TransactionVersion int16

	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// CleanerBackoff is log.cleaner.backoff.ms: the least time between two
	// compactions of a compacted topic's partition.
	CleanerBackoff time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms.
	ProducerIDExpiration time.Duration

	// Logger receives the broker's structured logs.
	Logger *slog.Logger
	// Observer is told of requests, appends, fetches, ISR changes and
	// flushes, for metrics (observe.go); nil observes nothing. No setting
	// names it: samsa server wires internal/metrics.
	Observer Observer
	// Current, if set, holds the incarnation Run serves with (nil between
	// incarnations), for read-only views: metrics, health, the console.
	Current *Current
	// MetricsListener is metrics.listener: the URL (http://HOST:PORT) of
	// the HTTP listener of /metrics, /healthz, /readyz and the console;
	// "" for none. DefaultConfig has none; samsa server defaults it to
	// DefaultMetricsListener. The broker advertises it in its
	// registration (meta.Broker.MetricsURL); samsa server serves it.
	MetricsListener string

	// LogFS is for tests only: the file system the partition logs do
	// their I/O through (nil: the operating system's), so a test can wrap
	// it to inject write and fsync errors. No setting names it.
	LogFS klog.FS
}

// DefaultConfig returns the configuration of a ready single-node cluster:
// node 1, PLAINTEXT on localhost:9092, embedded etcd, data in ./samsa-data.
func DefaultConfig() Config {
	return Config{
		NodeID:                          1,
		Listeners:                       []string{"PLAINTEXT://localhost:9092"},
		DataDir:                         "samsa-data",
		MetadataClientURL:               "http://127.0.0.1:2379",
		MetadataPeerURL:                 "http://127.0.0.1:2380",
		ClusterName:                     "default",
		SessionTimeout:                  2 * time.Second,
		AutoCreateTopics:                true,
		NumPartitions:                   1,
		DefaultReplicationFactor:        1,
		SocketRequestMaxBytes:           104857600,
		ConnectionsMaxIdle:              10 * time.Minute,
		MaxConnections:                  math.MaxInt32,
		FetchMaxBytes:                   57671680,
		ReplicaFetchResponseMaxBytes:    10485760,
		QueuedMaxRequestBytes:           128 << 20,
		QueuedMaxConnectionBytes:        16 << 20,
		MaxConnectionsPerIP:             math.MaxInt32,
		TopicDefaults:                   map[string]string{},
		RetentionCheckInterval:          5 * time.Minute,
		CleanerBackoff:                  15 * time.Second,
		ReplicaLagTimeMax:               30 * time.Second,
		AutoLeaderRebalance:             true,
		LeaderImbalanceCheckInterval:    300 * time.Second,
		LeaderImbalancePercent:          10,
		ReplicaFetchMaxBytes:            1048576,
		ReplicaFetchWaitMax:             500 * time.Millisecond,
		HighWatermarkCheckpointInterval: 5 * time.Second,
		ProducerIDExpiration:            24 * time.Hour,
		Groups:                          group.DefaultConfig(),
		OffsetsTopicReplicationFactor:   3,
		Txns:                            txn.DefaultConfig(),
		TxnStateReplicationFactor:       3,
		TxnStateMinISR:                  2,
		TxnVerification:                 true,
		TransactionVersion:              2,
	}
}

// brokerTopicAliases are broker settings that default a topic config in
// other units or under an older name; the rest are the topic config
// definitions' broker names (topicConfigDef.broker).
var brokerTopicAliases = map[string]string{
	"log.retention.hours":                     "retention.ms", // scaled in Set
	"log.retention.minutes":                   "retention.ms", // scaled in Set
	"log.roll.hours":                          "segment.ms",   // scaled in Set
	"log.message.timestamp.difference.max.ms": "message.timestamp.before.max.ms",
}

// topicConfigForBrokerSetting returns the topic config that a broker setting
// defaults, as Kafka's "log."-prefixed settings do.
func topicConfigForBrokerSetting(key string) (string, bool) {
	if t, ok := brokerTopicAliases[key]; ok {
		return t, true
	}
	for _, d := range topicConfigDefs {
		if d.broker == key {
			return d.name, true
		}
	}
	return "", false
}

// ErrConfig reports an invalid broker setting.
var ErrConfig = errors.New("broker: invalid config")

// Set applies one server.properties setting by its Kafka name.
func (c *Config) Set(key, value string) error {
	value = strings.TrimSpace(value)
	bad := func(err error) error { return fmt.Errorf("%w: %s=%q: %v", ErrConfig, key, shownValue(key, value), err) }
	parseInt := func(bits int) (int64, error) { return strconv.ParseInt(value, 10, bits) }
	parseMs := func() (time.Duration, error) {
		n, err := parseInt(64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("want a non-negative number of milliseconds")
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	switch key {
	case "node.id", "broker.id":
		n, err := parseInt(32)
		if err != nil || n < 0 {
			return bad(fmt.Errorf("want a non-negative integer"))
		}
		c.NodeID = int32(n)
	case "listeners":
		c.Listeners = splitList(value)
	case "advertised.listeners":
		c.AdvertisedListeners = splitList(value)
	case "listener.security.protocol.map":
		m, err := parseSecurityProtocolMap(value)
		if err != nil {
			return bad(err)
		}
		c.ListenerSecurityProtocolMap = m
	case "inter.broker.listener.name":
		c.InterBrokerListenerName = value
	case "security.inter.broker.protocol":
		if _, ok := defaultSecurityProtocolMap[strings.ToUpper(value)]; !ok {
			return bad(fmt.Errorf("want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"))
		}
		c.SecurityInterBrokerProtocol = value
	case "authorizer.class.name":
		if value != "" && !slices.Contains(authorizerClasses, value) {
			return bad(fmt.Errorf("samsa's ACL authorizer answers to %s; other classes cannot be loaded", strings.Join(authorizerClasses, " or ")))
		}
		c.Authorizer = value
	case "super.users":
		var users []string
		for _, u := range strings.Split(value, ";") {
			if u = strings.TrimSpace(u); u == "" {
				continue
			}
			if typ, name, ok := strings.Cut(u, ":"); !ok || typ == "" || name == "" {
				return bad(fmt.Errorf("principal %q: want Type:name, as in User:admin, separated by ';'", u))
			}
			users = append(users, u)
		}
		c.SuperUsers = users
	case "allow.everyone.if.no.acl.found":
		v, err := strconv.ParseBool(value)
		if err != nil {
			return bad(fmt.Errorf("want true or false"))
		}
		c.AllowEveryoneIfNoACL = v
	case "metrics.listener":
		if value != "" {
			u, err := url.Parse(value)
			if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" && u.Path != "/" {
				return bad(fmt.Errorf("want http://HOST:PORT, or empty for none"))
			}
		}
		c.MetricsListener = value
	case "broker.rack":
		c.Rack = value
	case "log.dirs", "log.dir":
		dirs := splitList(value)
		if len(dirs) != 1 {
			return bad(fmt.Errorf("samsa supports exactly one log directory"))
		}
		c.DataDir = dirs[0]
	case "metadata.etcd.endpoints":
		c.MetadataEndpoints = splitList(value)
	case "metadata.etcd.client.url":
		c.MetadataClientURL = value
	case "metadata.etcd.peer.url":
		c.MetadataPeerURL = value
	case "metadata.etcd.peer.listen.url":
		c.MetadataPeerListenURL = value
	case "metadata.etcd.initial.cluster":
		c.MetadataInitialCluster = value
	case "metadata.etcd.ssl.keystore.location":
		c.MetadataTLSKeystore = value
	case "metadata.etcd.ssl.truststore.location":
		c.MetadataTLSTruststore = value
	case "metadata.etcd.ssl.endpoint.identification.algorithm":
		switch strings.ToLower(value) {
		case "https":
			c.MetadataTLSSkipHostnameCheck = false
		case "":
			c.MetadataTLSSkipHostnameCheck = true
		default:
			return bad(fmt.Errorf("want https or empty"))
		}
	case "cluster.name":
		if value == "" || strings.ContainsAny(value, "/ ") {
			return bad(fmt.Errorf("want a name without '/' or spaces"))
		}
		c.ClusterName = value
	case "broker.session.timeout.ms":
		d, err := parseMs()
		if err != nil || d < time.Second {
			return bad(fmt.Errorf("want at least 1000"))
		}
		c.SessionTimeout = d
	case "auto.create.topics.enable":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return bad(err)
		}
		c.AutoCreateTopics = b
	case "num.partitions":
		n, err := parseInt(32)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.NumPartitions = int32(n)
	case "default.replication.factor":
		n, err := parseInt(16)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.DefaultReplicationFactor = int16(n)
	case "socket.request.max.bytes":
		n, err := parseInt(32)
		if err != nil || n < 1024 {
			return bad(fmt.Errorf("want an integer of at least 1024"))
		}
		c.SocketRequestMaxBytes = int32(n)
	case "connections.max.idle.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.ConnectionsMaxIdle = d
	case "max.connections":
		n, err := parseInt(32)
		if err != nil || n < 0 {
			return bad(fmt.Errorf("want a non-negative integer"))
		}
		c.MaxConnections = int(n)
	case "fetch.max.bytes", "replica.fetch.response.max.bytes":
		n, err := parseInt(32)
		if err != nil || n < 1024 {
			return bad(fmt.Errorf("want an integer of at least 1024"))
		}
		if key == "fetch.max.bytes" {
			c.FetchMaxBytes = int32(n)
		} else {
			c.ReplicaFetchResponseMaxBytes = int32(n)
		}
	case "queued.max.request.bytes", "queued.max.connection.bytes":
		n, err := parseInt(64)
		if err != nil || n != -1 && n < 1<<20 {
			return bad(fmt.Errorf("want -1 (unlimited) or at least 1048576"))
		}
		if key == "queued.max.request.bytes" {
			c.QueuedMaxRequestBytes = n
		} else {
			c.QueuedMaxConnectionBytes = n
		}
	case "max.connections.per.ip":
		n, err := parseInt(32)
		if err != nil || n < 0 {
			return bad(fmt.Errorf("want a non-negative integer"))
		}
		c.MaxConnectionsPerIP = int(n)
	case "max.connections.per.ip.overrides":
		m, err := parseConnectionOverrides(value)
		if err != nil {
			return bad(err)
		}
		c.MaxConnectionsPerIPOverrides = m
	case "auto.leader.rebalance.enable":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return bad(err)
		}
		c.AutoLeaderRebalance = b
	case "leader.imbalance.check.interval.seconds":
		n, err := parseInt(32)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive number of seconds"))
		}
		c.LeaderImbalanceCheckInterval = time.Duration(n) * time.Second
	case "leader.imbalance.per.broker.percentage":
		n, err := parseInt(32)
		if err != nil || n < 0 || n > 100 {
			return bad(fmt.Errorf("want a percentage from 0 to 100"))
		}
		c.LeaderImbalancePercent = int(n)
	case "log.cleaner.backoff.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.CleanerBackoff = d
	case "offsets.topic.num.partitions":
		n, err := parseInt(32)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.Groups.Partitions = int32(n)
	case "offsets.topic.replication.factor":
		n, err := parseInt(16)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.OffsetsTopicReplicationFactor = int16(n)
	case "transaction.state.log.num.partitions":
		n, err := parseInt(32)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.Txns.Partitions = int32(n)
	case "transaction.state.log.replication.factor":
		n, err := parseInt(16)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.TxnStateReplicationFactor = int16(n)
	case "transaction.state.log.min.isr":
		n, err := parseInt(16)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive integer"))
		}
		c.TxnStateMinISR = int16(n)
	case "transaction.version":
		n, err := parseInt(16)
		if err != nil || n < 0 || n > 2 {
			return bad(fmt.Errorf("want 0, 1 or 2"))
		}
		c.TransactionVersion = int16(n)
	case "transaction.partition.verification.enable":
		v, err := strconv.ParseBool(value)
		if err != nil {
			return bad(fmt.Errorf("want true or false"))
		}
		c.TxnVerification = v
	case "transaction.max.timeout.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.Txns.MaxTimeout = d
	case "transactional.id.expiration.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.Txns.IDExpiration = d
	case "transaction.abort.timed.out.transaction.cleanup.interval.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.Txns.AbortInterval = d
	case "transaction.remove.expired.transaction.cleanup.interval.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.Txns.RemoveInterval = d
	case "group.min.session.timeout.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.Groups.MinSessionTimeout = d
	case "group.max.session.timeout.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.Groups.MaxSessionTimeout = d
	case "group.initial.rebalance.delay.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.Groups.InitialRebalanceDelay = d
	case "offsets.retention.minutes":
		n, err := parseInt(32)
		if err != nil || n < 1 {
			return bad(fmt.Errorf("want a positive number of minutes"))
		}
		c.Groups.OffsetsRetention = time.Duration(n) * time.Minute
	case "offset.metadata.max.bytes":
		n, err := parseInt(32)
		if err != nil || n < 0 {
			return bad(fmt.Errorf("want a non-negative integer"))
		}
		c.Groups.MaxMetadataBytes = int(n)
	case "offsets.commit.timeout.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.Groups.CommitTimeout = d
	case "replica.lag.time.max.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.ReplicaLagTimeMax = d
	case "replica.fetch.max.bytes":
		n, err := parseInt(32)
		if err != nil || n < 1024 {
			return bad(fmt.Errorf("want an integer of at least 1024"))
		}
		c.ReplicaFetchMaxBytes = int32(n)
	case "replica.fetch.wait.max.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.ReplicaFetchWaitMax = d
	case "replica.high.watermark.checkpoint.interval.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.HighWatermarkCheckpointInterval = d
	case "log.retention.check.interval.ms":
		d, err := parseMs()
		if err != nil || d == 0 {
			return bad(fmt.Errorf("want a positive number of milliseconds"))
		}
		c.RetentionCheckInterval = d
	case "producer.id.expiration.ms":
		d, err := parseMs()
		if err != nil {
			return bad(err)
		}
		c.ProducerIDExpiration = d
	default:
		if norm, ok, err := securitySetting(key, value); ok {
			if err != nil {
				return bad(err)
			}
			if c.Security == nil {
				c.Security = map[string]string{}
			}
			c.Security[norm] = value
			return nil
		}
		topicKey, ok := topicConfigForBrokerSetting(key)
		if !ok {
			return fmt.Errorf("%w: unknown setting %q", ErrConfig, key)
		}
		scale := int64(1)
		switch key {
		case "log.retention.hours", "log.roll.hours":
			scale = int64(time.Hour / time.Millisecond)
		case "log.retention.minutes":
			scale = int64(time.Minute / time.Millisecond)
		}
		if scale != 1 {
			n, err := parseInt(64)
			if err != nil {
				return bad(err)
			}
			if n > 0 && n > math.MaxInt64/scale {
				return bad(fmt.Errorf("too large"))
			}
			value = strconv.FormatInt(n*scale, 10)
		}
		if err := validateTopicConfig(topicKey, value); err != nil {
			return bad(err)
		}
		if c.TopicDefaults == nil {
			c.TopicDefaults = map[string]string{}
		}
		c.TopicDefaults[topicKey] = value
	}
	return nil
}

// LoadProperties applies a server.properties-style file (ReadProperties).
func (c *Config) LoadProperties(r io.Reader) error {
	props, err := ReadProperties(r)
	if err != nil {
		return err
	}
	for _, p := range props {
		if err := c.Set(p.Key, p.Value); err != nil {
			return fmt.Errorf("line %d: %w", p.Line, err)
		}
	}
	return nil
}

// Property is one key=value of a properties file; Line is where it starts.
type Property struct {
	Key, Value string
	Line       int
}

// ReadProperties reads a Java properties file as Kafka's tools do:
// key=value (or key: value) lines, '#' and '!' comments, blank lines
// ignored, and a line ending in a backslash continued on the next (so a
// sasl.jaas.config can span lines), the next line's leading blanks
// dropped.
func ReadProperties(r io.Reader) ([]Property, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []Property
	line := 0
	for sc.Scan() {
		line++
		start := line
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || s[0] == '!' {
			continue
		}
		for continued(s) && sc.Scan() {
			line++
			s = s[:len(s)-1] + strings.TrimSpace(sc.Text())
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			k, v, ok = strings.Cut(s, ":")
		}
		if !ok {
			return nil, fmt.Errorf("%w: line %d: want key=value", ErrConfig, start)
		}
		out = append(out, Property{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v), Line: start})
	}
	return out, sc.Err()
}

// continued reports a line that ends in an odd number of backslashes.
func continued(s string) bool {
	n := len(s) - len(strings.TrimRight(s, "\\"))
	return n%2 == 1
}

// LoadPropertiesFile applies the settings in the named file.
func (c *Config) LoadPropertiesFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.LoadProperties(f)
}

// parseConnectionOverrides parses max.connections.per.ip.overrides:
// "host:count,..." where host is an IP address or a name, resolved now to
// all its addresses, as Kafka resolves it when the setting is read.
func parseConnectionOverrides(value string) (map[string]int, error) {
	m := map[string]int{}
	for _, e := range splitList(value) {
		i := strings.LastIndex(e, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q: want host:count", e)
		}
		host := strings.Trim(e[:i], "[]")
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want a non-negative count", e)
		}
		if ip := net.ParseIP(host); ip != nil {
			m[ip.String()] = n
			continue
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", e, err)
		}
		for _, ip := range ips {
			m[ip.String()] = n
		}
	}
	return m, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validate checks the settings that Set cannot check one at a time.
func (c *Config) validate() error {
	lc, err := c.resolveListeners()
	if err != nil {
		return err
	}
	if err := c.checkSecurity(lc); err != nil {
		return err
	}
	if c.DataDir == "" {
		return fmt.Errorf("%w: log.dirs is empty", ErrConfig)
	}
	// As Kafka requires: the budget must hold the largest request, or
	// such a request would wait for room the budget never has.
	if c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes) {
		return fmt.Errorf("%w: queued.max.request.bytes (%d) must be at least socket.request.max.bytes (%d), or -1", ErrConfig, c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes)
	}
	if c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0 {
		return fmt.Errorf("%w: max.connections.per.ip can be 0 only with max.connections.per.ip.overrides", ErrConfig)
	}
	for k, v := range c.TopicDefaults {
		if err := validateTopicConfig(k, v); err != nil {
			return fmt.Errorf("%w: default for %s: %v", ErrConfig, k, err)
		}
	}
	return nil
}

func (c *Config) logDir() string  { return filepath.Join(c.DataDir, "logs") }
func (c *Config) etcdDir() string { return filepath.Join(c.DataDir, "etcd") }

// protocolConfig returns the protocol server's settings. Kafka's
// "unlimited" (Int.MaxValue, -1) become the server's: 0 for the
// connection limits, negative for the memory budgets.
func (c *Config) protocolConfig(logger *slog.Logger) protocol.Config {
	unlimited := func(n int) int {
		if n >= math.MaxInt32 || n < 0 {
			return 0
		}
		return n
	}
	perIP := unlimited(c.MaxConnectionsPerIP)
	if c.MaxConnectionsPerIP == 0 {
		perIP = -1 // none but the overrides
	}
	return protocol.Config{
		MaxRequestBytes:              c.SocketRequestMaxBytes,
		Versions:                     apiVersionRange,
		IdleTimeout:                  c.ConnectionsMaxIdle,
		MaxConnections:               unlimited(c.MaxConnections),
		MaxConnectionsPerIP:          perIP,
		MaxConnectionsPerIPOverrides: c.MaxConnectionsPerIPOverrides,
		QueuedMaxBytes:               c.QueuedMaxRequestBytes,
		MaxQueuedBytesPerConnection:  c.QueuedMaxConnectionBytes,
		Logger:                       logger,
		Observer:                     c.Observer,
	}
}
