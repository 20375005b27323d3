package broker

// DescribeConfigs (key 32), versions 1–4 (flexible from v4).
//
// Topics (resource type 2): every supported topic config with its effective
// value and source (DYNAMIC_TOPIC_CONFIG for a topic override,
// STATIC_BROKER_CONFIG for a broker default from server.properties,
// DEFAULT_CONFIG otherwise); synonyms (v1+) list the chain; v3+ adds the
// type and, on request, documentation. Brokers (type 4): this broker's
// static settings, read-only. ConfigNames filters the result.

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeConfigs(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	s := b.view()
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		wanted := func(name string) bool { return res.ConfigNames == nil || slices.Contains(res.ConfigNames, name) }
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
			for _, kv := range b.brokerConfigs() {
				if !wanted(kv[0]) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				value := kv[1]
				c.Name, c.Value, c.ReadOnly, c.Source = kv[0], &value, true, kmsg.ConfigSourceStaticBrokerConfig
				c.ConfigType = kmsg.ConfigTypeString
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

// brokerConfigs lists this broker's settings as (name, value) pairs.
func (b *Broker) brokerConfigs() [][2]string {
	c := b.cfg
	out := [][2]string{
		{"node.id", strconv.Itoa(int(c.NodeID))},
		{"listeners", strings.Join(c.Listeners, ",")},
		{"advertised.listeners", strings.Join(c.AdvertisedListeners, ",")},
		{"broker.rack", c.Rack},
		{"log.dirs", c.DataDir},
		{"auto.create.topics.enable", strconv.FormatBool(c.AutoCreateTopics)},
		{"num.partitions", strconv.Itoa(int(c.NumPartitions))},
		{"default.replication.factor", strconv.Itoa(int(c.DefaultReplicationFactor))},
		{"socket.request.max.bytes", strconv.Itoa(int(c.SocketRequestMaxBytes))},
		{"connections.max.idle.ms", strconv.FormatInt(c.ConnectionsMaxIdle.Milliseconds(), 10)},
		{"max.connections", strconv.Itoa(c.MaxConnections)},
		{"broker.session.timeout.ms", strconv.FormatInt(c.SessionTimeout.Milliseconds(), 10)},
		{"log.retention.check.interval.ms", strconv.FormatInt(c.RetentionCheckInterval.Milliseconds(), 10)},
		{"producer.id.expiration.ms", strconv.FormatInt(c.ProducerIDExpiration.Milliseconds(), 10)},
	}
	for _, v := range effectiveTopicConfigs(nil, c.TopicDefaults) {
		if v.def.broker != "" {
			out = append(out, [2]string{v.def.broker, v.value})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}
