package broker

// ListGroups (key 16), versions 0–4 (flexible from v3; v4 filters by
// state). Each broker lists the groups it coordinates.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleListGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Groups, resp.ErrorCode = b.groups.List(r.StatesFilter)
	return reply(resp)
}
