package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/replica"
)

// localLeader returns this broker's replica of a partition it leads, or the
// error code to answer: UNKNOWN_TOPIC_OR_PARTITION when the metadata has no
// such partition, NOT_LEADER_OR_FOLLOWER when it is not led here or the
// replica here belongs to an older incarnation of the topic (deleted and
// re-created under the same name, not yet reconciled), so a request can
// never reach the wrong log.
func (b *Broker) localLeader(s *coord.Snapshot, topic string, partition int32) (*localPartition, int16) {
	vt, ok := s.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(vt.Topic.Partitions) {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	lp := b.partitions.get(topic, partition)
	if lp == nil || lp.topicID != vt.Topic.ID || lp.Role() != replica.RoleLeader {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return lp, 0
}

// knownPartition tells whether the metadata has a partition: what Kafka's
// KafkaApis checks (metadataCache.getPartitionInfo) before it hands the
// partitions of an OffsetCommit or OffsetDelete to the group coordinator.
func knownPartition(s *coord.Snapshot, topic string, partition int32) bool {
	vt, ok := s.Topics[topic]
	return ok && partition >= 0 && int(partition) < len(vt.Topic.Partitions)
}
