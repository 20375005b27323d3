package broker

// DeleteTopics (key 20), versions 1–6 (flexible from v4). v6 names topics by
// name or id. The topic and its partition states are deleted in one etcd
// transaction; every broker then closes and deletes its replicas' logs. The
// response waits until no broker serves the deleted topics (served.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDeleteTopics(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := requestContext(ctx, r.TimeoutMillis)
	defer cancel()

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
	s := b.view()
	var deleted []servedTopic
	var deletedAt []int // their index in resp.Topics
	for _, t := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		name := ""
		if t.name != nil {
			name = *t.name
			if vt, ok := s.Topics[name]; ok {
				rt.TopicID = vt.Topic.ID
			}
		} else {
			for n, vt := range s.Topics {
				if vt.Topic.ID == t.id {
					name = n
					rt.Topic = &n
				}
			}
			if name == "" {
				rt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
		}
		err := guardOffsetsTopic(name, "delete")
		if err == nil {
			err = b.client.DeleteTopic(ctx, name)
		}
		if err != nil {
			setDeleteTopicError(&rt, err)
		} else {
			deleted = append(deleted, servedTopic{name: name, id: meta.TopicID(rt.TopicID), deleted: true})
			deletedAt = append(deletedAt, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := b.waitServed(ctx, deleted); err != nil {
		for _, i := range deletedAt {
			setDeleteTopicError(&resp.Topics[i], err)
		}
	}
	return reply(resp)
}

func setDeleteTopicError(rt *kmsg.DeleteTopicsResponseTopic, err error) {
	rt.ErrorCode = errorCode(err)
	msg := err.Error()
	rt.ErrorMessage = &msg
}
