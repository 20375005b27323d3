package main

// `topic describe` output: a plain data model built from kadm results, the
// health filters of kafka-topics.sh, and the printer. Everything here is
// pure so it is tested without a broker (describe_print_test.go).
//
// The format mirrors `kafka-topics.sh --describe` (Kafka's TopicCommand):
//
//	Topic: t<TAB>TopicId: <id><TAB>PartitionCount: 3<TAB>ReplicationFactor: 1<TAB>Configs: k=v,k2=v2
//	<TAB>Topic: t<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1<TAB>Isr: 1
//
// with two samsa additions: "<TAB>Offline: ids" after Isr when the
// partition has offline replicas, and a final summary line (see
// describeSummary). Kafka's Elr/LastKnownElr columns are not printed.

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minISRConfig is the topic config the min-ISR filters compare against.
const minISRConfig = "min.insync.replicas"

// topicDescription is one topic as `topic describe` shows it.
type topicDescription struct {
	Name string
	// ID is the topic ID; all zero when the broker has none (then it is not
	// printed, as in Kafka).
	ID [16]byte
	// Partitions are sorted by partition number.
	Partitions []partitionDescription
	// Configs are the topic's configs whose source is not DEFAULT_CONFIG,
	// sorted by name: what kafka-topics prints after "Configs: ".
	Configs []configEntry
	// MinISR is the effective min.insync.replicas; 0 when unknown.
	MinISR int
}

// partitionDescription is one partition of a described topic.
type partitionDescription struct {
	Partition int32
	// Leader is the leader broker ID, or -1 when there is none.
	Leader   int32
	Replicas []int32
	ISR      []int32
	// Offline are the replicas the broker reports as offline.
	Offline []int32
}

// configEntry is one config shown in the Configs column.
type configEntry struct {
	Name string
	// Value is nil for sensitive configs (printed as "null", as in Kafka).
	Value *string
}

// describeFilter is the partition filter of `topic describe`; as in Kafka,
// at most one is active.
type describeFilter int

const (
	filterNone describeFilter = iota
	filterUnderReplicated
	filterUnavailable
	filterUnderMinISR
	filterAtMinISR
	// filterOverrides prints only the header line of topics with
	// non-default configs (kafka-topics --topics-with-overrides).
	filterOverrides
)

// describeOptions controls the printer.
type describeOptions struct {
	Filter describeFilter
	// LiveBrokers are the broker IDs in the cluster metadata; a leader not
	// in it makes a partition unavailable.
	LiveBrokers map[int32]bool
	// Summary adds the "Partitions: ..." line at the end.
	Summary bool
	// Explain, if set, adds the leaders' account of each partition's
	// replicas under its line (--explain).
	Explain *explainResult
}

// partitionHealth answers the health questions about one partition, with
// the same definitions Kafka's TopicCommand uses.
type partitionHealth struct {
	p      partitionDescription
	minISR int
	live   map[int32]bool
}

func (h partitionHealth) hasLeader() bool { return h.p.Leader >= 0 }

// underReplicated: fewer in-sync replicas than replicas.
func (h partitionHealth) underReplicated() bool { return len(h.p.ISR) < len(h.p.Replicas) }

// unavailable: no leader, or a leader that is not a live broker.
func (h partitionHealth) unavailable() bool { return !h.hasLeader() || !h.live[h.p.Leader] }

// underMinISR: no leader, or fewer in-sync replicas than min.insync.replicas.
func (h partitionHealth) underMinISR() bool {
	return !h.hasLeader() || (h.minISR > 0 && len(h.p.ISR) < h.minISR)
}

// atMinISR: exactly min.insync.replicas in-sync replicas.
func (h partitionHealth) atMinISR() bool { return h.minISR > 0 && len(h.p.ISR) == h.minISR }

// healthy: a live leader and every replica in sync.
func (h partitionHealth) healthy() bool {
	return !h.unavailable() && sameIDs(h.p.ISR, h.p.Replicas)
}

// nonPreferredLeader: a live leader that is not the first (preferred)
// replica.
func (h partitionHealth) nonPreferredLeader() bool {
	return !h.unavailable() && len(h.p.Replicas) > 0 && h.p.Leader != h.p.Replicas[0]
}

// matches reports whether the partition passes filter f.
func (h partitionHealth) matches(f describeFilter) bool {
	switch f {
	case filterNone:
		return true
	case filterUnderReplicated:
		return h.underReplicated()
	case filterUnavailable:
		return h.unavailable()
	case filterUnderMinISR:
		return h.underMinISR()
	case filterAtMinISR:
		return h.atMinISR()
	}
	return false
}

// describeSummary counts partitions by health. The counts overlap: an
// offline partition is usually under-replicated too.
type describeSummary struct {
	Healthy, UnderReplicated, Offline, NonPreferred int
}

func (s describeSummary) String() string {
	return fmt.Sprintf("Partitions: %d healthy, %d under-replicated, %d offline, %d led by a non-preferred replica",
		s.Healthy, s.UnderReplicated, s.Offline, s.NonPreferred)
}

// summarize counts all partitions of topics, whatever the filter.
func summarize(topics []topicDescription, live map[int32]bool) describeSummary {
	var s describeSummary
	for _, t := range topics {
		for _, p := range t.Partitions {
			h := partitionHealth{p: p, minISR: t.MinISR, live: live}
			if h.healthy() {
				s.Healthy++
			}
			if h.underReplicated() {
				s.UnderReplicated++
			}
			if h.unavailable() {
				s.Offline++
			}
			if h.nonPreferredLeader() {
				s.NonPreferred++
			}
		}
	}
	return s
}

// printTopicDescriptions writes the describe output for topics.
//
// As in Kafka, the topic header line is printed only when no partition
// filter is active, and --topics-with-overrides prints only headers, of
// topics that have non-default configs.
func printTopicDescriptions(w io.Writer, topics []topicDescription, opts describeOptions) error {
	bw := bufio.NewWriter(w)
	for _, t := range topics {
		switch opts.Filter {
		case filterNone:
			bw.WriteString(formatTopicHeader(t))
		case filterOverrides:
			if len(t.Configs) > 0 {
				bw.WriteString(formatTopicHeader(t))
			}
			continue
		}
		for _, p := range t.Partitions {
			h := partitionHealth{p: p, minISR: t.MinISR, live: opts.LiveBrokers}
			if h.matches(opts.Filter) {
				bw.WriteString(formatPartitionLine(t.Name, p))
				if opts.Explain != nil {
					bw.WriteString(formatExplanation(t.Name, p, *opts.Explain))
				}
			}
		}
	}
	if opts.Summary {
		bw.WriteString(summarize(topics, opts.LiveBrokers).String())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// formatTopicHeader renders the topic line, newline included.
func formatTopicHeader(t topicDescription) string {
	var b strings.Builder
	b.WriteString("Topic: ")
	b.WriteString(t.Name)
	if t.ID != ([16]byte{}) {
		b.WriteString("\tTopicId: ")
		b.WriteString(formatTopicID(t.ID))
	}
	rf := 0
	if len(t.Partitions) > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	fmt.Fprintf(&b, "\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: ", len(t.Partitions), rf)
	for i, c := range t.Configs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.Name)
		b.WriteByte('=')
		if c.Value == nil {
			b.WriteString("null")
		} else {
			b.WriteString(*c.Value)
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// formatPartitionLine renders one partition line, newline included.
func formatPartitionLine(topic string, p partitionDescription) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\tTopic: %s\tPartition: %d\tLeader: ", topic, p.Partition)
	if p.Leader < 0 {
		b.WriteString("none")
	} else {
		b.WriteString(strconv.Itoa(int(p.Leader)))
	}
	b.WriteString("\tReplicas: ")
	b.WriteString(joinIDs(p.Replicas))
	b.WriteString("\tIsr: ")
	b.WriteString(joinIDs(p.ISR))
	if len(p.Offline) > 0 {
		b.WriteString("\tOffline: ")
		b.WriteString(joinIDs(p.Offline))
	}
	b.WriteByte('\n')
	return b.String()
}

// formatTopicID renders a topic ID the way Kafka's Uuid.toString does:
// URL-safe base64 without padding (22 characters).
func formatTopicID(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// sameIDs reports whether a and b hold the same set of broker IDs.
func sameIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	in := make(map[int32]bool, len(a))
	for _, id := range a {
		in[id] = true
	}
	for _, id := range b {
		if !in[id] {
			return false
		}
	}
	return true
}

// buildTopicDescriptions turns a metadata response and the topics' configs
// into the describe model, sorted by topic name. Topics that failed to load
// are an error. A topic missing from configs gets no Configs and an unknown
// MinISR.
func buildTopicDescriptions(topics kadm.TopicDetails, configs kadm.ResourceConfigs) ([]topicDescription, error) {
	byName := make(map[string]kadm.ResourceConfig, len(configs))
	for _, rc := range configs {
		byName[rc.Name] = rc
	}
	if err := topicLoadError(topics); err != nil {
		return nil, err
	}
	var out []topicDescription
	for _, td := range topics.Sorted() {
		d := topicDescription{Name: td.Topic, ID: td.ID}
		for _, p := range td.Partitions.Sorted() {
			d.Partitions = append(d.Partitions, partitionDescription{
				Partition: p.Partition,
				Leader:    p.Leader,
				Replicas:  p.Replicas,
				ISR:       p.ISR,
				Offline:   p.OfflineReplicas,
			})
		}
		if rc, ok := byName[td.Topic]; ok {
			if rc.Err != nil {
				return nil, fmt.Errorf("configs of topic %q: %w", td.Topic, kafkaErr(rc.Err, rc.ErrMessage))
			}
			var err error
			d.Configs, d.MinISR, err = topicConfigColumns(rc.Configs)
			if err != nil {
				return nil, fmt.Errorf("configs of topic %q: %w", td.Topic, err)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// topicLoadError reports the first topic, by name, that the metadata
// response could not describe.
func topicLoadError(topics kadm.TopicDetails) error {
	for _, td := range topics.Sorted() {
		switch {
		case td.Err == nil:
		case errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("topic %q does not exist", td.Topic)
		default:
			return fmt.Errorf("topic %q: %w", td.Topic, td.Err)
		}
	}
	return nil
}

// topicConfigColumns picks what kafka-topics shows from DescribeConfigs
// entries: every config whose source is not DEFAULT_CONFIG (Kafka's
// ConfigEntry.isDefault), sorted by name, plus min.insync.replicas.
func topicConfigColumns(cfgs []kadm.Config) ([]configEntry, int, error) {
	var entries []configEntry
	minISR := 0
	for _, c := range cfgs {
		if c.Key == minISRConfig && c.Value != nil {
			n, err := strconv.Atoi(*c.Value)
			if err != nil {
				return nil, 0, fmt.Errorf("bad %s %q", minISRConfig, *c.Value)
			}
			minISR = n
		}
		if c.Source == kmsg.ConfigSourceDefaultConfig {
			continue
		}
		entries = append(entries, configEntry{Name: c.Key, Value: c.Value})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, minISR, nil
}
