package broker

// DescribeConfigs (key 32), versions 1–4 (flexible from v4).
//
// Topics (resource type 2): every supported topic config with its effective
// value and source (DYNAMIC_TOPIC_CONFIG for a topic override,
// STATIC_BROKER_CONFIG for a broker default from server.properties,
// DEFAULT_CONFIG otherwise); synonyms (v1+) list the chain; v3+ adds the
// type and, on request, documentation. Brokers (type 4): every setting of
// this broker (docs/config.md), read-only (they are static), with its type
// and, on request, documentation. ConfigNames filters the result. With an
// authorizer, first: a topic needs DESCRIBE_CONFIGS on it (else
// TOPIC_AUTHORIZATION_FAILED), a broker DESCRIBE_CONFIGS on the cluster
// (else CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeConfigs(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	s := b.view()
	az := b.authz(req)
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		wanted := func(name string) bool { return res.ConfigNames == nil || slices.Contains(res.ConfigNames, name) }
		if code := configsAuthorization(az, kmsg.ACLOperationDescribeConfigs, res.ResourceType, res.ResourceName); code != 0 {
			rr.ErrorCode = code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			// Kafka's ConfigHelper.describeConfigs validates the name
			// first (INVALID_TOPIC_EXCEPTION).
			if err := validTopicName(res.ResourceName); err != nil {
				rr.ErrorCode = kerr.InvalidTopicException.Code
				msg := err.Error()
				rr.ErrorMessage = &msg
				break
			}
			vt, ok := s.Topics[res.ResourceName]
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			for _, v := range effectiveTopicConfigs(vt.Topic.Configs, b.cfg.TopicDefaults) {
				if wanted(v.def.name) {
					rr.Configs = append(rr.Configs, b.describeTopicConfig(r, v, vt.Topic.Configs))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				msg := "samsa describes only the configs of the broker that receives the request"
				rr.ErrorMessage = &msg
				break
			}
			for _, bc := range b.brokerConfigs() {
				if !wanted(bc.name) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				value := bc.value
				c.Name, c.Value, c.ReadOnly, c.Source = bc.name, &value, true, kmsg.ConfigSourceStaticBrokerConfig
				c.ConfigType = bc.kind
				if bc.kind == kmsg.ConfigTypePassword {
					// As Kafka: a secret's value is never told.
					c.Value, c.IsSensitive = nil, true
				}
				if r.IncludeDocumentation {
					doc := bc.doc
					c.Documentation = &doc
				}
				rr.Configs = append(rr.Configs, c)
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			msg := "samsa describes topic and broker configs only"
			rr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return reply(resp)
}

func (b *Broker) describeTopicConfig(r *kmsg.DescribeConfigsRequest, v topicConfigValue, overrides map[string]string) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	value := v.value
	c.Name, c.Value = v.def.name, &value
	c.Source = kmsg.ConfigSource(v.source)
	c.IsDefault = v.source == sourceDefault
	c.ReadOnly = v.def.readOnly
	switch v.def.kind {
	case kindLong:
		c.ConfigType = kmsg.ConfigTypeLong
	case kindInt:
		c.ConfigType = kmsg.ConfigTypeInt
	case kindBool:
		c.ConfigType = kmsg.ConfigTypeBoolean
	default:
		c.ConfigType = kmsg.ConfigTypeString
	}
	if r.IncludeDocumentation && v.def.doc != "" {
		doc := v.def.doc
		c.Documentation = &doc
	}
	if r.IncludeSynonyms {
		add := func(name, value string, src configSource) {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			val := value
			syn.Name, syn.Value, syn.Source = name, &val, kmsg.ConfigSource(src)
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		if o, ok := overrides[v.def.name]; ok {
			add(v.def.name, o, sourceTopic)
		}
		if bv, ok := b.cfg.TopicDefaults[v.def.name]; ok && v.def.broker != "" {
			add(v.def.broker, bv, sourceStaticBroker)
		}
		if v.def.broker != "" {
			add(v.def.broker, v.def.def, sourceDefault)
		}
	}
	return c
}

// brokerConfig is one broker setting as DescribeConfigs shows it.
type brokerConfig struct {
	name, value string
	kind        kmsg.ConfigType
	doc         string
}

// brokerConfigs lists this broker's settings (docs/config.md), sorted by
// name, each with its type and documentation as Kafka's DescribeConfigs
// gives them.
func (b *Broker) brokerConfigs() []brokerConfig {
	c := b.cfg
	str := kmsg.ConfigTypeString
	long, integer, boolean := kmsg.ConfigTypeLong, kmsg.ConfigTypeInt, kmsg.ConfigTypeBoolean
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	out := []brokerConfig{
		{"node.id", i64(int64(c.NodeID)), integer, "The id of this broker."},
		{"listeners", strings.Join(c.Listeners, ","), str, "The named listeners the broker listens on (NAME://host:port)."},
		{"advertised.listeners", strings.Join(c.AdvertisedListeners, ","), str, "The addresses the broker gives the clients of each listener in Metadata."},
		{"listener.security.protocol.map", protocolMap(b.lc.protocols), str, "Each listener's security protocol."},
		{"inter.broker.listener.name", b.lc.interBroker, str, "The listener brokers connect to each other on."},
		{"broker.rack", c.Rack, str, "The rack of this broker, used to spread a topic's replicas over racks."},
		{"metrics.listener", c.MetricsListener, str, "The HTTP listener of /metrics, /healthz, /readyz, /v1/partitions and the web console (samsa's own; empty: none)."},
		{"log.dirs", c.DataDir, str, "The directory of the partition logs and of the embedded etcd's data (exactly one)."},
		{"metadata.etcd.endpoints", strings.Join(c.MetadataEndpoints, ","), str, "Client URLs of an external etcd holding the cluster's metadata; empty: an embedded etcd member."},
		{"metadata.etcd.client.url", c.MetadataClientURL, str, "The client URL of the embedded etcd member."},
		{"metadata.etcd.peer.url", c.MetadataPeerURL, str, "The peer URL of the embedded etcd member."},
		{"metadata.etcd.peer.listen.url", c.MetadataPeerListenURL, str, "The address the embedded etcd member binds for its peers, if not its peer URL (which it then only advertises)."},
		{"metadata.etcd.initial.cluster", c.MetadataInitialCluster, str, "The members of a multi-member embedded etcd cluster (samsa-<id>=<peer url>,...)."},
		{"metadata.etcd.ssl.keystore.location", c.MetadataTLSKeystore, str, "The key and certificate chain (PEM) of the embedded etcd member and of the broker as etcd client; with https etcd URLs."},
		{"metadata.etcd.ssl.truststore.location", c.MetadataTLSTruststore, str, "The CA certificates (PEM) that etcd's certificate and, on an embedded member, its clients' and peers' must be issued by."},
		{"metadata.etcd.ssl.endpoint.identification.algorithm", metadataEndpointIdentification(c), str, "https: etcd's certificate must name its host; empty: any name."},
		{"cluster.name", c.ClusterName, str, "The prefix of the cluster's keys in etcd."},
		{"broker.session.timeout.ms", ms(c.SessionTimeout), integer, "How long a broker that stopped renewing its etcd lease stays registered."},
		{"auto.create.topics.enable", strconv.FormatBool(c.AutoCreateTopics), boolean, "Whether Metadata and Produce requests for an unknown topic create it."},
		{"num.partitions", i64(int64(c.NumPartitions)), integer, "The number of partitions of a topic created without a number."},
		{"default.replication.factor", i64(int64(c.DefaultReplicationFactor)), integer, "The replication factor of a topic created without one."},
		{"socket.request.max.bytes", i64(int64(c.SocketRequestMaxBytes)), integer, "The largest request the broker reads."},
		{"connections.max.idle.ms", ms(c.ConnectionsMaxIdle), long, "How long an idle connection stays open."},
		{"max.connections", i64(int64(c.MaxConnections)), integer, "The most connections the broker accepts."},
		{"max.connections.per.ip", i64(int64(c.MaxConnectionsPerIP)), integer, "The most connections the broker accepts from one IP address."},
		{"max.connections.per.ip.overrides", connectionOverrides(c.MaxConnectionsPerIPOverrides), str, "Per-host exceptions to max.connections.per.ip (host:count,...)."},
		{"fetch.max.bytes", i64(int64(c.FetchMaxBytes)), integer, "The most record bytes in a consumer's fetch response."},
		{"replica.fetch.response.max.bytes", i64(int64(c.ReplicaFetchResponseMaxBytes)), integer, "The most record bytes in a follower's fetch response."},
		{"queued.max.request.bytes", i64(c.QueuedMaxRequestBytes), long, "The memory budget of the request path, server-wide; -1: unlimited."},
		{"queued.max.connection.bytes", i64(c.QueuedMaxConnectionBytes), long, "The request and response bytes one connection may hold before it is no longer read from; -1: unlimited."},
		{"auto.leader.rebalance.enable", strconv.FormatBool(c.AutoLeaderRebalance), boolean, "Whether leadership moves back to preferred replicas by itself."},
		{"leader.imbalance.check.interval.seconds", i64(int64(c.LeaderImbalanceCheckInterval / time.Second)), long, "How often the controller checks leader imbalance."},
		{"leader.imbalance.per.broker.percentage", i64(int64(c.LeaderImbalancePercent)), integer, "The share of a broker's partitions led elsewhere that starts a preferred election."},
		{"log.cleaner.backoff.ms", ms(c.CleanerBackoff), long, "The least time between two compactions of a compacted partition."},
		{"log.retention.check.interval.ms", ms(c.RetentionCheckInterval), long, "How often retention is applied."},
		{"producer.id.expiration.ms", ms(c.ProducerIDExpiration), integer, "How long a producer id's state is kept after its last write."},
		{"replica.lag.time.max.ms", ms(c.ReplicaLagTimeMax), long, "How long a follower may stay behind before it leaves the ISR."},
		{"replica.fetch.max.bytes", i64(int64(c.ReplicaFetchMaxBytes)), integer, "The most bytes per partition in a follower's fetch."},
		{"replica.fetch.wait.max.ms", ms(c.ReplicaFetchWaitMax), integer, "How long a leader parks a follower's fetch."},
		{"replica.high.watermark.checkpoint.interval.ms", ms(c.HighWatermarkCheckpointInterval), long, "How often high watermarks are written to disk."},
		{"offsets.topic.num.partitions", i64(int64(c.Groups.Partitions)), integer, "The number of partitions of __consumer_offsets."},
		{"offsets.topic.replication.factor", i64(int64(c.OffsetsTopicReplicationFactor)), integer, "The replication factor of __consumer_offsets (capped at the live brokers)."},
		{"transaction.state.log.num.partitions", i64(int64(c.Txns.Partitions)), integer, "The number of partitions of __transaction_state."},
		{"transaction.state.log.replication.factor", i64(int64(c.TxnStateReplicationFactor)), integer, "The replication factor of __transaction_state (capped at the live brokers)."},
		{"transaction.state.log.min.isr", i64(int64(c.TxnStateMinISR)), integer, "min.insync.replicas of __transaction_state (capped at its replication factor)."},
		{"transaction.max.timeout.ms", ms(c.Txns.MaxTimeout), integer, "The largest transaction timeout a producer may ask for."},
		{"transaction.version", i64(int64(c.TransactionVersion)), integer, "The transaction.version feature level finalized for clients: 2 is transactions v2 (KIP-890 part 2)."},
		{"transaction.partition.verification.enable", strconv.FormatBool(c.TxnVerification), boolean, "Verify with the coordinator that a transaction includes a partition before appending its first batch there (KIP-890)."},
		{"transactional.id.expiration.ms", ms(c.Txns.IDExpiration), integer, "How long an idle transactional id is kept."},
		{"transaction.abort.timed.out.transaction.cleanup.interval.ms", ms(c.Txns.AbortInterval), integer, "How often transactions past their timeout are looked for and aborted."},
		{"transaction.remove.expired.transaction.cleanup.interval.ms", ms(c.Txns.RemoveInterval), integer, "How often expired transactional ids are looked for."},
		{"group.min.session.timeout.ms", ms(c.Groups.MinSessionTimeout), integer, "The smallest session timeout a group member may ask for."},
		{"group.max.session.timeout.ms", ms(c.Groups.MaxSessionTimeout), integer, "The largest session timeout a group member may ask for."},
		{"group.initial.rebalance.delay.ms", ms(c.Groups.InitialRebalanceDelay), integer, "How long the first rebalance of an empty group waits for more members."},
		{"offsets.retention.minutes", i64(int64(c.Groups.OffsetsRetention / time.Minute)), integer, "How long an empty group's offsets are kept."},
		{"offset.metadata.max.bytes", i64(int64(c.Groups.MaxMetadataBytes)), integer, "The largest metadata string of a committed offset."},
		{"offsets.commit.timeout.ms", ms(c.Groups.CommitTimeout), integer, "How long a group write may wait to be committed."},
	}
	for _, v := range effectiveTopicConfigs(nil, c.TopicDefaults) {
		if v.def.broker == "" {
			continue
		}
		kind := str
		switch v.def.kind {
		case kindLong:
			kind = long
		case kindInt:
			kind = integer
		case kindBool:
			kind = boolean
		}
		doc := "The default of the topic config " + v.def.name + " for topics that do not set it."
		if v.def.doc != "" {
			doc += " " + v.def.doc
		}
		out = append(out, brokerConfig{v.def.broker, v.value, kind, doc})
	}
	// The TLS and SASL settings as set (docs/security.md); secrets hidden.
	for _, k := range slices.Sorted(maps.Keys(c.Security)) {
		kind := str
		if shownValue(k, c.Security[k]) != c.Security[k] {
			kind = kmsg.ConfigTypePassword
		}
		out = append(out, brokerConfig{k, c.Security[k], kind, "A TLS or SASL setting (docs/security.md)."})
	}
	slices.SortFunc(out, func(a, b brokerConfig) int { return strings.Compare(a.name, b.name) })
	return out
}

// protocolMap formats listener.security.protocol.map as in effect.
func protocolMap(m map[string]string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, name+":"+m[name])
	}
	return strings.Join(parts, ",")
}

// connectionOverrides formats max.connections.per.ip.overrides as it is set.
func connectionOverrides(m map[string]int) string {
	var parts []string
	for _, host := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, host+":"+strconv.Itoa(m[host]))
	}
	return strings.Join(parts, ",")
}

// configsAuthorization is the error code of a config resource that the
// principal may not op (DESCRIBE_CONFIGS or ALTER_CONFIGS), as Kafka
// answers it: a topic is checked against its topic ACLs, a broker or
// broker logger against the cluster's; 0 if allowed or of another type
// (which fails later as an invalid request).
func configsAuthorization(az authz, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !az.topic(op, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !az.cluster(op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}
