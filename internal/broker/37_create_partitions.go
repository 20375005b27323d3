package broker

// CreatePartitions (key 37), versions 0–3 (flexible from v2). Count is the
// new total; it must exceed the current one (INVALID_PARTITIONS). A manual
// Assignment gives the replicas of each new partition; otherwise they are
// assigned like a new topic's with the topic's replication factor. The new
// assignments and initial partition states are written in one transaction,
// conditioned on the topic not having changed since it was read. The
// response waits until every broker serves the new partitions (served.go),
// in Later with the connection muted, as a long poll. With an
// authorizer, a topic needs ALTER on it (else TOPIC_AUTHORIZATION_FAILED,
// whether it exists or not).

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleCreatePartitions(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	ctx, cancel := requestContext(ctx, r.TimeoutMillis)
	return protocol.Response{Mute: true, Later: func() kmsg.Response {
		defer cancel()
		return b.addPartitions(ctx, b.authz(req), r)
	}}
}

func (b *Broker) addPartitions(ctx context.Context, az authz, r *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)

	seen := countNames(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
	var extended []servedTopic
	var extendedAt []int // their index in resp.Topics
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		var st servedTopic
		if seen[t.Topic] > 1 {
			err = fmt.Errorf("%w: topic listed more than once", errInvalidRequest)
		} else if !az.topic(kmsg.ACLOperationAlter, t.Topic) {
			err = errTopicAuthorization
		} else if validTopicName(t.Topic) != nil {
			// Looked up without validation, as Kafka's
			// ReplicationControlManager: a topic that does not exist.
			err = fmt.Errorf("%w: %q", coord.ErrTopicNotFound, t.Topic)
		} else if err = guardInternalTopic(t.Topic, "add partitions to"); err == nil {
			st, err = b.createPartitions(ctx, t, r.ValidateOnly)
		}
		if err != nil {
			setCreatePartitionsError(&rt, err)
		} else if !r.ValidateOnly {
			extended = append(extended, st)
			extendedAt = append(extendedAt, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := b.waitServed(ctx, extended); err != nil {
		for _, i := range extendedAt {
			setCreatePartitionsError(&resp.Topics[i], err)
		}
	}
	return resp
}

func setCreatePartitionsError(rt *kmsg.CreatePartitionsResponseTopic, err error) {
	rt.ErrorCode, rt.ErrorMessage = errorAnswer(err)
}

// createPartitions stores the new partitions and returns how every broker
// must show the topic before the request is answered.
func (b *Broker) createPartitions(ctx context.Context, t kmsg.CreatePartitionsRequestTopic, validateOnly bool) (servedTopic, error) {
	brokers := placementBrokers(b.cache.Snapshot())
	update := func(topic *meta.Topic) ([]meta.PartitionState, error) {
		current := int32(len(topic.Partitions))
		if t.Count <= current {
			return nil, fmt.Errorf("%w: topic has %d partitions, asked for %d", errInvalidPartitions, current, t.Count)
		}
		if t.Count-current > maxPartitionsPerRequest {
			return nil, fmt.Errorf("%w: adding more than %d partitions", errInvalidPartitions, maxPartitionsPerRequest)
		}
		var added [][]int32
		if t.Assignment != nil {
			if int32(len(t.Assignment)) != t.Count-current {
				return nil, fmt.Errorf("%w: %d assignments for %d new partitions", errInvalidReplicaAssignment, len(t.Assignment), t.Count-current)
			}
			for _, a := range t.Assignment {
				added = append(added, a.Replicas)
			}
			if err := validateAssignment(added, brokers); err != nil {
				return nil, fmt.Errorf("%w: %v", errInvalidReplicaAssignment, err)
			}
		} else {
			var err error
			if added, err = assignReplicas(brokers, current, t.Count-current, int16(len(topic.Partitions[0]))); err != nil {
				return nil, err
			}
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		topic.Partitions = append(topic.Partitions, added...)
		return initialStates(topic.Name, current, added), nil
	}
	topic, err := b.client.UpdateTopic(ctx, t.Topic, update)
	if validateOnly && errors.Is(err, errValidateOnly) {
		return servedTopic{}, nil
	}
	if err != nil {
		return servedTopic{}, err
	}
	return servedTopic{name: topic.Name, id: topic.ID, partitions: len(topic.Partitions)}, nil
}
