package broker

// CreateTopics (key 19), versions 2–7 (flexible from v5).
//
// NumPartitions / ReplicationFactor of -1 take num.partitions /
// default.replication.factor (v4+ semantics, accepted from every version).
// A manual ReplicaAssignment excludes both (INVALID_REQUEST otherwise) and
// must name registered brokers, each once per partition, with the same
// replica count everywhere (INVALID_REPLICA_ASSIGNMENT), as in Kafka's
// ReplicationControlManager. Configs are validated against
// samsa's topic configs (INVALID_CONFIG). v5+ returns the resulting
// partition count, replication factor and effective configs; v7 the topic
// id. ValidateOnly checks everything and writes nothing. The topic and the
// initial state of each partition are written to etcd in one transaction;
// the response waits until every broker serves the new topics (served.go),
// in Later with the connection muted, as a long poll. With an
// authorizer, a topic needs CREATE on the cluster or on itself (else
// TOPIC_AUTHORIZATION_FAILED), and its configs are returned only with
// DESCRIBE_CONFIGS on it (else ConfigErrorCode TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleCreateTopics(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	ctx, cancel := requestContext(ctx, r.TimeoutMillis)
	return protocol.Response{Mute: true, Later: func() kmsg.Response {
		defer cancel()
		return b.createTopics(ctx, b.authz(req), r)
	}}
}

func (b *Broker) createTopics(ctx context.Context, az authz, r *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	mayCreateAny := az.cluster(kmsg.ACLOperationCreate)

	seen := countNames(r.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic })
	var created []servedTopic
	var createdAt []int // their index in resp.Topics
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if seen[t.Topic] > 1 {
			setCreateTopicError(&rt, kerr.InvalidRequest.Code, "topic listed more than once in the request")
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if !mayCreateAny && !az.topic(kmsg.ACLOperationCreate, t.Topic) {
			setCreateTopicError(&rt, kerr.TopicAuthorizationFailed.Code, "CreateTopics needs CREATE on the cluster or the topic")
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		configs := map[string]string{}
		for _, c := range t.Configs {
			if c.Value != nil {
				configs[c.Name] = *c.Value
			}
		}
		var assignment [][]int32
		if len(t.ReplicaAssignment) > 0 {
			assignment = make([][]int32, len(t.ReplicaAssignment))
			ok := true
			for _, a := range t.ReplicaAssignment {
				if a.Partition < 0 || int(a.Partition) >= len(assignment) || assignment[a.Partition] != nil {
					ok = false
					break
				}
				assignment[a.Partition] = a.Replicas
			}
			if !ok {
				setCreateTopicError(&rt, kerr.InvalidReplicaAssignment.Code, "replica assignment partitions must be 0..n-1, each once")
				resp.Topics = append(resp.Topics, rt)
				continue
			}
		}
		topic, err := b.prepareTopic(t.Topic, t.NumPartitions, t.ReplicationFactor, assignment, configs)
		if err == nil && !r.ValidateOnly {
			err = b.client.CreateTopic(ctx, topic, initialStates(topic.Name, 0, topic.Partitions))
		}
		if err == nil && r.ValidateOnly {
			if _, exists := b.cache.Snapshot().Topics[t.Topic]; exists {
				err = errTopicExists(t.Topic)
			}
		}
		if err != nil {
			setCreateTopicError(&rt, errorCode(err), err.Error())
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = topic.ID
		rt.NumPartitions = int32(len(topic.Partitions))
		rt.ReplicationFactor = int16(len(topic.Partitions[0]))
		if az.topic(kmsg.ACLOperationDescribeConfigs, t.Topic) {
			for _, v := range effectiveTopicConfigs(topic.Configs, b.cfg.TopicDefaults) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				value := v.value
				c.Name, c.Value, c.Source = v.def.name, &value, int8(v.source)
				rt.Configs = append(rt.Configs, c)
			}
		} else {
			rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		if !r.ValidateOnly {
			created = append(created, servedTopic{name: topic.Name, id: topic.ID, partitions: len(topic.Partitions)})
			createdAt = append(createdAt, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := b.waitServed(ctx, created); err != nil {
		for _, i := range createdAt {
			rt := &resp.Topics[i]
			setCreateTopicError(rt, errorCode(err), err.Error())
			rt.TopicID, rt.Configs = [16]byte{}, nil
		}
	}
	return resp
}

func setCreateTopicError(rt *kmsg.CreateTopicsResponseTopic, code int16, msg string) {
	rt.ErrorCode = code
	rt.ErrorMessage = &msg
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
}

// requestContext bounds an admin request by its TimeoutMillis (at least a
// second, at most a minute, so a bad value neither fails at once nor hangs).
func requestContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := time.Duration(timeoutMillis) * time.Millisecond
	d = max(d, time.Second)
	d = min(d, time.Minute)
	return context.WithTimeout(ctx, d)
}
