package main

// Pure parsers for flag values, shared by the commands and unit tested in
// flags_test.go.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// parseBootstrap splits a comma-separated broker list.
func parseBootstrap(s string) ([]string, error) {
	var seeds []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			seeds = append(seeds, part)
		}
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("--bootstrap-server is empty")
	}
	return seeds, nil
}

// parseConfigPairs parses repeated key=value flags. The value is everything
// after the first '=' and may be empty; a key may appear only once.
func parseConfigPairs(pairs []string) (map[string]*string, error) {
	out := make(map[string]*string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid config %q: want key=value", p)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("config %q given more than once", k)
		}
		out[k] = &v
	}
	return out, nil
}

// buildAlterConfigs turns --config key=value and --delete-config key flags
// into incremental alterations, sorted by key so requests are reproducible.
func buildAlterConfigs(set, del []string) ([]kadm.AlterConfig, error) {
	sets, err := parseConfigPairs(set)
	if err != nil {
		return nil, err
	}
	var alts []kadm.AlterConfig
	deleted := make(map[string]bool, len(del))
	for _, k := range del {
		k = strings.TrimSpace(k)
		if k == "" || strings.Contains(k, "=") {
			return nil, fmt.Errorf("invalid --delete-config %q: want a config name", k)
		}
		if _, both := sets[k]; both {
			return nil, fmt.Errorf("config %q is both set and deleted", k)
		}
		if deleted[k] {
			continue
		}
		deleted[k] = true
		alts = append(alts, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	for k, v := range sets {
		alts = append(alts, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
	}
	sort.Slice(alts, func(i, j int) bool { return alts[i].Name < alts[j].Name })
	return alts, nil
}

// parseAcks maps --acks to franz-go's acks setting.
func parseAcks(s string) (kgo.Acks, error) {
	switch strings.ToLower(s) {
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	case "1", "leader":
		return kgo.LeaderAck(), nil
	case "0", "none":
		return kgo.NoAck(), nil
	}
	return kgo.Acks{}, fmt.Errorf("invalid --acks %q: want all, 1 or 0", s)
}

// parseCompression maps --compression to a franz-go codec.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("invalid --compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// startOffset is a parsed consume --offset.
type startOffset struct {
	// kind is "earliest", "latest" or "exact".
	kind string
	// at is the offset when kind is "exact".
	at int64
}

// parseStartOffset parses --offset: earliest, latest or a non-negative
// offset.
func parseStartOffset(s string) (startOffset, error) {
	switch strings.ToLower(s) {
	case "earliest", "beginning":
		return startOffset{kind: "earliest"}, nil
	case "latest", "end":
		return startOffset{kind: "latest"}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return startOffset{}, fmt.Errorf("invalid --offset %q: want earliest, latest or an offset >= 0", s)
	}
	return startOffset{kind: "exact", at: n}, nil
}

// kgoOffset converts to a franz-go offset.
func (o startOffset) kgoOffset() kgo.Offset {
	switch o.kind {
	case "earliest":
		return kgo.NewOffset().AtStart()
	case "exact":
		return kgo.NewOffset().At(o.at)
	default:
		return kgo.NewOffset().AtEnd()
	}
}

// splitKeyValue splits one input line of `produce --key-separator` into key
// and value at the first separator.
func splitKeyValue(line, sep string) (key, value []byte, err error) {
	k, v, ok := strings.Cut(line, sep)
	if !ok {
		return nil, nil, fmt.Errorf("no key separator %q in line %q", sep, line)
	}
	return []byte(k), []byte(v), nil
}

// topicPartitions is a parsed --topic of the group commands: a topic and
// optionally some of its partitions.
type topicPartitions struct {
	Topic string
	// Partitions are sorted and distinct; nil means every partition.
	Partitions []int32
}

// parseTopicPartitions parses --topic T or --topic T:0,1,2 as
// kafka-consumer-groups does.
func parseTopicPartitions(s string) (topicPartitions, error) {
	topic, list, hasList := strings.Cut(s, ":")
	topic = strings.TrimSpace(topic)
	if topic == "" {
		return topicPartitions{}, fmt.Errorf("invalid --topic %q: want a topic name, optionally followed by :partition,partition...", s)
	}
	tp := topicPartitions{Topic: topic}
	if !hasList {
		return tp, nil
	}
	for _, part := range strings.Split(list, ",") {
		p, err := strconv.ParseInt(strings.TrimSpace(part), 10, 32)
		if err != nil || p < 0 {
			return topicPartitions{}, fmt.Errorf("invalid --topic %q: partition %q is not a number >= 0", s, part)
		}
		tp.Partitions = append(tp.Partitions, int32(p))
	}
	slices.Sort(tp.Partitions)
	tp.Partitions = slices.Compact(tp.Partitions)
	return tp, nil
}

// datetimeLayouts are the accepted --to-datetime forms: RFC 3339 (with a
// zone, optional fraction), and kafka-consumer-groups' zone-less
// YYYY-MM-DDTHH:mm:SS[.sss], read in the local time zone as Kafka does.
var datetimeLayouts = []struct {
	layout string
	zoned  bool
}{
	{time.RFC3339Nano, true},
	{"2006-01-02T15:04:05.999999999Z0700", true},
	{"2006-01-02T15:04:05.999999999", false},
}

// parseDatetime parses --to-datetime; zone-less times are in loc.
func parseDatetime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range datetimeLayouts {
		var t time.Time
		var err error
		if l.zoned {
			t, err = time.Parse(l.layout, s)
		} else {
			t, err = time.ParseInLocation(l.layout, s, loc)
		}
		if err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid --to-datetime %q: want YYYY-MM-DDTHH:mm:SS[.sss] with an optional zone (Z, +01:00), e.g. 2026-01-02T15:04:05Z", s)
}
