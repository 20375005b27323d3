package broker

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
)

// topicConfigKind is how a topic config's value is parsed.
type topicConfigKind int

const (
	kindLong topicConfigKind = iota
	kindInt
	kindBool
	kindEnum
)

// topicConfigDef describes one topic-level config.
type topicConfigDef struct {
	name string
	kind topicConfigKind
	// def is the default when neither the topic nor the broker sets it.
	def string
	// min is the smallest allowed value of a numeric config.
	min int64
	// enum lists the allowed values of a kindEnum config.
	enum []string
	// sensitive/readOnly mirror DescribeConfigs' flags.
	readOnly bool
	// broker is the broker setting whose value is the default, if any.
	broker string
	// pinned: the broker setting is the default only for topics created
	// through this broker, which stores the value with the topic; it is
	// never applied to a topic that lacks it. Every replica then uses the
	// same value, whatever its own broker's settings: the durability mode
	// must be one per topic, or a leader acknowledging only fsync'd data
	// would count a page-cache follower's unflushed offsets as durable.
	pinned bool
	doc    string
}

// topicConfigDefs are the topic configs samsa supports, with Kafka's names
// and defaults except where noted (flush.messages: samsa acknowledges only
// fsync'd data by default, see docs/storage.md).
var topicConfigDefs = map[string]*topicConfigDef{}

func init() {
	for _, d := range []*topicConfigDef{
		{name: "cleanup.policy", kind: kindEnum, def: "delete", enum: []string{"delete", "compact", "compact,delete", "delete,compact"}, broker: "log.cleanup.policy",
			doc: "delete: old segments are deleted by retention; compact: only the latest record per key is kept (retention.ms and retention.bytes do not apply unless delete is listed too)"},
		{name: "compression.type", kind: kindEnum, def: "producer", enum: []string{"producer"}, broker: "compression.type",
			doc: "batches are stored exactly as the producer compressed them"},
		{name: "retention.ms", kind: kindLong, def: "604800000", min: -1, broker: "log.retention.ms"},
		{name: "retention.bytes", kind: kindLong, def: "-1", min: -1, broker: "log.retention.bytes"},
		{name: "segment.bytes", kind: kindInt, def: "1073741824", min: 14, broker: "log.segment.bytes"},
		{name: "segment.ms", kind: kindLong, def: "604800000", min: 1, broker: "log.roll.ms"},
		{name: "segment.index.bytes", kind: kindInt, def: "10485760", min: 4096, broker: "log.index.size.max.bytes"},
		{name: "index.interval.bytes", kind: kindInt, def: "4096", min: 0, broker: "log.index.interval.bytes"},
		{name: "max.message.bytes", kind: kindInt, def: "1048588", min: 0, broker: "message.max.bytes"},
		{name: "min.insync.replicas", kind: kindInt, def: "1", min: 1, broker: "min.insync.replicas"},
		{name: "flush.messages", kind: kindLong, def: "1", min: 1, broker: "log.flush.interval.messages", pinned: true,
			doc: "1 (samsa's default): every acknowledged write is fsync'd first, with group commit; larger: Kafka's page-cache mode"},
		{name: "flush.ms", kind: kindLong, def: strconv.FormatInt(math.MaxInt64, 10), min: 0, broker: "log.flush.interval.ms", pinned: true},
		{name: "message.timestamp.type", kind: kindEnum, def: "CreateTime", enum: []string{"CreateTime", "LogAppendTime"}, broker: "log.message.timestamp.type"},
		{name: "message.timestamp.before.max.ms", kind: kindLong, def: strconv.FormatInt(math.MaxInt64, 10), min: 0, broker: "log.message.timestamp.before.max.ms"},
		{name: "message.timestamp.after.max.ms", kind: kindLong, def: "3600000", min: 0, broker: "log.message.timestamp.after.max.ms"},
		{name: "unclean.leader.election.enable", kind: kindBool, def: "false", broker: "unclean.leader.election.enable"},
		{name: "delete.retention.ms", kind: kindLong, def: "86400000", min: 0, broker: "log.cleaner.delete.retention.ms"},
	} {
		topicConfigDefs[d.name] = d
	}
}

// validateTopicConfig checks one topic config value.
func validateTopicConfig(name, value string) error {
	d, ok := topicConfigDefs[name]
	if !ok {
		return fmt.Errorf("unknown topic config %q", name)
	}
	switch d.kind {
	case kindLong, kindInt:
		bits := 64
		if d.kind == kindInt {
			bits = 32
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, bits)
		if err != nil {
			return fmt.Errorf("%s: %q is not a valid %d-bit integer", name, value, bits)
		}
		if n < d.min {
			return fmt.Errorf("%s: %d is below the minimum %d", name, n, d.min)
		}
	case kindBool:
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Errorf("%s: %q is not true or false", name, value)
		}
	case kindEnum:
		for _, e := range d.enum {
			if strings.EqualFold(e, value) {
				return nil
			}
		}
		return fmt.Errorf("%s: %q is not supported (allowed: %s)", name, value, strings.Join(d.enum, ", "))
	}
	return nil
}

// configSource says where an effective topic config value came from.
type configSource int8

// Values of kmsg.ConfigSource.
const (
	sourceTopic        configSource = 1 // DYNAMIC_TOPIC_CONFIG
	sourceStaticBroker configSource = 4 // STATIC_BROKER_CONFIG
	sourceDefault      configSource = 5 // DEFAULT_CONFIG
)

// topicConfigValue is one effective config value.
type topicConfigValue struct {
	def    *topicConfigDef
	value  string
	source configSource
}

// effectiveTopicConfigs resolves every topic config: the topic's override,
// else the broker default, else the built-in default. Sorted by name.
func effectiveTopicConfigs(overrides, brokerDefaults map[string]string) []topicConfigValue {
	out := make([]topicConfigValue, 0, len(topicConfigDefs))
	for name, d := range topicConfigDefs {
		v := topicConfigValue{def: d, value: d.def, source: sourceDefault}
		if b, ok := brokerDefaults[name]; ok && !d.pinned {
			v.value, v.source = b, sourceStaticBroker
		}
		if o, ok := overrides[name]; ok {
			v.value, v.source = o, sourceTopic
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].def.name < out[j].def.name })
	return out
}

// pinTopicDefaults returns the configs to store with a new topic: the
// requested ones, plus this broker's defaults of the pinned configs that the
// request leaves out (see topicConfigDef.pinned).
func pinTopicDefaults(configs, brokerDefaults map[string]string) map[string]string {
	out := maps.Clone(configs)
	for name, d := range topicConfigDefs {
		v, ok := brokerDefaults[name]
		if _, set := configs[name]; set || !ok || !d.pinned || validateTopicConfig(name, v) != nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = v
	}
	return out
}

// topicSettings is the parsed effective configuration of one topic.
type topicSettings struct {
	retentionMs, retentionBytes         int64
	segmentBytes, segmentMs             int64
	segmentIndexBytes, indexInterval    int32
	maxMessageBytes                     int32
	minInsyncReplicas                   int32
	flushMessages, flushMs              int64
	timestampBeforeMs, timestampAfterMs int64
	// timestampType is message.timestamp.type.
	timestampType         string
	uncleanLeaderElection bool
	// compact and deleteOld are cleanup.policy's two halves.
	compact, deleteOld bool
	deleteRetentionMs  int64
}

// resolveTopicSettings parses the effective configs. Values were validated
// when stored; a value that no longer parses falls back to the default.
func resolveTopicSettings(overrides, brokerDefaults map[string]string) topicSettings {
	get := func(name string) string {
		if v, ok := overrides[name]; ok && validateTopicConfig(name, v) == nil {
			return v
		}
		d := topicConfigDefs[name]
		if v, ok := brokerDefaults[name]; ok && !d.pinned && validateTopicConfig(name, v) == nil {
			return v
		}
		return d.def
	}
	i64 := func(name string) int64 {
		n, _ := strconv.ParseInt(get(name), 10, 64)
		return n
	}
	b, _ := strconv.ParseBool(get("unclean.leader.election.enable"))
	return topicSettings{
		retentionMs:           i64("retention.ms"),
		retentionBytes:        i64("retention.bytes"),
		segmentBytes:          i64("segment.bytes"),
		segmentMs:             i64("segment.ms"),
		segmentIndexBytes:     int32(i64("segment.index.bytes")),
		indexInterval:         int32(i64("index.interval.bytes")),
		maxMessageBytes:       int32(i64("max.message.bytes")),
		minInsyncReplicas:     int32(i64("min.insync.replicas")),
		flushMessages:         i64("flush.messages"),
		flushMs:               i64("flush.ms"),
		timestampBeforeMs:     i64("message.timestamp.before.max.ms"),
		timestampAfterMs:      i64("message.timestamp.after.max.ms"),
		timestampType:         get("message.timestamp.type"),
		uncleanLeaderElection: b,
		compact:               strings.Contains(get("cleanup.policy"), "compact"),
		deleteOld:             strings.Contains(get("cleanup.policy"), "delete"),
		deleteRetentionMs:     i64("delete.retention.ms"),
	}
}
