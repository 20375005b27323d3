package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

// kafkaTopicID is a topic ID as kafka-topics.sh prints it, and its bytes.
const kafkaTopicID = "csoCe4FmT1-q-j0JNHlVgA"

func kafkaTopicIDBytes(t *testing.T) [16]byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(kafkaTopicID)
	if err != nil || len(b) != 16 {
		t.Fatalf("decoding %q: %v (%d bytes)", kafkaTopicID, err, len(b))
	}
	return [16]byte(b)
}

func TestFormatTopicID(t *testing.T) {
	id := kafkaTopicIDBytes(t)
	if got, want := formatTopicID(id), kafkaTopicID; got != want {
		t.Errorf("formatTopicID = %q, want %q", got, want)
	}
	// Kafka's Uuid.toString is URL-safe: '-' and '_', never '+', '/' or '='.
	var allOnes [16]byte
	for i := range allOnes {
		allOnes[i] = 0xff
	}
	if got, want := formatTopicID(allOnes), "_____________________w"; got != want {
		t.Errorf("formatTopicID(ff..ff) = %q, want %q", got, want)
	}
}

func TestFormatTopicHeader(t *testing.T) {
	id := kafkaTopicIDBytes(t)
	threeParts := []partitionDescription{
		{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
		{Partition: 1, Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2, 3}},
		{Partition: 2, Leader: 3, Replicas: []int32{3, 1}, ISR: []int32{3, 1}},
	}
	tests := []struct {
		name string
		in   topicDescription
		want string
	}{
		{
			name: "no configs keeps the trailing space like Kafka",
			in:   topicDescription{Name: "t", ID: id, Partitions: threeParts},
			want: "Topic: t\tTopicId: " + kafkaTopicID + "\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: \n",
		},
		{
			name: "configs joined with commas, sensitive as null",
			in: topicDescription{Name: "orders", ID: id, Partitions: threeParts[:1], Configs: []configEntry{
				{Name: "cleanup.policy", Value: strp("delete")},
				{Name: "retention.ms", Value: strp("1000")},
				{Name: "secret", Value: nil},
			}},
			want: "Topic: orders\tTopicId: " + kafkaTopicID + "\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: cleanup.policy=delete,retention.ms=1000,secret=null\n",
		},
		{
			name: "zero topic ID is omitted",
			in:   topicDescription{Name: "old", Partitions: threeParts[:1]},
			want: "Topic: old\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: \n",
		},
		{
			name: "no partitions",
			in:   topicDescription{Name: "empty", ID: id},
			want: "Topic: empty\tTopicId: " + kafkaTopicID + "\tPartitionCount: 0\tReplicationFactor: 0\tConfigs: \n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatTopicHeader(tt.in); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFormatPartitionLine(t *testing.T) {
	tests := []struct {
		name string
		in   partitionDescription
		want string
	}{
		{
			name: "healthy",
			in:   partitionDescription{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
			want: "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n",
		},
		{
			name: "no leader prints none and empty ISR prints nothing",
			in:   partitionDescription{Partition: 7, Leader: -1, Replicas: []int32{2}, ISR: nil},
			want: "\tTopic: t\tPartition: 7\tLeader: none\tReplicas: 2\tIsr: \n",
		},
		{
			name: "offline replicas are appended",
			in:   partitionDescription{Partition: 1, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Offline: []int32{2, 3}},
			want: "\tTopic: t\tPartition: 1\tLeader: 1\tReplicas: 1,2,3\tIsr: 1\tOffline: 2,3\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatPartitionLine("t", tt.in); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// fixtureTopics is a cluster of brokers 1..3 where broker 3 has just died:
// topic "a" (min.insync.replicas=2) has one partition of every kind.
func fixtureTopics() ([]topicDescription, map[int32]bool) {
	live := map[int32]bool{1: true, 2: true}
	topics := []topicDescription{
		{
			Name:   "a",
			MinISR: 2,
			Configs: []configEntry{
				{Name: "min.insync.replicas", Value: strp("2")},
			},
			Partitions: []partitionDescription{
				// healthy, preferred leader
				{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{2, 1}},
				// under-replicated, ISR below min
				{Partition: 1, Leader: 2, Replicas: []int32{2, 1}, ISR: []int32{2}},
				// no leader
				{Partition: 2, Leader: -1, Replicas: []int32{3}, ISR: []int32{3}, Offline: []int32{3}},
				// leader is the dead broker 3 (metadata not yet updated)
				{Partition: 3, Leader: 3, Replicas: []int32{3, 1}, ISR: []int32{3, 1}},
				// healthy but led by a non-preferred replica; ISR == min ISR
				{Partition: 4, Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
				// three replicas, one out of sync: at min ISR, under-replicated
				{Partition: 5, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Offline: []int32{3}},
			},
		},
		{
			Name: "b",
			// min.insync.replicas left at its default: not in Configs.
			MinISR: 1,
			Partitions: []partitionDescription{
				{Partition: 0, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}},
			},
		},
	}
	return topics, live
}

func TestPrintTopicDescriptions(t *testing.T) {
	topics, live := fixtureTopics()
	const (
		headerA = "Topic: a\tPartitionCount: 6\tReplicationFactor: 2\tConfigs: min.insync.replicas=2\n"
		headerB = "Topic: b\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
		a0      = "\tTopic: a\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 2,1\n"
		a1      = "\tTopic: a\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2\n"
		a2      = "\tTopic: a\tPartition: 2\tLeader: none\tReplicas: 3\tIsr: 3\tOffline: 3\n"
		a3      = "\tTopic: a\tPartition: 3\tLeader: 3\tReplicas: 3,1\tIsr: 3,1\n"
		a4      = "\tTopic: a\tPartition: 4\tLeader: 2\tReplicas: 1,2\tIsr: 1,2\n"
		a5      = "\tTopic: a\tPartition: 5\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tOffline: 3\n"
		b0      = "\tTopic: b\tPartition: 0\tLeader: 2\tReplicas: 2\tIsr: 2\n"
		summary = "Partitions: 3 healthy, 2 under-replicated, 2 offline, 1 led by a non-preferred replica\n"
	)
	tests := []struct {
		name    string
		filter  describeFilter
		summary bool
		want    string
	}{
		{"all", filterNone, true, headerA + a0 + a1 + a2 + a3 + a4 + a5 + headerB + b0 + summary},
		{"all without summary is plain kafka-topics output", filterNone, false, headerA + a0 + a1 + a2 + a3 + a4 + a5 + headerB + b0},
		{"under-replicated", filterUnderReplicated, false, a1 + a5},
		{"unavailable", filterUnavailable, false, a2 + a3},
		// a2 has no leader, which Kafka counts as under min ISR too.
		{"under-min-isr", filterUnderMinISR, false, a1 + a2},
		{"at-min-isr", filterAtMinISR, false, a0 + a3 + a4 + a5 + b0},
		{"overrides", filterOverrides, false, headerA},
		{"filter keeps the summary over all partitions", filterUnderReplicated, true, a1 + a5 + summary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := printTopicDescriptions(&buf, topics, describeOptions{Filter: tt.filter, LiveBrokers: live, Summary: tt.summary})
			if err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	topics, live := fixtureTopics()
	got := summarize(topics, live)
	// healthy: a0, a4, b0; under-replicated: a1, a5; offline: a2 (no
	// leader), a3 (dead leader); non-preferred: a4.
	want := describeSummary{Healthy: 3, UnderReplicated: 2, Offline: 2, NonPreferred: 1}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if got := summarize(nil, live); got != (describeSummary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
}

func TestPartitionHealth(t *testing.T) {
	live := map[int32]bool{1: true, 2: true, 3: true}
	tests := []struct {
		name   string
		p      partitionDescription
		minISR int
		// want: underReplicated, unavailable, underMinISR, atMinISR, healthy, nonPreferred
		want [6]bool
	}{
		{"fully in sync", partitionDescription{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 2,
			[6]bool{false, false, false, false, true, false}},
		{"ISR at min", partitionDescription{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, 2,
			[6]bool{true, false, false, true, false, false}},
		{"ISR below min", partitionDescription{Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{2}}, 2,
			[6]bool{true, false, true, false, false, true}},
		{"no leader", partitionDescription{Leader: -1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 1,
			[6]bool{false, true, true, false, false, false}},
		{"leader not live", partitionDescription{Leader: 9, Replicas: []int32{9}, ISR: []int32{9}}, 1,
			[6]bool{false, true, false, true, false, false}},
		{"ISR same size but different members", partitionDescription{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 3}}, 1,
			[6]bool{false, false, false, false, false, false}},
		{"unknown min ISR never matches the ISR filters", partitionDescription{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}, 0,
			[6]bool{true, false, false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := partitionHealth{p: tt.p, minISR: tt.minISR, live: live}
			got := [6]bool{h.underReplicated(), h.unavailable(), h.underMinISR(), h.atMinISR(), h.healthy(), h.nonPreferredLeader()}
			if got != tt.want {
				t.Errorf("got %v, want %v (underReplicated, unavailable, underMinISR, atMinISR, healthy, nonPreferred)", got, tt.want)
			}
		})
	}
}

func TestBuildTopicDescriptions(t *testing.T) {
	id := kafkaTopicIDBytes(t)
	topics := kadm.TopicDetails{
		"zeta": {Topic: "zeta", Partitions: kadm.PartitionDetails{
			0: {Topic: "zeta", Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		}},
		"alpha": {Topic: "alpha", ID: id, Partitions: kadm.PartitionDetails{
			1: {Topic: "alpha", Partition: 1, Leader: -1, Replicas: []int32{2, 1}, ISR: []int32{}, OfflineReplicas: []int32{2, 1}},
			0: {Topic: "alpha", Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
		}},
	}
	configs := kadm.ResourceConfigs{
		{Name: "alpha", Configs: []kadm.Config{
			{Key: "segment.bytes", Value: strp("1073741824"), Source: kmsg.ConfigSourceDefaultConfig},
			{Key: "retention.ms", Value: strp("1000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
			{Key: "min.insync.replicas", Value: strp("2"), Source: kmsg.ConfigSourceDynamicTopicConfig},
			{Key: "log.segment.bytes", Value: strp("100"), Source: kmsg.ConfigSourceStaticBrokerConfig},
			{Key: "sasl.thing", Value: nil, Sensitive: true, Source: kmsg.ConfigSourceDynamicTopicConfig},
		}},
		{Name: "zeta", Configs: []kadm.Config{
			{Key: "min.insync.replicas", Value: strp("1"), Source: kmsg.ConfigSourceDefaultConfig},
		}},
	}
	got, err := buildTopicDescriptions(topics, configs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := printTopicDescriptions(&buf, got, describeOptions{LiveBrokers: map[int32]bool{1: true, 2: true}}); err != nil {
		t.Fatal(err)
	}
	want := "Topic: alpha\tTopicId: " + kafkaTopicID + "\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: log.segment.bytes=100,min.insync.replicas=2,retention.ms=1000,sasl.thing=null\n" +
		"\tTopic: alpha\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n" +
		"\tTopic: alpha\tPartition: 1\tLeader: none\tReplicas: 2,1\tIsr: \tOffline: 2,1\n" +
		"Topic: zeta\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n" +
		"\tTopic: zeta\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
	if buf.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", buf.String(), want)
	}
	if got[0].MinISR != 2 || got[1].MinISR != 1 {
		t.Errorf("MinISR = %d, %d; want 2, 1", got[0].MinISR, got[1].MinISR)
	}
}

func TestBuildTopicDescriptionsErrors(t *testing.T) {
	tests := []struct {
		name    string
		topics  kadm.TopicDetails
		configs kadm.ResourceConfigs
		wantErr string
	}{
		{
			name:    "unknown topic",
			topics:  kadm.TopicDetails{"nope": {Topic: "nope", Err: kerr.UnknownTopicOrPartition}},
			wantErr: `topic "nope" does not exist`,
		},
		{
			name:    "other topic error",
			topics:  kadm.TopicDetails{"x": {Topic: "x", Err: kerr.TopicAuthorizationFailed}},
			wantErr: "TOPIC_AUTHORIZATION_FAILED",
		},
		{
			name:    "config error",
			topics:  kadm.TopicDetails{"x": {Topic: "x"}},
			configs: kadm.ResourceConfigs{{Name: "x", Err: kerr.UnknownTopicOrPartition, ErrMessage: "gone"}},
			wantErr: "(gone)",
		},
		{
			name:   "bad min ISR",
			topics: kadm.TopicDetails{"x": {Topic: "x"}},
			configs: kadm.ResourceConfigs{{Name: "x", Configs: []kadm.Config{
				{Key: "min.insync.replicas", Value: strp("two")},
			}}},
			wantErr: `bad min.insync.replicas "two"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildTopicDescriptions(tt.topics, tt.configs)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	// The Kafka error stays inspectable.
	_, err := buildTopicDescriptions(kadm.TopicDetails{"x": {Topic: "x", Err: kerr.TopicAuthorizationFailed}}, nil)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("errors.Is(%v, TopicAuthorizationFailed) = false", err)
	}
}
