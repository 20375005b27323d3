package broker

// Metadata (key 3), versions 0–12 (flexible from v9).
//
// Brokers are the live registrations; the controller id is described in
// controllerID. Per partition: leader, leader epoch (v7+), replicas, ISR and
// offline replicas (v5+: assigned replicas whose broker is not registered).
// Topic ids from v10; v10+ lookups by id. All topics: a null list (v1+) or
// an empty one (v0). A topic named more than once is described once, as by
// Kafka. Unknown topics are created when auto.create.topics.enable
// is set and the request allows it (v4+; always for older versions); as in
// Kafka, the response then names them with LEADER_NOT_AVAILABLE and no
// partitions, and a later request describes them. Everything is answered
// from the broker's view (Broker.view): a topic is absent or complete.
//
// With an authorizer, as Kafka: a request for all topics lists only those
// the principal may DESCRIBE; a topic named (or looked up by id) without
// DESCRIBE gets TOPIC_AUTHORIZATION_FAILED and nothing else (by id: no
// name); an unknown topic is auto-created only with CREATE on the cluster
// or the topic, else TOPIC_AUTHORIZATION_FAILED. The authorized operations
// bit fields (v8+, KIP-430) are filled when asked for: without an
// authorizer, every operation the resource type supports.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleMetadata(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	s := b.view()

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	// Topic ids are v12+ (KafkaApis.handleTopicMetadataRequest): an older
	// request naming one, or leaving a name null, is INVALID_REQUEST on
	// every topic it asked for, each echoed.
	if !all && r.Version < 12 && slices.ContainsFunc(r.Topics, func(t kmsg.MetadataRequestTopic) bool {
		return t.Topic == nil || t.TopicID != [16]byte{}
	}) {
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return reply(resp)
	}
	az := b.authz(req)
	var names []string
	unknownIDs := []meta.TopicID{}
	byIDOnly := map[string]bool{} // names the request gave only an id of
	if all {
		for name := range s.Topics {
			if az.topic(kmsg.ACLOperationDescribe, name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
	} else {
		byID := map[meta.TopicID]string{}
		for name, t := range s.Topics {
			byID[t.Topic.ID] = name
		}
		// Each topic once, however often it is named (Kafka keeps a
		// set): a request naming one topic thousands of times must not
		// get a response thousands of times its size.
		seen := map[string]bool{}
		seenIDs := map[meta.TopicID]bool{}
		for _, t := range r.Topics {
			switch {
			case t.Topic != nil:
				if !seen[*t.Topic] {
					seen[*t.Topic] = true
					names = append(names, *t.Topic)
				}
				delete(byIDOnly, *t.Topic)
			case t.TopicID != [16]byte{}:
				id := meta.TopicID(t.TopicID)
				if name, ok := byID[id]; ok {
					if !seen[name] {
						seen[name] = true
						names = append(names, name)
						byIDOnly[name] = true
					}
				} else if !seenIDs[id] {
					seenIDs[id] = true
					unknownIDs = append(unknownIDs, id)
				}
			}
		}
	}

	autoCreate := b.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	// As Kafka's AutoTopicCreationManager: an unknown topic is created and
	// answered LEADER_NOT_AVAILABLE without partitions; the client asks
	// again and finds it once this broker serves it.
	creating := map[string]bool{}
	denied := map[string]bool{}
	for _, name := range names {
		if !all && !az.topic(kmsg.ACLOperationDescribe, name) {
			denied[name] = true
		}
	}
	if !all && autoCreate {
		newest := b.cache.Snapshot()
		mayCreateAny := az.cluster(kmsg.ACLOperationCreate)
		for _, name := range names {
			if _, ok := s.Topics[name]; ok || denied[name] || validTopicName(name) != nil {
				continue
			}
			// A topic this broker does not serve yet but etcd has is being
			// created: it needs no CREATE to be described as such.
			_, stored := newest.Topics[name]
			if !stored && !mayCreateAny && !az.topic(kmsg.ACLOperationCreate, name) {
				denied[name] = true
				continue
			}
			if !stored {
				err := b.createTopic(ctx, name, -1, -1, nil, nil)
				if err != nil && errorCode(err) != kerr.TopicAlreadyExists.Code {
					b.logger.Warn("auto-create topic failed", "topic", name, "err", err)
					continue
				}
			}
			creating[name] = true
		}
	}

	listed := map[int32]bool{} // the brokers the client is given an address for
	for _, id := range liveBrokers(s) {
		br := s.Brokers[id].Broker
		ep, ok := endpointFor(br, req)
		if !ok {
			continue
		}
		listed[id] = true
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = br.ID, ep.Host, ep.Port
		if br.Rack != "" {
			rack := br.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	clusterID := s.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = controllerID(s, listed)
	if r.Version >= 8 && r.Version <= 10 && r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0 // as Kafka, without DESCRIBE on the cluster
		if az.cluster(kmsg.ACLOperationDescribe) {
			resp.AuthorizedOperations = az.authorizedOps(kmsg.ACLResourceTypeCluster, meta.ClusterResourceName, clusterOps)
		}
	}

	for _, name := range names {
		name := name
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = &name
		vt, ok := s.Topics[name]
		switch {
		case denied[name]:
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if byIDOnly[name] {
				rt.Topic, rt.TopicID = nil, s.Topics[name].Topic.ID
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		case creating[name]:
			rt.ErrorCode = kerr.LeaderNotAvailable.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		case !ok:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if validTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = vt.Topic.ID
		rt.IsInternal = isInternalTopic(name)
		rt.Partitions = partitionMetadata(s, vt, listed, r.Version)
		if r.Version >= 8 && r.IncludeTopicAuthorizedOperations {
			rt.AuthorizedOperations = az.authorizedOps(kmsg.ACLResourceTypeTopic, name, topicOps)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, id := range unknownIDs {
		rt := kmsg.NewMetadataResponseTopic()
		rt.TopicID = id
		rt.ErrorCode = kerr.UnknownTopicID.Code
		resp.Topics = append(resp.Topics, rt)
	}
	return reply(resp)
}

// partitionMetadata describes every partition of a topic.
//
// A leader the client was given no address for (it lacks the client's
// listener) is reported as none, as Kafka does: LISTENER_NOT_FOUND from
// v6, LEADER_NOT_AVAILABLE before.
func partitionMetadata(s *coord.Snapshot, vt coord.VersionedTopic, listed map[int32]bool, version int16) []kmsg.MetadataResponseTopicPartition {
	states := s.Partitions[vt.Topic.Name]
	out := make([]kmsg.MetadataResponseTopicPartition, 0, len(vt.Topic.Partitions))
	for i, replicas := range vt.Topic.Partitions {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = int32(i)
		p.Replicas = slices.Clone(replicas)
		for _, r := range replicas {
			if _, alive := s.Brokers[r]; !alive {
				p.OfflineReplicas = append(p.OfflineReplicas, r)
			}
		}
		if i >= len(states) || !states[i].Exists() {
			p.ErrorCode = kerr.LeaderNotAvailable.Code
			p.Leader, p.LeaderEpoch = -1, -1
			p.ISR = []int32{}
			out = append(out, p)
			continue
		}
		st := states[i].PartitionState
		p.Leader, p.LeaderEpoch, p.ISR = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR)
		_, alive := s.Brokers[st.Leader]
		switch {
		case st.Leader == meta.NoLeader || !alive:
			p.ErrorCode = kerr.LeaderNotAvailable.Code
			p.Leader = -1
		case !listed[st.Leader]:
			p.ErrorCode = kerr.LeaderNotAvailable.Code
			if version >= 6 {
				p.ErrorCode = kerr.ListenerNotFound.Code
			}
			p.Leader = -1
		}
		if p.OfflineReplicas == nil {
			p.OfflineReplicas = []int32{}
		}
		out = append(out, p)
	}
	return out
}
