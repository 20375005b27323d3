package broker

// OffsetFetch (key 9), versions 1–8 (flexible from v6). Up to v7 one group
// per request; v8 (KIP-709) asks for several groups at once, each answered
// as its own v7 request would be, with its error code per group (a group
// this broker does not coordinate gets NOT_COORDINATOR while the others are
// served). Topics null (v2+) asks for every committed partition.
// RequireStable (v7+) changes nothing: there are no transactions, and no
// offset is served before it is committed. The offsets are read as the
// request arrives; unless they are known to be committed, the answer waits
// for their commit (up to offsets.commit.timeout.ms, then
// UNSTABLE_OFFSET_COMMIT from v7, COORDINATOR_LOAD_IN_PROGRESS before).
//
// With an authorizer, as Kafka: a group the principal may not DESCRIBE
// gets GROUP_AUTHORIZATION_FAILED (on each partition asked for in v1,
// which has no group error code); a topic asked for without DESCRIBE on it
// gets TOPIC_AUTHORIZATION_FAILED on each partition, offset -1; when all
// topics are asked for, those without DESCRIBE are left out.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	if r.Version < 8 {
		wait := b.startFetchOffsets(b.authz(req), r)
		return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
	}
	// Every group's offsets are read now, in request order, as separate
	// requests would read them; the answer waits for all of them.
	az := b.authz(req)
	waits := make([]func(context.Context) *kmsg.OffsetFetchResponse, len(r.Groups))
	for i, g := range r.Groups {
		one := kmsg.NewPtrOffsetFetchRequest()
		one.Version, one.Group, one.RequireStable = r.Version, g.Group, r.RequireStable
		if g.Topics != nil {
			one.Topics = make([]kmsg.OffsetFetchRequestTopic, 0, len(g.Topics))
			for _, t := range g.Topics {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = t.Topic, t.Partitions
				one.Topics = append(one.Topics, rt)
			}
		}
		waits[i] = b.startFetchOffsets(az, one)
	}
	return protocol.Response{Later: func() kmsg.Response {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		for i, wait := range waits {
			one := wait(ctx)
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = r.Groups[i].Group, one.ErrorCode
			for _, t := range one.Topics {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
					rp.Metadata, rp.ErrorCode = p.Metadata, p.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}}
}

// startFetchOffsets starts one group's OffsetFetch (a v1–v7 request, or
// one group of a v8 one) with the authorization checks of the file
// comment.
func (b *Broker) startFetchOffsets(az authz, r *kmsg.OffsetFetchRequest) func(context.Context) *kmsg.OffsetFetchResponse {
	if !az.group(kmsg.ACLOperationDescribe, r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		if r.Version < 2 {
			resp.Topics = offsetFetchRefused(r.Topics, kerr.GroupAuthorizationFailed.Code)
		}
		return func(context.Context) *kmsg.OffsetFetchResponse { return resp }
	}
	if !az.enabled() {
		return b.groups.StartFetchOffsets(r)
	}
	var denied []kmsg.OffsetFetchRequestTopic
	if r.Topics != nil {
		allowed := *r
		allowed.Topics = make([]kmsg.OffsetFetchRequestTopic, 0, len(r.Topics))
		for _, t := range r.Topics {
			if az.topic(kmsg.ACLOperationDescribe, t.Topic) {
				allowed.Topics = append(allowed.Topics, t)
			} else {
				denied = append(denied, t)
			}
		}
		r = &allowed
	}
	wait := b.groups.StartFetchOffsets(r)
	all := r.Topics == nil
	return func(ctx context.Context) *kmsg.OffsetFetchResponse {
		resp := wait(ctx)
		if all {
			kept := resp.Topics[:0]
			for _, t := range resp.Topics {
				if az.topic(kmsg.ACLOperationDescribe, t.Topic) {
					kept = append(kept, t)
				}
			}
			resp.Topics = kept
		}
		if resp.ErrorCode == 0 {
			resp.Topics = append(resp.Topics, offsetFetchRefused(denied, kerr.TopicAuthorizationFailed.Code)...)
		}
		return resp
	}
}

// offsetFetchRefused answers each partition of topics with code.
func offsetFetchRefused(topics []kmsg.OffsetFetchRequestTopic, code int16) []kmsg.OffsetFetchResponseTopic {
	var out []kmsg.OffsetFetchResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
