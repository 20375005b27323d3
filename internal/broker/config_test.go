package broker

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLoadProperties(t *testing.T) {
	props := `
# a comment
! another
node.id=3
listeners=PLAINTEXT://127.0.0.1:9093
log.dirs = /tmp/x
num.partitions=6
auto.create.topics.enable=false
log.retention.hours=48
message.max.bytes=2000000
log.flush.interval.messages=10000
broker.session.timeout.ms=12000
`
	cfg := DefaultConfig()
	if err := cfg.LoadProperties(strings.NewReader(props)); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"node.id", cfg.NodeID, int32(3)},
		{"listeners", strings.Join(cfg.Listeners, ","), "PLAINTEXT://127.0.0.1:9093"},
		{"log.dirs", cfg.DataDir, "/tmp/x"},
		{"num.partitions", cfg.NumPartitions, int32(6)},
		{"auto.create", cfg.AutoCreateTopics, false},
		{"retention.ms", cfg.TopicDefaults["retention.ms"], "172800000"},
		{"max.message.bytes", cfg.TopicDefaults["max.message.bytes"], "2000000"},
		{"flush.messages", cfg.TopicDefaults["flush.messages"], "10000"},
		{"session", cfg.SessionTimeout, 12 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if err := cfg.validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

func TestConfigRejectsBadValues(t *testing.T) {
	tests := []struct{ key, value string }{
		{"node.id", "-1"},
		{"node.id", "x"},
		{"num.partitions", "0"},
		{"log.dirs", "a,b"},
		{"socket.request.max.bytes", "10"},
		{"message.max.bytes", "big"},
		{"log.segment.bytes", "3"},
		{"no.such.setting", "1"},
		{"log.cleanup.policy", "shred"},
		{"log.retention.hours", "9223372036854775807"},
		{"cluster.name", "a/b"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			cfg := DefaultConfig()
			if err := cfg.Set(tt.key, tt.value); !errors.Is(err, ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.Listeners = []string{"SSL://:9093"}
	if err := cfg.validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("SSL listener: got %v, want ErrConfig", err)
	}
	if err := cfg.LoadProperties(strings.NewReader("just words\n")); !errors.Is(err, ErrConfig) {
		t.Fatalf("malformed line: got %v, want ErrConfig", err)
	}
}

func TestEffectiveTopicConfigs(t *testing.T) {
	brokerDefaults := map[string]string{"retention.ms": "1000", "max.message.bytes": "5000"}
	overrides := map[string]string{"retention.ms": "2000"}
	got := map[string]topicConfigValue{}
	for _, v := range effectiveTopicConfigs(overrides, brokerDefaults) {
		got[v.def.name] = v
	}
	if len(got) != len(topicConfigDefs) {
		t.Fatalf("got %d configs, want %d", len(got), len(topicConfigDefs))
	}
	for _, c := range []struct {
		name   string
		value  string
		source configSource
	}{
		{"retention.ms", "2000", sourceTopic},
		{"max.message.bytes", "5000", sourceStaticBroker},
		{"segment.bytes", "1073741824", sourceDefault},
		{"flush.messages", "1", sourceDefault},
	} {
		if g := got[c.name]; g.value != c.value || g.source != c.source {
			t.Errorf("%s: got %q (source %d), want %q (source %d)", c.name, g.value, g.source, c.value, c.source)
		}
	}
	s := resolveTopicSettings(overrides, brokerDefaults)
	if s.retentionMs != 2000 || s.maxMessageBytes != 5000 || s.flushMessages != 1 || s.minInsyncReplicas != 1 {
		t.Fatalf("resolved settings: %+v", s)
	}
}

// The durability mode is one per topic: a broker's log.flush.interval.*
// never applies to a topic that lacks flush.messages/flush.ms (each broker
// would otherwise pick its own mode for the same partition); it is stored
// with the topics created through that broker instead.
func TestDurabilityModeIsPerTopic(t *testing.T) {
	pageCacheBroker := map[string]string{"flush.messages": "10000", "flush.ms": "1000", "retention.ms": "1000"}
	if s := resolveTopicSettings(nil, pageCacheBroker); s.flushMessages != 1 || s.flushMs != math.MaxInt64 || s.retentionMs != 1000 {
		t.Fatalf("a topic without flush configs on a page-cache broker: flush.messages %d, flush.ms %d, retention.ms %d; want 1, max, 1000",
			s.flushMessages, s.flushMs, s.retentionMs)
	}
	for _, v := range effectiveTopicConfigs(nil, pageCacheBroker) {
		if v.def.name == "flush.messages" && (v.value != "1" || v.source != sourceDefault) {
			t.Fatalf("described flush.messages: %q (source %d), want the built-in 1", v.value, v.source)
		}
	}
	stored := pinTopicDefaults(map[string]string{"flush.ms": "5"}, pageCacheBroker)
	want := map[string]string{"flush.messages": "10000", "flush.ms": "5"}
	if !maps.Equal(stored, want) {
		t.Fatalf("configs stored with a new topic: %v, want %v", stored, want)
	}
	if s := resolveTopicSettings(stored, nil); s.flushMessages != 10000 || s.flushMs != 5 {
		t.Fatalf("the stored mode on another broker: flush.messages %d, flush.ms %d", s.flushMessages, s.flushMs)
	}
	if got := pinTopicDefaults(nil, map[string]string{"retention.ms": "1"}); got != nil {
		t.Fatalf("nothing pinned: got %v, want nil", got)
	}
}

func TestAssignReplicas(t *testing.T) {
	brokers := []int32{1, 2, 3}
	a, err := assignReplicas(brokers, 0, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for p, replicas := range a {
		if len(replicas) != 3 {
			t.Fatalf("partition %d: %v", p, replicas)
		}
		sorted := slices.Clone(replicas)
		slices.Sort(sorted)
		if !slices.Equal(sorted, brokers) {
			t.Fatalf("partition %d: replicas %v are not distinct brokers", p, replicas)
		}
		leaders[replicas[0]]++
	}
	for _, b := range brokers {
		if leaders[b] != 2 {
			t.Fatalf("preferred leaders not spread evenly: %v", leaders)
		}
	}
	if _, err := assignReplicas(brokers, 0, 1, 4); !errors.Is(err, errInvalidReplicationFactor) {
		t.Fatalf("rf 4 on 3 brokers: got %v", err)
	}
	if err := validateAssignment([][]int32{{1, 2}, {2, 2}}, brokers); err == nil {
		t.Fatal("duplicate replica accepted")
	}
	if err := validateAssignment([][]int32{{1, 9}}, brokers); err == nil {
		t.Fatal("unknown broker accepted")
	}
	if err := validateAssignment([][]int32{{1, 2}, {3}}, brokers); err == nil {
		t.Fatal("uneven replication factor accepted")
	}
}

func TestValidTopicName(t *testing.T) {
	for _, ok := range []string{"a", "orders.v1", "A_b-c", strings.Repeat("x", 249)} {
		if err := validTopicName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", "ü", strings.Repeat("x", 250)} {
		if validTopicName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseDirName(t *testing.T) {
	tests := []struct {
		in   string
		want topicPartition
		ok   bool
	}{
		{"orders-0", topicPartition{"orders", 0}, true},
		{"my-topic-12", topicPartition{"my-topic", 12}, true},
		{"noseparator", topicPartition{}, false},
		{"-3", topicPartition{}, false},
		{"t--1", topicPartition{"t-", 1}, true},
		{"x-y", topicPartition{}, false},
	}
	for _, tt := range tests {
		got, ok := parseDirName(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: got %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRackAwarePlacement(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
	order := placement([]int32{1, 2, 3, 4, 5, 6}, func(id int32) string { return racks[id] })
	if got, want := fmt.Sprint(order), "[1 3 5 2 4 6]"; got != want {
		t.Fatalf("placement %s, want %s", got, want)
	}
	a, err := assignReplicas(order, 0, 12, 3)
	if err != nil {
		t.Fatal(err)
	}
	for p, replicas := range a {
		seen := map[string]bool{}
		for _, r := range replicas {
			if seen[racks[r]] {
				t.Fatalf("partition %d: replicas %v put two on rack %s", p, replicas, racks[r])
			}
			seen[racks[r]] = true
		}
	}
	if got := fmt.Sprint(placement([]int32{3, 1, 2}, func(int32) string { return "" })); got != "[3 1 2]" {
		t.Fatalf("without racks the order must stay: %s", got)
	}
}

// The automatic leader rebalancing defaults are Kafka's, as docs/config.md
// says (they were off: found by the container campaign's auto-rebalance
// fault).
func TestLeaderRebalanceDefaults(t *testing.T) {
	c := DefaultConfig()
	if !c.AutoLeaderRebalance || c.LeaderImbalanceCheckInterval != 300*time.Second || c.LeaderImbalancePercent != 10 {
		t.Fatalf("auto.leader.rebalance.enable %v, leader.imbalance.check.interval.seconds %v, leader.imbalance.per.broker.percentage %d; want true, 300s, 10",
			c.AutoLeaderRebalance, c.LeaderImbalanceCheckInterval, c.LeaderImbalancePercent)
	}
}
