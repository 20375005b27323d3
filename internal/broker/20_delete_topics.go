package broker

// DeleteTopics (key 20), versions 1–6 (flexible from v4). v6 names topics by
// name or id. The topic and its partition states are deleted in one etcd
// transaction, conditioned on the incarnation named (by id, or the one the
// name had when read); every broker then closes and deletes its replicas'
// logs. The response waits until no broker serves the deleted topics
// (served.go), in Later with the connection muted, as a long poll. With
// an authorizer, as Kafka: a name needs DELETE on the topic (else
// TOPIC_AUTHORIZATION_FAILED, whether it exists or not); an id of a topic
// the principal may not DESCRIBE is UNKNOWN_TOPIC_ID, of one it may
// describe but not delete TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDeleteTopics(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	ctx, cancel := requestContext(ctx, r.TimeoutMillis)
	return protocol.Response{Mute: true, Later: func() kmsg.Response {
		defer cancel()
		return b.deleteTopics(ctx, b.authz(req), r)
	}}
}

func (b *Broker) deleteTopics(ctx context.Context, az authz, r *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   meta.TopicID
	}
	var targets []target
	if r.Version >= 6 {
		for _, t := range r.Topics {
			targets = append(targets, target{t.Topic, meta.TopicID(t.TopicID)})
		}
	} else {
		for _, name := range r.TopicNames {
			name := name
			targets = append(targets, target{name: &name})
		}
	}
	// As ControllerApis.deleteTopics, before any lookup: a topic given by
	// both name and id, or by neither, and every name or id given more
	// than once, is INVALID_REQUEST.
	names, ids := map[string]int{}, map[meta.TopicID]int{}
	for _, t := range targets {
		switch {
		case t.name != nil && t.id.IsZero():
			names[*t.name]++
		case t.name == nil && !t.id.IsZero():
			ids[t.id]++
		}
	}
	invalid := func(t target, msg string) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, &msg
		resp.Topics = append(resp.Topics, rt)
	}
	// Ids are looked up in the newest metadata this broker has; the
	// delete itself checks the id against etcd.
	s := b.cache.Snapshot()
	var deleted []servedTopic
	var deletedAt []int // their index in resp.Topics
	for _, t := range targets {
		switch {
		case t.name != nil && !t.id.IsZero():
			invalid(t, "a topic must be named by its name or its id, not both")
			continue
		case t.name == nil && t.id.IsZero():
			invalid(t, "a topic must be named by its name or its id")
			continue
		case t.name != nil && names[*t.name] != 1:
			// Answered once (Kafka keeps a set of the duplicates).
			if names[*t.name] > 1 {
				invalid(t, "duplicate topic name")
				names[*t.name] = 0
			}
			continue
		case !t.id.IsZero() && ids[t.id] != 1:
			if ids[t.id] > 1 {
				invalid(t, "duplicate topic id")
				ids[t.id] = 0
			}
			continue
		}
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		name := ""
		if t.name != nil {
			name = *t.name
			if !az.topic(kmsg.ACLOperationDelete, name) {
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			// Names are looked up without validating them: an invalid
			// one is a topic that does not exist.
			if validTopicName(name) != nil {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
		} else {
			for n, vt := range s.Topics {
				if vt.Topic.ID == t.id {
					name = n
					rt.Topic = &n
				}
			}
			if name != "" && !az.topic(kmsg.ACLOperationDescribe, name) {
				name, rt.Topic = "", nil // not to be told it exists
			}
			if name == "" {
				rt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			if !az.topic(kmsg.ACLOperationDelete, name) {
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
		}
		err := guardInternalTopic(name, "delete")
		var id meta.TopicID
		if err == nil {
			id, err = b.client.DeleteTopicID(ctx, name, t.id)
		}
		switch {
		case err == nil:
			rt.TopicID = id
			deleted = append(deleted, servedTopic{name: name, id: id, deleted: true})
			deletedAt = append(deletedAt, len(resp.Topics))
		case t.name == nil && errors.Is(err, coord.ErrTopicNotFound):
			rt.Topic = nil
			rt.ErrorCode = kerr.UnknownTopicID.Code
		default:
			setDeleteTopicError(&rt, err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := b.waitServed(ctx, deleted); err != nil {
		for _, i := range deletedAt {
			setDeleteTopicError(&resp.Topics[i], err)
		}
	}
	return resp
}

func setDeleteTopicError(rt *kmsg.DeleteTopicsResponseTopic, err error) {
	rt.ErrorCode, rt.ErrorMessage = errorAnswer(err)
}
