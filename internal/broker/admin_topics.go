package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/txn"
)

// Errors of admin requests; errorCode maps them, the message goes to the
// client.
var (
	errInvalidTopic             = errors.New("broker: invalid topic")
	errInvalidConfig            = errors.New("broker: invalid config")
	errInvalidPartitions        = errors.New("broker: invalid partitions")
	errInvalidReplicaAssignment = errors.New("broker: invalid replica assignment")
	errInvalidRequest           = errors.New("broker: invalid request")
	// errValidateOnly aborts a metadata update once validated.
	errValidateOnly = errors.New("broker: validate only")
)

// createTopic creates a topic (partitions/rf -1: the broker defaults;
// assignment nil: assigned by assignReplicas). It returns once the creation
// is stored, before any broker serves the topic.
func (b *Broker) createTopic(ctx context.Context, name string, partitions int32, rf int16, assignment [][]int32, configs map[string]string) error {
	t, err := b.prepareTopic(name, partitions, rf, assignment, configs)
	if err != nil {
		return err
	}
	return b.client.CreateTopic(ctx, t, initialStates(name, 0, t.Partitions))
}

// prepareTopic validates a topic creation and builds the topic definition.
func (b *Broker) prepareTopic(name string, partitions int32, rf int16, assignment [][]int32, configs map[string]string) (meta.Topic, error) {
	var t meta.Topic
	if err := validTopicName(name); err != nil {
		return t, fmt.Errorf("%w: %v", errInvalidTopic, err)
	}
	for k, v := range configs {
		if err := validateTopicConfig(k, v); err != nil {
			return t, fmt.Errorf("%w: %v", errInvalidConfig, err)
		}
	}
	brokers := placementBrokers(b.cache.Snapshot())
	if assignment != nil {
		if partitions != -1 || rf != -1 {
			return t, fmt.Errorf("%w: both a replica assignment and a partition count or replication factor were given", errInvalidRequest)
		}
		if err := validateAssignment(assignment, brokers); err != nil {
			return t, fmt.Errorf("%w: %v", errInvalidReplicaAssignment, err)
		}
	} else {
		if partitions == -1 {
			partitions = b.cfg.NumPartitions
		}
		if rf == -1 {
			rf = b.cfg.DefaultReplicationFactor
		}
		if partitions < 1 {
			return t, fmt.Errorf("%w: partition count %d must be positive", errInvalidPartitions, partitions)
		}
		if partitions > maxPartitionsPerRequest {
			return t, fmt.Errorf("%w: partition count %d exceeds %d", errInvalidPartitions, partitions, maxPartitionsPerRequest)
		}
		var err error
		if assignment, err = assignReplicas(brokers, 0, partitions, rf); err != nil {
			return t, err
		}
	}
	t = meta.Topic{Name: name, ID: meta.NewTopicID(), Partitions: assignment}
	if configs = pinTopicDefaults(configs, b.cfg.TopicDefaults); len(configs) > 0 {
		t.Configs = configs
	}
	return t, nil
}

// maxPartitionsPerRequest bounds what one request can make a broker open.
const maxPartitionsPerRequest = 10000

func errTopicExists(name string) error { return fmt.Errorf("%w: %s", coord.ErrTopicExists, name) }

// waitApplied returns once this broker has applied the metadata writes it
// made so far: its cache shows them and its replicas match them. Admin
// requests answer only then, so a client that produces right after
// CreateTopics finds the partitions open instead of getting
// NOT_LEADER_OR_FOLLOWER (and franz-go backing off for its metadata min
// age).
func (b *Broker) waitApplied(ctx context.Context) error {
	rev := b.client.LastRevision()
	if err := b.cache.WaitRevision(ctx, rev); err != nil {
		return err
	}
	return b.partitions.waitReconciled(ctx, rev)
}

// countNames counts how often each topic name appears in a request's list;
// Kafka answers a name listed more than once with INVALID_REQUEST.
func countNames[T any](items []T, name func(T) string) map[string]int {
	n := make(map[string]int, len(items))
	for _, it := range items {
		n[name(it)]++
	}
	return n
}

// guardInternalTopic refuses what would destroy a coordinator's topic
// (__consumer_offsets, __transaction_state): a client's write into it
// (Kafka refuses appends to internal topics with INVALID_TOPIC_EXCEPTION),
// its deletion, and more partitions (groups and transactional ids are
// placed on its partitions by a hash of their name, so a new partition
// count moves them away from their state).
func guardInternalTopic(topic, what string) error {
	if !isInternalTopic(topic) {
		return nil
	}
	return fmt.Errorf("%w: cannot %s the internal topic %s", errInvalidTopic, what, topic)
}

// isInternalTopic reports whether topic is one of the coordinators'.
func isInternalTopic(topic string) bool {
	return topic == group.OffsetsTopic || topic == txn.StateTopic
}
