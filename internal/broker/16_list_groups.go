package broker

// ListGroups (key 16), versions 0–4 (flexible from v3; v4 filters by
// state). Each broker lists the groups it coordinates; with an
// authorizer, all of them to a principal with DESCRIBE on the cluster,
// else only those it may DESCRIBE, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleListGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Groups, resp.ErrorCode = b.groups.List(r.StatesFilter)
	if az := b.authz(req); !az.cluster(kmsg.ACLOperationDescribe) {
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if az.group(kmsg.ACLOperationDescribe, g.Group) {
				kept = append(kept, g)
			}
		}
		resp.Groups = kept
	}
	return reply(resp)
}
