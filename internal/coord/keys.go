package coord

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/meta"
)

// Relative key names under the cluster prefix (see doc.go).
const (
	keyClusterID   = "cluster-id"
	keyProducerIDs = "producer-ids"
	keyController  = "controller"
	dirBrokers     = "brokers/"
	dirTopics      = "topics/"
	dirPartitions  = "partitions/"
	dirHeartbeats  = "heartbeats/"
	dirScram       = "scram/"
	dirACLs        = "acls/"
	dirQuotas      = "quotas/"
	// keyScramFakeKey holds the cluster's secret for unknown users' fake
	// SCRAM salts (ScramFakeKey).
	keyScramFakeKey = "scram-fake-key"
)

// maxNameLen is Kafka's limit on topic name length.
const maxNameLen = 249

// keyspace builds the absolute etcd keys of one samsa cluster.
type keyspace struct {
	prefix string // "/samsa/<cluster>/"
	// history is the prefix of the ISR history, outside prefix so that
	// the metadata cache, which reads and watches all of prefix, never
	// carries it: "/samsa-isr-history/<cluster>/".
	history string
}

func newKeyspace(cluster string) keyspace {
	return keyspace{prefix: "/samsa/" + cluster + "/", history: "/samsa-isr-history/" + cluster + "/"}
}

func (k keyspace) abs(rel string) string              { return k.prefix + rel }
func (k keyspace) clusterID() string                  { return k.prefix + keyClusterID }
func (k keyspace) producerIDs() string                { return k.prefix + keyProducerIDs }
func (k keyspace) brokers() string                    { return k.prefix + dirBrokers }
func (k keyspace) topic(name string) string           { return k.prefix + relTopic(name) }
func (k keyspace) partitionsOf(topic string) string   { return k.prefix + dirPartitions + topic + "/" }
func (k keyspace) partition(t string, p int32) string { return k.prefix + relPartition(t, p) }

// isrHistoryOf is the ISR history of a topic's partitions, by topic id
// (a re-created topic of the same name starts afresh); of one partition
// with p >= 0.
func (k keyspace) isrHistoryOf(id meta.TopicID, p int32) string {
	if p < 0 {
		return k.history + id.String() + "/"
	}
	return k.history + id.String() + "/" + strconv.FormatInt(int64(p), 10) + "/"
}

// isrHistoryEntry is one change of a partition's ISR history: its keys
// sort by partition epoch (zero-padded to the ten digits of an int32).
func (k keyspace) isrHistoryEntry(id meta.TopicID, p, partitionEpoch int32) string {
	return fmt.Sprintf("%s%010d", k.isrHistoryOf(id, p), max(partitionEpoch, 0))
}

func relBroker(id int32) string    { return dirBrokers + strconv.FormatInt(int64(id), 10) }
func relHeartbeat(id int32) string { return dirHeartbeats + strconv.FormatInt(int64(id), 10) }
func relTopic(name string) string  { return dirTopics + name }
func relPartition(t string, p int32) string {
	return dirPartitions + t + "/" + strconv.FormatInt(int64(p), 10)
}

// keyKind classifies a key of the cluster prefix.
type keyKind int

const (
	kindOther keyKind = iota
	kindClusterID
	kindBroker
	kindTopic
	kindPartition
	kindController
	kindHeartbeat
	kindACL
	kindQuota
)

// parsedKey is a key of the cluster prefix taken apart.
type parsedKey struct {
	kind      keyKind
	broker    int32
	topic     string
	partition int32
	acl       string // the ACL's key below acls/, or the quota's below quotas/
}

// parse classifies an absolute key. Keys it does not know (producer-ids,
// anything malformed) come back as kindOther.
func (k keyspace) parse(key string) parsedKey {
	rel, ok := strings.CutPrefix(key, k.prefix)
	if !ok {
		return parsedKey{}
	}
	switch {
	case rel == keyClusterID:
		return parsedKey{kind: kindClusterID}
	case rel == keyController:
		return parsedKey{kind: kindController}
	case strings.HasPrefix(rel, dirBrokers):
		id, err := strconv.ParseInt(rel[len(dirBrokers):], 10, 32)
		if err != nil || id < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: kindBroker, broker: int32(id)}
	case strings.HasPrefix(rel, dirHeartbeats):
		id, err := strconv.ParseInt(rel[len(dirHeartbeats):], 10, 32)
		if err != nil || id < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: kindHeartbeat, broker: int32(id)}
	case strings.HasPrefix(rel, dirACLs):
		id := rel[len(dirACLs):]
		if id == "" || strings.Contains(id, "/") {
			return parsedKey{}
		}
		return parsedKey{kind: kindACL, acl: id}
	case strings.HasPrefix(rel, dirQuotas):
		id := rel[len(dirQuotas):]
		if id == "" || strings.Contains(id, "/") {
			return parsedKey{}
		}
		return parsedKey{kind: kindQuota, acl: id}
	case strings.HasPrefix(rel, dirTopics):
		name := rel[len(dirTopics):]
		if validName(name) != nil {
			return parsedKey{}
		}
		return parsedKey{kind: kindTopic, topic: name}
	case strings.HasPrefix(rel, dirPartitions):
		topic, num, ok := strings.Cut(rel[len(dirPartitions):], "/")
		if !ok || validName(topic) != nil {
			return parsedKey{}
		}
		p, err := strconv.ParseInt(num, 10, 32)
		if err != nil || p < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: kindPartition, topic: topic, partition: int32(p)}
	}
	return parsedKey{}
}

// validName checks a topic name against Kafka's rules (1..249 characters
// of [a-zA-Z0-9._-], not "." or ".."). Besides matching Kafka, it keeps
// '/' out of the keyspace, so every key parses back unambiguously.
func validName(name string) error {
	if name == "" || len(name) > maxNameLen || name == "." || name == ".." {
		return fmt.Errorf("%w: topic name %q", ErrInvalid, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q has illegal character %q", ErrInvalid, name, c)
		}
	}
	return nil
}

// validCluster checks a cluster name: one non-empty key segment.
func validCluster(name string) error {
	if name == "" || strings.ContainsAny(name, "/") || len(name) > 255 {
		return fmt.Errorf("%w: cluster name %q", ErrInvalid, name)
	}
	return nil
}
